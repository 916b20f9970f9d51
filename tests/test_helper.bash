# SPDX-License-Identifier: GPL-2.0-or-later
# Shared functions for the pmadvise bats suite; each .bats file does `load test_helper`.
#
# Environment (set by `make check`):
#   PMADVISE      absolute path of the pmadvise binary under test
#   HELPERS       absolute path of the built tests/helpers directory
#   TESTS_SRCDIR  absolute path of the tests source directory

: "${PMADVISE:?PMADVISE is not set; run the suite with make check}"
: "${HELPERS:?HELPERS is not set; run the suite with make check}"

TARGET_PIDS=()

# process_alive PID: true while PID exists and is not a zombie.
process_alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ -n "$state" ] && [ "$state" != Z ]
}

# start_target SPEC...
# Start "$HELPERS/maptarget" SPEC... in the background (its files go to
# $BATS_TEST_TMPDIR) and wait up to 10 s for its "ready" line. Sets TARGET_PID
# and TARGET_OUT (the file holding its "LABEL START END [PATH]" lines).
# Several targets may be started; region_* read the latest TARGET_OUT.
start_target() {
	local n=${#TARGET_PIDS[@]} i
	TARGET_OUT="$BATS_TEST_TMPDIR/target-$n.out"
	# Close fd 3 so that bats does not wait for the target to exit.
	"$HELPERS/maptarget" -d "$BATS_TEST_TMPDIR" "$@" >"$TARGET_OUT" 2>"$TARGET_OUT.err" 3>&- &
	TARGET_PID=$!
	TARGET_PIDS+=("$TARGET_PID")
	for ((i = 0; i < 200; i++)); do
		grep -qx ready "$TARGET_OUT" && return 0
		if ! process_alive "$TARGET_PID"; then
			echo "maptarget $* failed:" >&2
			cat "$TARGET_OUT.err" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "maptarget $* not ready after 10 s" >&2
	cat "$TARGET_OUT.err" >&2
	return 1
}

# require_vma_names: skip the test unless the kernel can name anonymous
# mappings (named= SPECs need CONFIG_ANON_VMA_NAME). Call before start_target.
require_vma_names() {
	start_target named=probe:4K 2>/dev/null ||
		skip "kernel cannot name anonymous mappings (CONFIG_ANON_VMA_NAME)"
	stop_targets
}

# region_field LABEL N: field N of the latest target's line for LABEL.
region_field() {
	local value
	value=$(awk -v label="$1" -v n="$2" '$1 == label { print $n; found = 1; exit }
		END { exit !found }' "$TARGET_OUT") || {
		echo "no region labelled '$1' in $TARGET_OUT" >&2
		return 1
	}
	echo "$value"
}

# region_start LABEL / region_end LABEL: hex address, no 0x (END exclusive).
region_start() { region_field "$1" 2; }
region_end() { region_field "$1" 3; }
# region_path LABEL: the file behind a file= or file-shared= region.
region_path() { region_field "$1" 4; }

# stop_targets: terminate every target started in this test (use in teardown).
stop_targets() {
	local pid i
	for pid in "${TARGET_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || continue
		for ((i = 0; i < 100; i++)); do
			process_alive "$pid" || break
			sleep 0.05
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	TARGET_PIDS=()
}

# smaps_field PID START FIELD: the kB value of FIELD (Rss, Referenced,
# AnonHugePages, Swap, Locked, KSM...) for the mapping of PID that starts at
# hex START (0x optional). Fails when there is no such mapping or field.
smaps_field() {
	local start=${2#0x}
	awk -v start="$start" -v field="$3:" '
		function norm(a) { a = tolower(a); sub(/^0+/, "", a); return a }
		/^[0-9a-f]+-[0-9a-f]+ / {
			if (inside) exit
			split($1, range, "-")
			inside = norm(range[1]) == norm(start)
			next
		}
		inside && $1 == field { print $2; found = 1; exit }
		END { exit !found }' "/proc/$1/smaps"
}

# count_madvise_calls COMMAND [ARG...]
# Run COMMAND under strace and print how many process_madvise calls it made.
# Returns COMMAND's exit status; its stdout and stderr go to
# $BATS_TEST_TMPDIR/cmd.out, the trace to $BATS_TEST_TMPDIR/strace.log.
# Typical use: run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" cold ...
count_madvise_calls() {
	local trace="$BATS_TEST_TMPDIR/strace.log" rc=0
	# LeakSanitizer cannot run under ptrace; keep sanitizer builds usable here.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=process_madvise -o "$trace" "$@" \
		>"$BATS_TEST_TMPDIR/cmd.out" 2>&1 || rc=$?
	grep -c 'process_madvise(' "$trace" || true
	return "$rc"
}

# count_ranged_madvise_calls: after count_madvise_calls, how many of the
# traced process_madvise calls carried at least one range (an iovec); the
# zero-length probe (vlen 0) does not count. 0 means nothing was advised.
count_ranged_madvise_calls() {
	grep -c 'process_madvise([0-9]*, \[{' "$BATS_TEST_TMPDIR/strace.log" || true
}

# start_target_cmd COMMAND [ARG...]
# Like start_target, for a command line that ends up exec()ing maptarget in
# the same process, such as a launcher:
#   start_target_cmd "$PMADVISE" mergeable -- "$HELPERS/maptarget" same=64M
# Waits up to 10 s for "ready", checks that the process became maptarget, and
# sets TARGET_PID and TARGET_OUT as start_target does (stop_targets ends it).
start_target_cmd() {
	local n=${#TARGET_PIDS[@]} i comm
	TARGET_OUT="$BATS_TEST_TMPDIR/target-$n.out"
	# Close fd 3 so that bats does not wait for the target to exit.
	"$@" >"$TARGET_OUT" 2>"$TARGET_OUT.err" 3>&- &
	TARGET_PID=$!
	TARGET_PIDS+=("$TARGET_PID")
	for ((i = 0; i < 200; i++)); do
		if grep -qx ready "$TARGET_OUT"; then
			comm=$(cat "/proc/$TARGET_PID/comm" 2>/dev/null)
			[[ $comm == maptarget ]] && return 0
			echo "PID $TARGET_PID of '$*' is '$comm', not maptarget" >&2
			return 1
		fi
		if ! process_alive "$TARGET_PID"; then
			echo "'$*' failed:" >&2
			cat "$TARGET_OUT.err" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "'$*' not ready after 10 s" >&2
	cat "$TARGET_OUT.err" >&2
	return 1
}

# strace ARG...: strace with LeakSanitizer off for what it runs (a sanitizer
# build cannot check leaks under ptrace and would fail instead); every
# `run strace ...` and `strace ...` of a .bats file goes through here.
strace() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" command strace "$@"
}
