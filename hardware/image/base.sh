#!/bin/sh
# The image's base OS, run in its chroot (arm64 Debian, under qemu-user) at the end of
# mmdebstrap by hardware/image/build.py: what the installer needs that Debian lacks, and
# nothing at boot that the unit does not need. Cached
# by build.py under a key of its inputs; the firmware goes in afterwards (firmware.sh).
set -eu
export DEBIAN_FRONTEND=noninteractive
KVER=$(ls /lib/modules)

# python3-lgpio, Raspberry Pi OS's package, which Debian lacks (lgpio.sh), installed here
# and kept in the local repository the installer's apt reads (firmware.sh).
sh /tmp/lgpio.sh /opt/cityunit-image/wheels /opt/cityunit-image/apt
dpkg -i /opt/cityunit-image/apt/python3-lgpio_*.deb >/dev/null
(cd /opt/cityunit-image/apt && apt-ftparchive packages . > Packages)

# The build tools go: the image has none. What the installer asks apt for stays (it runs
# offline in firmware.sh: apt finds it installed), whatever it depends on.
# shellcheck disable=SC2046 # the names, one word each
apt-mark -qq manual $(cat /opt/cityunit-image/installer-packages)
apt-get purge -y -q --autoremove gcc make libc6-dev python3-dev swig apt-utils >/dev/null

echo cityunit > /etc/hostname
printf '127.0.1.1\tcityunit\n' >> /etc/hosts
# No password login: root's is locked, and there is no other user with one.
passwd -q -l root
mkdir -p /media/root-ro /media/root-rw /boot/firmware

# Nothing at boot that the unit does not need: no network until a first-boot file asks
# for Wi-Fi (cityunit-firstboot), no login on the serial console or the screen, no
# timers that write to the card, ssh only when a first-boot file gives a key.
systemctl disable -q ssh.service ssh.socket 2>/dev/null || true
systemctl mask -q apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
    e2scrub_reap.service fstrim.timer man-db.timer dpkg-db-backup.timer \
    systemd-networkd-wait-online.service getty@.service serial-getty@.service \
    wpa_supplicant.service 2>/dev/null

# The boot was set up as Debian's packages went in (build.py put boot/ in first): the
# firmware's config.txt and cmdline.txt as raspi-firmware makes them (again at each kernel
# update) from /etc/default, and the initramfs with the read-only root's layer
# (cityunit-overlay) and only the modules it needs.

dpkg-query -W -f='${Package} ${Version}\n' > /opt/cityunit-image/manifest.txt
echo "kernel $KVER" >> /opt/cityunit-image/manifest.txt
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
