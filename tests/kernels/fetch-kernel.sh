#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fetch-kernel.sh SERIES: download the newest Debian linux-image package of
# SERIES (5.10, 6.1, 6.12: see KERNEL_SERIES in common.sh) for amd64, unpack
# it under $KERNELS_CACHE/kernels/SERIES, index its modules (depmod), and
# print that directory.  It holds vmlinuz, lib/modules/RELEASE and a file
# "release" with RELEASE, the package version and the suite it came from
# (the newest version of the series in any of the suites of common.sh).  A package already
# downloaded and unpacked is reused.
. "$(dirname "$0")/common.sh"

series=${1:?usage: fetch-kernel.sh SERIES}
[[ -n ${KERNEL_DEBIAN[$series]:-} ]] || die "unknown kernel series '$series' (known: ${KERNEL_SERIES[*]})"
kapt_setup
kapt_update

# linux-image-5.10.0-46-amd64, linux-image-6.12.118+deb12-amd64: the generic
# flavour (not cloud or rt), signed or not, newest ABI first.
re="^linux-image-${series//./\\.}(\\.[0-9]+)?(-[0-9]+|\\+[a-z0-9]+)-amd64\$"
pkg=$(kapt apt-cache pkgnames linux-image- | grep -E "$re" | sort -V | tail -1) ||
	die "no linux-image package of $series in the package lists"
[[ -n $pkg ]] || die "no linux-image package of $series in the package lists"
version=$(kapt apt-cache show --no-all-versions "$pkg" | awk '$1 == "Version:" { print $2; exit }')
release=${pkg#linux-image-}
suite=$(kapt apt-cache madison "$pkg" | awk -F ' *[|] *' -v v="$version" '$2 == v { split($3, a, " "); split(a[2], b, "/"); print b[1]; exit }')

out=$KERNELS_CACHE/kernels/$series
if [[ -f $out/release && $(cat "$out/release") == "$release $version ${suite:-?}" ]]; then
	echo "$out"
	exit 0
fi

debs=$KERNELS_CACHE/debs
mkdir -p "$debs"
deb=$(find "$debs" -maxdepth 1 -name "${pkg}_${version//:/%3a}_amd64.deb" -print -quit)
if [[ -z $deb ]]; then
	log "downloading $pkg $version"
	(cd "$debs" && kapt apt-get -q download "$pkg=$version" >&2) || die "apt-get download $pkg failed"
	deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*_amd64.deb" -newer "$KERNELS_CACHE/apt/apt.conf" -print -quit)
	[[ -n $deb ]] || deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*_amd64.deb" -print -quit)
	[[ -n $deb ]] || die "apt-get download $pkg left no .deb in $debs"
fi

log "unpacking $(basename "$deb")"
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
dpkg-deb -x "$deb" "$out.tmp/pkg"
mv "$out.tmp/pkg/boot/vmlinuz-$release" "$out.tmp/vmlinuz"
mkdir -p "$out.tmp/lib/modules"
mv "$out.tmp/pkg/lib/modules/$release" "$out.tmp/lib/modules/"
[[ -f $out.tmp/pkg/boot/config-$release ]] && mv "$out.tmp/pkg/boot/config-$release" "$out.tmp/config"
rm -rf "$out.tmp/pkg"
depmod -b "$out.tmp" "$release"
echo "$release $version ${suite:-?}" >"$out.tmp/release"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
