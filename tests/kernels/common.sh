# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the tests/kernels scripts (sourced, not run).
#
# Everything downloaded or built lives in $KERNELS_CACHE, outside the source
# tree, and is reused by the next run:
#   apt/       a private apt configuration and its package lists
#   debs/      the downloaded .deb files
#   kernels/   one directory per kernel series: the unpacked linux-image
#   root/      the debootstrapped guest root, and root.cpio made from it
# Package sources are the machine's own: the archive URI comes from the apt
# configuration at run time (see mirror_uri), never from this file.

set -euo pipefail

KERNELS_CACHE=${PMADVISE_KERNELS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pmadvise-kernels}
KERNELS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The kernel series the matrix boots, and the Debian release that ships
# each (6.12: in bookworm-backports, and lately in bookworm-security too).
declare -A KERNEL_DEBIAN=([5.10]="Debian 11" [6.1]="Debian 12" [6.12]="Debian 12")
KERNEL_SERIES=(5.10 6.1 6.12)
# The guest root: the same release as the build machine's, so that the
# pmadvise built here runs there.
ROOT_SUITE=${PMADVISE_KERNELS_ROOT_SUITE:-bookworm}

log() { printf 'kernels: %s\n' "$*" >&2; }
die() { printf 'kernels: %s\n' "$*" >&2; exit 1; }

# mirror_uri [security]: the URI of the Debian archive (or of its security
# archive) that this machine's apt configuration uses.
mirror_uri() {
	local want=${1:-main} uri release
	while read -r uri release; do
		case $want:$release in
		security:*-security | main:*[a-z]) ;;
		*) continue ;;
		esac
		[[ $want == main && $release == *-* ]] && continue
		echo "${uri%/}"
		return 0
	done < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
		'Identifier: Packages' 2>/dev/null | sort -u)
	return 1
}

# kapt COMMAND...: apt-get/apt-cache with the private configuration in
# $KERNELS_CACHE/apt (created on first use): the machine's archive with the
# suites of every kernel series, and the machine's own apt settings (proxy,
# validity checks) for everything else.
kapt_setup() {
	local dir=$KERNELS_CACHE/apt main security suite keyring
	main=$(mirror_uri main) || die "no Debian archive in this machine's apt configuration"
	security=$(mirror_uri security) || security=
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[[ -r $keyring ]] || die "$keyring is missing (apt-get install debian-archive-keyring)"
	mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/etc"
	: >"$dir/status"
	{
		for suite in bullseye bookworm bookworm-backports; do
			echo "deb [signed-by=$keyring] $main $suite main"
		done
		if [[ -n $security ]]; then
			for suite in bullseye-security bookworm-security; do
				echo "deb [signed-by=$keyring] $security $suite main"
			done
		fi
	} >"$dir/etc/sources.list.new"
	if ! cmp -s "$dir/etc/sources.list.new" "$dir/etc/sources.list"; then
		mv "$dir/etc/sources.list.new" "$dir/etc/sources.list"
		rm -f "$dir/updated"
	else
		rm -f "$dir/etc/sources.list.new"
	fi
	cat >"$dir/apt.conf" <<-EOF
		Dir::State "$dir";
		Dir::State::Lists "$dir/lists";
		Dir::State::status "$dir/status";
		Dir::Cache "$dir";
		Dir::Cache::archives "$dir/archives";
		Dir::Etc::SourceList "$dir/etc/sources.list";
		Dir::Etc::SourceParts "$dir/etc/none";
		APT::Architecture "amd64";
		APT::Architectures { "amd64"; };
	EOF
	# root downloads into a directory the _apt user cannot write to
	[[ $EUID -ne 0 ]] || echo 'APT::Sandbox::User "root";' >>"$dir/apt.conf"
}

kapt() {
	APT_CONFIG=$KERNELS_CACHE/apt/apt.conf "$@"
}

# kapt_update: refresh the private package lists once a day at most
# (PMADVISE_KERNELS_UPDATE=1 forces it).
kapt_update() {
	local stamp=$KERNELS_CACHE/apt/updated
	if [[ ${PMADVISE_KERNELS_UPDATE:-0} == 1 || ! -e $stamp ||
		-n $(find "$stamp" -mmin +1440) ]]; then
		log "updating the package lists of $(mirror_uri main)"
		kapt apt-get -q update >&2 || die "apt-get update failed"
		touch "$stamp"
	fi
}
