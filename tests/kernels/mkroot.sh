#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# mkroot.sh: build (once) a minimal Debian root for the guests with what the
# bats suite uses, from the machine's own Debian archive, and pack it as
# $KERNELS_CACHE/root.cpio (newc).  Prints the path of the cpio.  The root is
# rebuilt when the package list below changes, or with PMADVISE_KERNELS_ROOT=new.
. "$(dirname "$0")/common.sh"

# bash, bats and the tools the tests call; kmod and e2fsprogs for the guest's
# /init (modules, the scratch disk).  No valgrind: far too slow under TCG
# (its tests skip, naming it).
PACKAGES=(bash bats strace util-linux util-linux-extra libsmartcols1 python3
	jq procps kmod e2fsprogs mawk bash-completion bc)

command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
root=$KERNELS_CACHE/root
cpio=$KERNELS_CACHE/root.cpio
want="$ROOT_SUITE ${PACKAGES[*]}"
if [[ ${PMADVISE_KERNELS_ROOT:-} != new && -f $root/.pmadvise-root && -f $cpio &&
	$(cat "$root/.pmadvise-root") == "$want" ]]; then
	echo "$cpio"
	exit 0
fi

[[ $EUID -eq 0 ]] || die "debootstrap needs root"
mirror=$(mirror_uri main) || die "no Debian archive in this machine's apt configuration"
log "debootstrap $ROOT_SUITE from $mirror into $root"
rm -rf "$root.tmp"
mkdir -p "$KERNELS_CACHE/debootstrap-debs"
debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" \
	--cache-dir="$KERNELS_CACHE/debootstrap-debs" \
	"$ROOT_SUITE" "$root.tmp" "$mirror" >&2 || die "debootstrap failed (log: $root.tmp/debootstrap/debootstrap.log)"
# Slim it down: documentation and the apt lists are not needed in a guest.
rm -rf "$root.tmp"/usr/share/{doc,man,info,locale} "$root.tmp"/var/lib/apt/lists/* \
	"$root.tmp"/var/cache/apt/*.bin
echo "$want" >"$root.tmp/.pmadvise-root"
rm -rf "$root"
mv "$root.tmp" "$root"
(cd "$root" && find . -xdev -path ./proc -prune -o -print0 | cpio --null -o -H newc --quiet) >"$cpio.tmp"
mv "$cpio.tmp" "$cpio"
echo "$cpio"
