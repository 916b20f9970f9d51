#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# support-table.sh [--update README.md]: the "Kernel support" table of the
# README, made from the latest results of each leg of run.sh
# ($KERNELS_CACHE/results/LEG/features.tsv and summary).  Prints it, or with
# --update replaces the table between the kernel-support marker comments of
# the given file.
. "$(dirname "$0")/common.sh"

RESULTS=$KERNELS_CACHE/results
LEGS=("${KERNEL_SERIES[@]}" native)
FEATURES=(cold pageout willneed collapse "rules: cold and willneed in one run" "remote mergeable" measurement "--ksm-status"
	launcher "launcher: flag kept across exec" "own process, no CAP_SYS_NICE")

declare -A what=(
	[cold]='`cold` on another process'
	[pageout]='`pageout` on another process'
	[willneed]='`willneed` on another process'
	[collapse]='`collapse` on another process'
	["rules: cold and willneed in one run"]='`-R anon=cold -R file=willneed`'
	["remote mergeable"]='`mergeable` on another process'
	[measurement]='measurement columns (RSS, HUGE, SWAP...)'
	["--ksm-status"]='`--ksm-status`'
	[launcher]='launcher `pmadvise mergeable -- COMMAND`'
	["launcher: flag kept across exec"]='launcher: KSM flag kept across exec'
	["own process, no CAP_SYS_NICE"]='unprivileged user, own process, no CAP_SYS_NICE'
)

# cell TEXT: a features.tsv result as a table cell.
cell() {
	local text=$1
	text=${text//|/\\|}
	case $text in
	ok) echo "✓" ;;
	"") echo "–" ;;
	exit*) sed -E 's/: pmadvise: (PID N: )?/: /; s/\. [A-Z].*//' <<<"$text" ;;
	*) echo "$text" ;;
	esac
}

table() {
	local leg feature header sep row release p f s secs
	header="| | "
	sep="| --- | "
	for leg in "${LEGS[@]}"; do
		release=?
		[[ ! -f $RESULTS/$leg/summary ]] || read -r release _ <"$RESULTS/$leg/summary"
		case $leg in
		native) header+="this machine: $release | " ;;
		*) header+="$leg (${KERNEL_DEBIAN[$leg]}: $release$(awk '{ print ", " $3 }' "$RESULTS/$leg/package" 2>/dev/null || true)) | " ;;
		esac
		sep+="--- | "
	done
	echo "${header% }"
	echo "${sep% }"
	for feature in "${FEATURES[@]}"; do
		row="| ${what[$feature]} | "
		for leg in "${LEGS[@]}"; do
			row+="$(cell "$(awk -F '\t' -v f="$feature" '$1 == f { print $2; exit }' \
				"$RESULTS/$leg/features.tsv" 2>/dev/null || true)") | "
		done
		echo "${row% }"
	done
	row="| bats suite (passed, failed, skipped; minutes) | "
	for leg in "${LEGS[@]}"; do
		if read -r release p f s secs 2>/dev/null <"$RESULTS/$leg/summary"; then
			row+="$p, $f, $s; $(((secs + 30) / 60))"
			[[ ! -s $RESULTS/$leg/left-out ]] ||
				row+=" (without $(paste -sd ' ' "$RESULTS/$leg/left-out"))"
			row+=" | "
		else
			row+="not run | "
		fi
	done
	echo "${row% }"
}

case ${1:-} in
--update)
	file=${2:?usage: support-table.sh [--update FILE]}
	grep -q '^<!-- kernel-support:begin' "$file" || die "$file has no <!-- kernel-support:begin --> line"
	table >"$file.table"
	awk -v tf="$file.table" '
		/^<!-- kernel-support:begin/ { print; while ((getline l < tf) > 0) print l; skip = 1; next }
		/^<!-- kernel-support:end/ { skip = 0 }
		!skip' "$file" >"$file.new"
	rm -f "$file.table"
	mv "$file.new" "$file"
	;;
"") table ;;
*) die "usage: support-table.sh [--update FILE]" ;;
esac
