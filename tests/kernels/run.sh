#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh --table [LEG...]: print the table of the latest results again,
# recounted from their TAP files (after files were run again separately).
# run.sh [LEG...]: run the bats suite on Debian's kernels under qemu (TCG) and
# on this machine's kernel, and print a table kernel x (passed, failed,
# skipped, seconds).  LEGs: 5.10 6.1 6.12 native (default: all of them).
# 'make check-kernels' runs it; 'make check-kernels KERNELS="6.1"' picks legs.
#
# Environment (make check-kernels sets the first three):
#   PMADVISE, HELPERS, TESTS_SRCDIR   as for 'make check'
#   BATS_FILES                 the .bats files to run, relative to tests/
#                              (default: every tests/*.bats)
#   PMADVISE_KERNELS_CACHE     downloads, the guest root and the results
#                              (default ${XDG_CACHE_HOME:-~/.cache}/pmadvise-kernels)
#   PMADVISE_KERNELS_TIMEOUT   seconds a guest may run (default 5400)
#   PMADVISE_KERNELS_MEMORY    guest memory (default 4G)
#   PMADVISE_KERNELS_KEEP=1    keep the results of the files this run does
#                              not run (to run a few files again)
#   PMADVISE_KERNELS_NATIVE_SKIP  .bats files the native leg leaves out (for
#                              a shared machine: 90-ksm.bats changes global
#                              KSM settings); the guests run them all
#
# Results of the latest run of each leg stay in $KERNELS_CACHE/results/LEG:
# one TAP file per .bats file, features.tsv (features.sh), console.log,
# summary ("RELEASE PASSED FAILED SKIPPED SECONDS").  support-table.sh makes
# the README table from them.  Exit status 0 when no test failed anywhere.
. "$(dirname "$0")/common.sh"

SRCDIR=$(cd "$KERNELS_DIR/../.." && pwd)
: "${TESTS_SRCDIR:=$SRCDIR/tests}"
: "${PMADVISE:=$SRCDIR/pmadvise}"
: "${HELPERS:=$SRCDIR/tests/helpers}"
[[ -x $PMADVISE ]] || die "$PMADVISE is not built (make)"
[[ -x $HELPERS/maptarget ]] || die "$HELPERS/maptarget is not built (make tests/helpers/maptarget)"
if [[ -z ${BATS_FILES:-} ]]; then
	BATS_FILES=$(cd "$TESTS_SRCDIR" && ls -- *.bats)
fi
BATS_FILES=$(for f in $BATS_FILES; do basename "$f"; done | tr '\n' ' ')
TIMEOUT=${PMADVISE_KERNELS_TIMEOUT:-5400}
MEMORY=${PMADVISE_KERNELS_MEMORY:-4G}
TABLE_ONLY=0
if [[ ${1:-} == --table ]]; then
	TABLE_ONLY=1
	shift
fi
LEGS=("$@")
[[ ${#LEGS[@]} -gt 0 ]] || LEGS=("${KERNEL_SERIES[@]}" native)
RESULTS=$KERNELS_CACHE/results

# count_tap FILE...: "PASSED FAILED SKIPPED" of TAP files.  A file whose plan
# does not match its test lines counts the missing tests as failed.
count_tap() {
	awk '
		FNR == 1 { if (NR > 1) close_file() ; planned = -1; seen = 0 }
		/^1\.\.[0-9]+/ { planned = substr($1, 4) + 0 }
		/^ok / { seen++; if ($0 ~ /# [Ss][Kk][Ii][Pp]/) skipped++; else passed++ }
		/^not ok / { seen++; failed++ }
		function close_file() { if (planned < 0) failed++; else if (seen < planned) failed += planned - seen }
		END { if (NR > 0) close_file(); printf "%d %d %d\n", passed, failed, skipped }
	' "$@"
}

# split_serial LOG DIR: the guest's marker-delimited serial output into
# DIR/tap/FILE.tap, DIR/features.tsv; prints the kernel release.  A file
# without its end marker gets a "not ok" line saying so.
split_serial() {
	local log=$1 dir=$2 line cur= release=
	mkdir -p "$dir/tap"
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		'@@ uname '*) release=${line#@@ uname } ;;
		'@@ features') cur=$dir/features.tsv; : >"$cur" ;;
		'@@ begin '*) cur=$dir/tap/${line#@@ begin }.tap; : >"$cur" ;;
		'@@ end features') cur= ;;
		'@@ end '*)
			cur=
			set -- ${line#@@ end }
			{ grep -v "^$1 " "$dir/times" 2>/dev/null || true; echo "$1 $3"; } >"$dir/times.new"
			mv "$dir/times.new" "$dir/times"
			;;
		'@@ '*) echo "$line" >&2 ;;
		*) [[ -z $cur ]] || printf '%s\n' "$line" >>"$cur" ;;
		esac
	done <"$log"
	if [[ -n $cur && $cur == *.tap ]]; then
		printf 'not ok 999 %s stopped before its end (guest timeout or crash)\n' \
			"$(basename "$cur" .tap)" >>"$cur"
	fi
	echo "$release"
}

# stage_payload DIR KDIR: the files the guest needs on top of the root:
# /init, the source tree's tests and docs, the built binaries, and the
# modules of the scratch disk from the kernel package in KDIR.
stage_payload() {
	local stage=$1 kdir=$2 release mod
	release=$(awk '{ print $1 }' "$kdir/release")
	mkdir -p "$stage/pmadvise/build/tests/helpers" "$stage/usr/lib/modules"
	install -m 755 "$KERNELS_DIR/guest-init" "$stage/init"
	tar -C "$SRCDIR" --exclude=.git --exclude=autom4te.cache --exclude='build-*' \
		--exclude='*.o' --exclude='*.log' --exclude='*.trs' --exclude=pmadvise-[0-9]* \
		-cf - tests bash-completion man README.md $(cd "$SRCDIR" && ls pmadvise.1 Makefile.am configure.ac 2>/dev/null) |
		(mkdir -p "$stage/pmadvise/src" && tar -C "$stage/pmadvise/src" -xf -)
	cp "$PMADVISE" "$stage/pmadvise/build/pmadvise"
	# every helper program that is built (maptarget and the others)
	find "$HELPERS" -maxdepth 1 -type f -perm -u+x -exec cp {} "$stage/pmadvise/build/tests/helpers/" \;
	printf 'BATS_FILES="%s"\n' "$BATS_FILES" >"$stage/pmadvise/env"
	# the scratch disk: virtio PCI, virtio block, ext4, and what they need
	mkdir -p "$stage/usr/lib/modules/$release"
	cp "$kdir/lib/modules/$release"/modules.* "$stage/usr/lib/modules/$release/"
	modprobe -d "$kdir" -S "$release" --show-depends -a virtio_pci virtio_blk ext4 |
		awk '$1 == "insmod" { print $2 }' | sort -u |
		while read -r mod; do
			mkdir -p "$stage/usr/${mod#"$kdir"/}"
			rmdir "$stage/usr/${mod#"$kdir"/}"
			cp "$mod" "$stage/usr/${mod#"$kdir"/}"
		done
}

# run_guest SERIES: one qemu leg.
run_guest() {
	local series=$1 kdir work rc=0 start release
	kdir=$("$KERNELS_DIR/fetch-kernel.sh" "$series") || return 1
	root_cpio=$("$KERNELS_DIR/mkroot.sh") || return 1
	work=$KERNELS_CACHE/work/$series
	rm -rf "$work"
	[[ ${PMADVISE_KERNELS_KEEP:-0} == 1 ]] || rm -rf "$RESULTS/$series"
	mkdir -p "$work/stage" "$RESULTS/$series"
	stage_payload "$work/stage" "$kdir"
	(cd "$work/stage" && find . -print0 | cpio --null -o -H newc --quiet) >"$work/payload.cpio"
	cat "$root_cpio" "$work/payload.cpio" >"$work/initrd.cpio"
	truncate -s 4G "$work/scratch.img"
	mkfs.ext4 -q -F "$work/scratch.img"
	log "booting $(cat "$kdir/release") under qemu (TCG); console: $RESULTS/$series/console.log"
	start=$(date +%s)
	timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp 2 -m "$MEMORY" \
		-nodefaults -display none -no-reboot \
		-kernel "$kdir/vmlinuz" -initrd "$work/initrd.cpio" \
		-append "console=ttyS0 quiet panic=-1 rdinit=/init" \
		-drive "file=$work/scratch.img,format=raw,if=virtio,cache=unsafe" \
		-serial "file:$RESULTS/$series/console.log" \
		-serial "file:$work/serial.log" </dev/null || rc=$?
	[[ $rc -ne 124 ]] || log "$series: no power-off after $TIMEOUT s: stopped"
	cp "$kdir/release" "$RESULTS/$series/package"
	release=$(split_serial "$work/serial.log" "$RESULTS/$series")
	finish_leg "$series" "${release:-?}" "$start"
	rm -f "$work/scratch.img" "$work/initrd.cpio"
}

# run_native: the same on the running kernel.
run_native() {
	local dir=$RESULTS/native file start t
	[[ ${PMADVISE_KERNELS_KEEP:-0} == 1 ]] || rm -rf "$dir"
	rm -f "$dir/left-out"
	mkdir -p "$dir/tap"
	start=$(date +%s)
	PMADVISE=$PMADVISE HELPERS=$HELPERS bash "$KERNELS_DIR/features.sh" >"$dir/features.tsv" 2>&1
	for file in $BATS_FILES; do
		if [[ " ${PMADVISE_KERNELS_NATIVE_SKIP:-} " == *" $file "* ]]; then
			log "native: $file left out (PMADVISE_KERNELS_NATIVE_SKIP)"
			echo "$file" >>"$dir/left-out"
			continue
		fi
		log "native: $file"
		t=$(date +%s)
		(cd "$SRCDIR" && PMADVISE=$PMADVISE HELPERS=$HELPERS TESTS_SRCDIR=$TESTS_SRCDIR \
			bats --tap "$TESTS_SRCDIR/$file" >"$dir/tap/$file.tap" 2>>"$dir/console.log") || true
		{ grep -v "^$file " "$dir/times" 2>/dev/null || true; echo "$file $(($(date +%s) - t))"; } >"$dir/times.new"
		mv "$dir/times.new" "$dir/times"
	done
	finish_leg native "$(uname -r)" "$start"
}

finish_leg() {
	local leg=$1 release=$2 start=$3 counts
	shopt -s nullglob
	local taps=("$RESULTS/$leg"/tap/*.tap)
	if [[ ${#taps[@]} -eq 0 ]]; then
		counts="0 1 0"
	else
		counts=$(count_tap "${taps[@]}")
	fi
	# seconds: the leg's wall time; with PMADVISE_KERNELS_KEEP, the sum of
	# the latest time of each file instead (boot not counted)
	local seconds=$(($(date +%s) - start))
	if [[ ${PMADVISE_KERNELS_KEEP:-0} == 1 && -f $RESULTS/$leg/times ]]; then
		seconds=$(awk '{ s += $2 } END { print s + 0 }' "$RESULTS/$leg/times")
	fi
	echo "$release $counts $seconds" >"$RESULTS/$leg/summary"
	# the failures, for the log
	grep -H '^not ok' "${taps[@]}" 2>/dev/null | sed "s|^$RESULTS/||" >&2 || true
}

mkdir -p "$RESULTS"
for leg in "${LEGS[@]}"; do
	if [[ $TABLE_ONLY == 1 ]]; then
		[[ -d $RESULTS/$leg/tap ]] || continue
		read -r release _ <"$RESULTS/$leg/summary" || release=?
		PMADVISE_KERNELS_KEEP=1 finish_leg "$leg" "$release" "$(date +%s)" 2>/dev/null
		continue
	fi
	case $leg in
	native) run_native ;;
	*) [[ -n ${KERNEL_DEBIAN[$leg]:-} ]] || die "unknown leg '$leg' (legs: ${KERNEL_SERIES[*]} native)"
		run_guest "$leg" ;;
	esac
done

status=0
printf '%-8s %-28s %7s %7s %8s %8s\n' LEG KERNEL PASSED FAILED SKIPPED SECONDS
for leg in "${LEGS[@]}"; do
	read -r release passed failed skipped seconds <"$RESULTS/$leg/summary" ||
		{ release=? passed=0 failed=1 skipped=0 seconds=0; }
	printf '%-8s %-28s %7d %7d %8d %8d\n' "$leg" "$release" "$passed" "$failed" "$skipped" "$seconds"
	[[ $failed -eq 0 && $passed -gt 0 ]] || status=1
	[[ ! -s $RESULTS/$leg/left-out ]] ||
		printf '%-8s left out: %s\n' "" "$(paste -sd ' ' "$RESULTS/$leg/left-out")"
done
exit "$status"
