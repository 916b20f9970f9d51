#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# features.sh: what pmadvise finds on the running kernel, one
# "FEATURE<TAB>RESULT" line each, for the "Kernel support" table of the
# README (support-table.sh).  RESULT is "ok", "fallback: ...", or
# "exit N: MESSAGE" as pmadvise printed it.  Runs inside the test guests and
# natively; needs root, $PMADVISE and $HELPERS.
set -u
: "${PMADVISE:?}" "${HELPERS:?}"
dir=$(mktemp -d)
target=

cleanup() {
	[ -z "$target" ] || kill "$target" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

start() {
	"$HELPERS/maptarget" -d "$dir" "$@" >"$dir/out" 2>"$dir/err" &
	target=$!
	for ((i = 0; i < 200; i++)); do
		grep -qx ready "$dir/out" && return 0
		sleep 0.05
	done
	return 1
}
region() { awk -v l="$1" '$1 == l { print $2 "-" $3; exit }' "$dir/out"; }

# result FEATURE COMMAND...: run it, print the line.
result() {
	local name=$1 rc msg
	shift
	msg=$("$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		printf '%s\tok\n' "$name"
	else
		printf '%s\texit %d: %s\n' "$name" "$rc" "$(head -1 <<<"$msg" | sed "s/PID [0-9]*/PID N/")"
	fi
}

printf 'kernel\t%s\n' "$(uname -r)"
start anon=1M file=1M aligned=4M || { printf 'error\tmaptarget did not start\n'; exit 1; }
result cold "$PMADVISE" -q -p "$target" cold "$(region anon)"
result pageout "$PMADVISE" -q -p "$target" pageout "$(region file)"
result willneed "$PMADVISE" -q -p "$target" willneed "$(region file)"
result collapse "$PMADVISE" -q -p "$target" collapse "$(region aligned)"
result "rules: cold and willneed in one run" "$PMADVISE" -q -p "$target" -R anon=cold -R file=willneed
result "remote mergeable" "$PMADVISE" -q -p "$target" mergeable "$(region anon)"

# Measurement: did pmadvise's PAGEMAP_SCAN ioctl succeed, or did it read
# pagemap entries instead?
scan='(PAGEMAP_SCAN|_IOC\(_IOC_READ\|_IOC_WRITE, 0x66, 0x10, )'
if strace -f -qq -e trace=ioctl -o "$dir/trace" "$PMADVISE" -p "$target" \
	-o START,RSS,RSS-AFTER cold "$(region anon)" >/dev/null 2>&1; then
	if ! grep -qE "$scan" "$dir/trace"; then
		printf 'measurement\tfallback: pagemap entries (no PAGEMAP_SCAN call seen)\n'
	elif grep -E "$scan" "$dir/trace" | grep -q '= -1'; then
		printf 'measurement\tfallback: pagemap entries (PAGEMAP_SCAN: %s)\n' \
			"$(grep -E "$scan" "$dir/trace" | grep -o '= -1 E[A-Z]*' | head -1 | cut -c6-)"
	else
		printf 'measurement\tok\n'
	fi
else
	printf 'measurement\texit %d\n' "$?"
fi

result "--ksm-status" "$PMADVISE" --ksm-status -p "$target"
kill "$target"
wait "$target" 2>/dev/null
target=

# Launcher: prctl(PR_SET_MEMORY_MERGE), then is the flag still there after exec?
result "launcher" "$PMADVISE" mergeable -- true
if "$PMADVISE" mergeable -- true 2>/dev/null; then
	if [ -r /proc/self/ksm_stat ] && grep -q ksm_merge_any /proc/self/ksm_stat; then
		if "$PMADVISE" mergeable -- cat /proc/self/ksm_stat 2>/dev/null | grep -qx 'ksm_merge_any: yes'; then
			printf 'launcher: flag kept across exec\tok\n'
		else
			printf 'launcher: flag kept across exec\tlost at exec\n'
		fi
	elif "$PMADVISE" mergeable -- grep -qE '^VmFlags:.* mg( |$)' /proc/self/smaps 2>/dev/null; then
		# no ksm_merge_any in ksm_stat (6.12): the flag marks the mappings VM_MERGEABLE
		printf 'launcher: flag kept across exec\tok\n'
	else
		printf 'launcher: flag kept across exec\tlost at exec\n'
	fi
fi

# Who may advise: an unprivileged user advising its own process without CAP_SYS_NICE.
nobody=65534
mkdir -p "$dir/nobody"
cp "$PMADVISE" "$HELPERS/maptarget" "$dir/nobody/"
chmod 777 "$dir" "$dir/nobody"
setpriv --reuid=$nobody --regid=$nobody --clear-groups "$dir/nobody/maptarget" -d "$dir/nobody" anon=64K \
	>"$dir/out" 2>/dev/null &
target=$!
for ((i = 0; i < 200; i++)); do
	grep -qx ready "$dir/out" && break
	sleep 0.05
done
result "own process, no CAP_SYS_NICE" setpriv --reuid=$nobody --regid=$nobody --clear-groups \
	--inh-caps=-all "$dir/nobody/pmadvise" -q -p "$target" cold "$(region anon)"
