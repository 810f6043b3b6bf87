#!/bin/sh
# The firmware on the image's base, installed as on a Pi: systemd/install.py, unmodified,
# run in the image's chroot by hardware/image/build.py, offline (apt reads the base's
# local repository, pip the wheelhouse). Then what differs on the image: the config on
# the boot partition, and the installer's config.txt lines in Debian's form.
set -eu
export DEBIAN_FRONTEND=noninteractive
# systemctl as in a chroot (no systemd runs here): enable works, reload and restart wait.
export SYSTEMD_OFFLINE=1
SOURCES=/etc/apt/sources.list.d
mkdir -p /tmp/sources && mv "$SOURCES"/* /tmp/sources/ 2>/dev/null || true
mv /etc/apt/sources.list /tmp/sources/sources.list 2>/dev/null || true
echo 'deb [trusted=yes] file:/opt/cityunit-image/apt ./' > "$SOURCES/cityunit-build.list"

# The devices' groups, as Raspberry Pi OS has them (rules.d/99-cityunit.rules), and the
# image's own services (rootfs/): the data partition, the settings on the card. The host
# keys that installing SSH made go (every card would share them): cityunit-sysconf makes
# the card's own, when asked.
for group in gpio i2c spi; do groupadd --system --force "$group"; done
systemctl enable -q cityunit-card.service cityunit-sysconf.service
systemctl mask -q sshd-keygen.service
# Foreign executables (binfmt_misc) are nothing a card runs, and the unit's start waited
# for them: systemd-binfmt was the last of sysinit.target on its critical chain (2.8 s of
# an emulated boot; tests/image's timed boot prints the chain).
systemctl mask -q systemd-binfmt.service proc-sys-fs-binfmt_misc.automount
rm -f /etc/ssh/ssh_host_*

PIP_NO_INDEX=1 PIP_FIND_LINKS=/opt/cityunit-image/wheels python3 /usr/src/cityunit/systemd/install.py

# The players' page on: the card's unit is on Wi-Fi once sysconf.txt names it, and every
# phone on it then follows the game. Its network, LAN addresses only, as the installer
# gives it when the config turns the page on.
sed -i 's/^enabled = false /enabled = true  /' /etc/cityunit/config.toml
grep -q '^enabled = true ' /etc/cityunit/config.toml
install -D -m 644 /usr/src/cityunit/systemd/web.conf /etc/systemd/system/cityunit.service.d/web.conf

# The config on the boot partition (FAT), for any computer to edit; the unit reads it
# through the path the installer gave it.
mv /etc/cityunit/config.toml /boot/firmware/cityunit.toml
ln -s /boot/firmware/cityunit.toml /etc/cityunit/config.toml
rm -f /etc/cityunit/config.toml.new
# As flashed: cityunit-card puts the player's own back over it after a re-flash.
cp /boot/firmware/cityunit.toml /opt/cityunit-image/cityunit.toml
# The first light of a unit not started yet, for that config as flashed (the installer's
# was for the config before the edits above): cityunit-card gives it to a new card's
# state, so that its very first boot lights the glass at once (service/first_light.py).
rm -rf /var/lib/cityunit
/opt/cityunit/venv/bin/cityunit run --config /etc/cityunit/config.toml \
    --keepsake /opt/cityunit-image/first-light

# The installer's config.txt lines (I2C at the config's speed, Raspberry Pi's pwm-2chan
# overlay on the config's pins) for Debian's firmware set-up, which writes config.txt
# anew from /etc/default/raspi-firmware-custom: the image's own overlay takes the same
# parameters (hardware/image/cityunit-overlay.dts).
CONFIG=/boot/firmware/config.txt
PWM=$(sed -n 's/^dtoverlay=pwm-2chan,//p' "$CONFIG" | tail -1)
SPEED=$(sed -n 's/^dtparam=i2c_arm_baudrate=//p' "$CONFIG" | tail -1)
[ -n "$PWM" ] && [ -n "$SPEED" ] || { echo "firmware.sh: no installer lines in $CONFIG" >&2; exit 1; }
sed -i "s/^dtoverlay=cityunit.*/dtoverlay=cityunit,$PWM,i2c_baudrate=$SPEED/" \
    /etc/default/raspi-firmware-custom
DEB_MAINT_PARAMS=configure /etc/kernel/postinst.d/z50-raspi-firmware
grep -qx "dtoverlay=cityunit,$PWM,i2c_baudrate=$SPEED" "$CONFIG"

rm "$SOURCES/cityunit-build.list"
mv /tmp/sources/sources.list /etc/apt/sources.list 2>/dev/null || true
mv /tmp/sources/* "$SOURCES"/ 2>/dev/null || true
rmdir /tmp/sources
/opt/cityunit/venv/bin/cityunit --version >> /opt/cityunit-image/manifest.txt
rm -rf /usr/src/cityunit /opt/cityunit-image/wheels /opt/cityunit-image/apt /var/lib/apt/lists/* /root/.cache

# The system as built is up to date: without these stamps (each boot's layer in RAM would
# start without them) systemd would run ldconfig, sysusers and the like at every boot.
for dir in /etc /var; do
	printf 'TIMESTAMP_NSEC=%s\n' "$(stat -c %.9Y /usr | tr -d .)" > "$dir/.updated"
done
