#!/bin/sh
# Runs inside the guest's root file system while tests/vm/guest_image.py builds it (a chroot of
# mmdebstrap's): the test devices against the guest's own kernel headers, the offline
# package sources the installer will use, and the Pi OS stand-ins' users and services.
set -eu
KVER=$(ls /lib/modules)
export DEBIAN_FRONTEND=noninteractive
cd /usr/src/vpi/modules

# gpio-sim and the interrupt simulator it needs, from the kernel's own source (Debian
# builds neither): the version that matches the installed kernel.
SOURCE_VERSION=$(dpkg-query -W -f='${Version}' "linux-image-$KVER")  # linux-signed's binary: the source's own version
SOURCE=linux-source-$(echo "$KVER" | cut -d. -f1,2)  # 6.1 (bookworm), 6.12 (trixie)
apt-get download -q "$SOURCE=$SOURCE_VERSION"
dpkg-deb --fsys-tarfile "${SOURCE}"_*.deb | tar -xO --wildcards "*/$SOURCE.tar.xz" \
    | tar -xJ --strip-components=1 "$SOURCE/drivers/gpio/gpio-sim.c" \
        "$SOURCE/drivers/gpio/gpiolib.h" "$SOURCE/kernel/irq/irq_sim.c"
mv drivers/gpio/gpio-sim.c sim-gpio.c
mv drivers/gpio/gpiolib.h gpiolib.h  # gpio-sim reaches into gpiolib's own header
mv kernel/irq/irq_sim.c irq_sim.c
rm -r drivers kernel "${SOURCE}"_*.deb
# irq_to_desc() is not exported to modules: hand the interrupt on by its number instead
# (generic_handle_irq is exported, and does the same lookup).
sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' irq_sim.c
grep -q 'generic_handle_irq(irqnum);' irq_sim.c
# A line's level is the wiring's, set from outside through sysfs `pull` (a switch or a
# button to GND, or the idle level of a pull-up): a program's bias request is accepted
# but does not move it, as a pull-up cannot lift a line that a closed switch holds low.
python3 - <<'PATCH'
from pathlib import Path
source = Path("sim-gpio.c")
text = source.read_text()
bias = """	case PIN_CONFIG_BIAS_PULL_UP:
		return gpio_sim_apply_pull(chip, offset, 1);
	case PIN_CONFIG_BIAS_PULL_DOWN:
		return gpio_sim_apply_pull(chip, offset, 0);
"""
assert bias in text, "gpio-sim's set_config is not as expected: check this patch"
source.write_text(text.replace(bias, """	case PIN_CONFIG_BIAS_PULL_UP:
	case PIN_CONFIG_BIAS_PULL_DOWN:
		return 0; /* the wiring decides the level (tests/vm) */
"""))
PATCH
make -s -C "/lib/modules/$KVER/build" M="$PWD" modules
install -D -m 644 -t "/lib/modules/$KVER/updates/vpi" ./*.ko
depmod "$KVER"

# Raspberry Pi OS has python3-lgpio; Debian has none: the card image's recipe for it
# (hardware/image/lgpio.sh), into the local repository the installer's apt reads.
sh /usr/src/vpi/lgpio.sh /opt/vpi/wheels /opt/vpi/apt

# The build tools go: a Pi has none (the installer's apt step brings what it needs).
apt-get purge -y -q --autoremove "linux-headers-$KVER" linux-headers-amd64 gcc make libc6-dev \
    python3-dev python3-pip python3-setuptools python3-wheel swig >/dev/null

# The installer's apt-get runs offline: a local repository with what it will ask for,
# and what that needs beyond what is installed (as on a Pi OS Lite image).
# shellcheck disable=SC2046 # the names, one word each
apt-get install -y -q --download-only $(cat /usr/src/vpi/apt-packages) >/dev/null
mv /var/cache/apt/archives/*.deb /opt/vpi/apt/
(cd /opt/vpi/apt && apt-ftparchive packages . > Packages)
rm -f /etc/apt/sources.list.d/*
echo 'deb [trusted=yes] file:/opt/vpi/apt ./' > /etc/apt/sources.list
apt-get update -q >/dev/null
printf '[global]\nno-index = true\nfind-links = /opt/vpi/wheels\n' > /etc/pip.conf

# Raspberry Pi OS's groups for the devices, and its first user, `pi`, in them.
for group in gpio i2c spi; do groupadd --system --force "$group"; done
useradd --create-home --shell /bin/bash --groups sudo,dialout,gpio,i2c,spi,adm pi
install -d -m 700 -o pi -g pi /home/pi/.ssh
install -m 600 -o pi -g pi /tmp/vpi_key.pub /home/pi/.ssh/authorized_keys
rm /tmp/vpi_key.pub
echo raspberrypi > /etc/hostname
printf '127.0.1.1\traspberrypi\n' >> /etc/hosts
echo '/dev/vda / ext4 defaults 0 1' > /etc/fstab

# Boot quickly, with nothing the test does not need.
systemctl enable -q systemd-networkd vpi-firmware.service
systemctl mask -q apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
    man-db.timer systemd-networkd-wait-online.service
dpkg-query -W -f='${Package} ${Version}\n' > /opt/vpi/manifest.txt
echo "kernel $KVER" >> /opt/vpi/manifest.txt
apt-get clean
rm -rf /usr/src/vpi
