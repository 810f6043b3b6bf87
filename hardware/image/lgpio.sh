#!/bin/sh
# python3-lgpio, Raspberry Pi OS's package, which Debian lacks: one of that name built in a
# Debian tree's chroot from lgpio's source on the Python package index, for that tree's
# own Python and architecture, its C library bundled as in the index's wheels (PYPI=1).
# The card image (base.sh) and the virtual Pi (tests/vm/guest/build.sh) both make it so.
#
#     sh lgpio.sh SOURCES APT     lgpio-*.tar.gz from SOURCES (removed), the .deb into APT
set -eu
SOURCES=$1
APT=$2
LGPIO_SOURCE=$(ls "$SOURCES"/lgpio-*.tar.gz)
PYPI=1 python3 -m pip wheel -q --no-deps --no-index --no-build-isolation --use-pep517 \
    -w /tmp/lgpio "$LGPIO_SOURCE"
rm "$LGPIO_SOURCE"
LGPIO_WHEEL=$(ls /tmp/lgpio/lgpio-*.whl)
PKG=/tmp/python3-lgpio
mkdir -p "$PKG/DEBIAN" "$PKG/usr/lib/python3/dist-packages" "$APT"
python3 -m zipfile -e "$LGPIO_WHEEL" "$PKG/usr/lib/python3/dist-packages"
cat > "$PKG/DEBIAN/control" <<CONTROL
Package: python3-lgpio
Version: $(basename "$LGPIO_WHEEL" | cut -d- -f2)-0cityunit1
Architecture: $(dpkg --print-architecture)
Maintainer: cityunit <nobody@invalid>
Depends: python3
Description: lgpio for Python 3 (as Raspberry Pi OS's package of that name)
 Built from lgpio's source on the Python package index, for cityunit's builds.
CONTROL
dpkg-deb --root-owner-group -b "$PKG" "$APT" >/dev/null
rm -r "$PKG" /tmp/lgpio
