# SPDX-License-Identifier: GPL-2.0-or-later
# Shared functions for the pmadvise bats suite; each .bats file does `load test_helper`.
#
# Environment (set by `make check`):
#   PMADVISE      absolute path of the pmadvise binary under test
#   HELPERS       absolute path of the built tests/helpers directory
#   TESTS_SRCDIR  absolute path of the tests source directory
#   PMADVISE_TEST_TIME_SCALE
#                 optional factor (default 1) for the few tests whose windows
#                 are wall-clock time: an emulated kernel (tests/kernels)
#                 runs several times slower and sets it

: "${PMADVISE:?PMADVISE is not set; run the suite with make check}"
: "${HELPERS:?HELPERS is not set; run the suite with make check}"

TARGET_PIDS=()

# scaled SECONDS: SECONDS times PMADVISE_TEST_TIME_SCALE, for windows of
# wall-clock time that a slow machine needs wider (prints a decimal).
scaled() {
	awk -v s="$1" -v f="${PMADVISE_TEST_TIME_SCALE:-1}" 'BEGIN { printf "%g\n", s * f }'
}

# scaled_us SECONDS: the same in whole microseconds (for strace's delay_*).
scaled_us() {
	awk -v s="$1" -v f="${PMADVISE_TEST_TIME_SCALE:-1}" 'BEGIN { printf "%d\n", s * f * 1000000 }'
}

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
	local n=${#TARGET_PIDS[@]}
	TARGET_OUT="$BATS_TEST_TMPDIR/target-$n.out"
	# Emptied here, not by the background job's redirection: after
	# stop_targets the name is used again, and the wait below must not see
	# the "ready" of the target before.
	: >"$TARGET_OUT"
	# Close fd 3 so that bats does not wait for the target to exit.
	"$HELPERS/maptarget" -d "$BATS_TEST_TMPDIR" "$@" >"$TARGET_OUT" 2>"$TARGET_OUT.err" 3>&- &
	TARGET_PID=$!
	TARGET_PIDS+=("$TARGET_PID")
	wait_ready "$TARGET_OUT" "$TARGET_PID" "maptarget $*"
}

# wait_ready OUT PID WHAT: wait up to 10 s for a "ready" line in the file OUT
# of process PID; fail, with OUT.err and WHAT the command, if PID dies or is late.
wait_ready() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -qx ready "$1" && return 0
		if ! process_alive "$2"; then
			echo "$3 failed:" >&2
			cat "$1.err" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "$3 not ready after 10 s" >&2
	cat "$1.err" >&2
	return 1
}

# require_vma_names: skip the test unless the kernel can name anonymous
# mappings (named= SPECs need CONFIG_ANON_VMA_NAME). Call before start_target.
require_vma_names() {
	start_target named=probe:4K 2>/dev/null ||
		skip "kernel cannot name anonymous mappings (CONFIG_ANON_VMA_NAME)"
	stop_targets
}

# kernel_has FEATURE: true when the running kernel offers FEATURE.  Learnt by
# trying it, once per suite run, not from the version number (distribution
# kernels carry backports); the version in kernel_feature_text is only
# what to tell the reader.  FEATUREs:
#   remote-willneed        process_madvise() takes MADV_WILLNEED
#   remote-collapse        process_madvise() takes MADV_COLLAPSE
#   pagemap-scan           the PAGEMAP_SCAN ioctl on /proc/PID/pagemap
#   ksm-stat               /proc/PID/ksm_stat
#   ksm-stat-merge-any     ksm_merge_any and ksm_mergeable in /proc/PID/ksm_stat
#   smaps-ksm              the KSM: field of /proc/PID/smaps
#   memory-merge           prctl(PR_SET_MEMORY_MERGE) (needs root to try)
#   memory-merge-exec      the PR_SET_MEMORY_MERGE flag survives execve()
#   madvise-cap-sys-nice   process_madvise() needs CAP_SYS_NICE (newer rule;
#                          before it, ptrace attach rights were enough)
kernel_has() {
	local cache="${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/pmadvise-kernel-has-$1" answer
	if [[ ! -f $cache ]]; then
		answer=0
		_kernel_probe "$1" >/dev/null 2>&1 && answer=1
		echo "$answer" >"$cache"
	fi
	[[ $(cat "$cache") == 1 ]]
}

# kernel_feature_text FEATURE: what FEATURE is, and since when mainline has it.
kernel_feature_text() {
	case $1 in
	remote-willneed) echo "process_madvise(MADV_WILLNEED) (Linux 5.15)" ;;
	remote-collapse) echo "process_madvise(MADV_COLLAPSE) (Linux 6.1)" ;;
	pagemap-scan) echo "the PAGEMAP_SCAN ioctl (Linux 6.7)" ;;
	ksm-stat) echo "/proc/PID/ksm_stat (Linux 6.1)" ;;
	ksm-stat-merge-any) echo "ksm_merge_any in /proc/PID/ksm_stat" ;;
	smaps-ksm) echo "the KSM field of /proc/PID/smaps" ;;
	memory-merge) echo "prctl(PR_SET_MEMORY_MERGE) (Linux 6.4)" ;;
	memory-merge-exec) echo "PR_SET_MEMORY_MERGE kept across execve (Linux 6.7)" ;;
	madvise-cap-sys-nice) echo "the CAP_SYS_NICE rule of process_madvise (Linux 5.12)" ;;
	*) echo "$1" ;;
	esac
}

# require_kernel FEATURE...: skip the test, naming what is missing, unless
# the running kernel has every FEATURE.
require_kernel() {
	local feature
	for feature in "$@"; do
		kernel_has "$feature" ||
			skip "this kernel ($(uname -r)) lacks $(kernel_feature_text "$feature")"
	done
}

_kernel_probe() {
	local nobody=65534
	case $1 in
	smaps-ksm) grep -q '^KSM:' /proc/self/smaps ;;
	ksm-stat) [[ -r /proc/self/ksm_stat ]] ;;
	ksm-stat-merge-any) grep -q '^ksm_merge_any' /proc/self/ksm_stat ;;
	madvise-cap-sys-nice)
		# An unprivileged user, without capabilities, advising its own child:
		# refused with EPERM under the CAP_SYS_NICE rule only.
		[[ $EUID -eq 0 ]] || return 0
		! setpriv --reuid=$nobody --regid=$nobody --clear-groups --inh-caps=-all \
			python3 -c "$_KERNEL_PROBE_PY" madvise-own-child ;;
	*) python3 -c "$_KERNEL_PROBE_PY" "$1" ;;
	esac
}

# shellcheck disable=SC2016 # python, not shell
_KERNEL_PROBE_PY='
import ctypes, fcntl, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
NR_pidfd_open, NR_process_madvise = 434, 440
PR_SET_MEMORY_MERGE, PR_GET_MEMORY_MERGE = 67, 68

def probe_advice(pid, advice):
    fd = libc.syscall(NR_pidfd_open, pid, 0)
    if fd < 0:
        return False
    return libc.syscall(NR_process_madvise, fd, None, 0, advice, 0) == 0

what = sys.argv[1]
if what == "remote-willneed":
    ok = probe_advice(os.getpid(), 3)
elif what == "remote-collapse":
    ok = probe_advice(os.getpid(), 25)
elif what == "madvise-own-child":
    child = os.fork()
    if child == 0:
        time.sleep(10)
        os._exit(0)
    ok = probe_advice(child, 20)
    os.kill(child, 9)
elif what == "pagemap-scan":
    with open("/proc/self/pagemap", "rb") as f:
        try:
            fcntl.ioctl(f.fileno(), 0xc0606610, 0)
            ok = True
        except OSError as e:
            ok = e.errno not in (25, 22)    # ENOTTY, EINVAL: no such ioctl
elif what == "memory-merge":
    ok = libc.prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) >= 0
elif what == "memory-merge-exec":
    if libc.prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0:
        sys.exit(1)
    os.execv(sys.executable, [sys.executable, "-c",
        "import ctypes, sys; sys.exit(ctypes.CDLL(None).prctl(68, 0, 0, 0, 0) != 1)"])
else:
    sys.exit(2)
sys.exit(0 if ok else 1)
'

# thp_not_always: make sure that the aligned= regions of the next targets
# are not huge from their first touch: when
# /sys/kernel/mm/transparent_hugepage/enabled is [always] (the default of
# many distribution kernels), set it to madvise until stop_targets (call
# before start_target).  Skips, saying why, when it cannot.
THP_ENABLED=/sys/kernel/mm/transparent_hugepage/enabled
THP_SAVED=
thp_not_always() {
	[[ -r $THP_ENABLED ]] || skip "kernel without transparent huge pages ($THP_ENABLED)"
	grep -q '\[always\]' "$THP_ENABLED" || return 0
	[[ -w $THP_ENABLED ]] || skip "THP is [always] here and changing $THP_ENABLED needs root"
	THP_SAVED=always
	echo madvise >"$THP_ENABLED"
}

# thp_restore: undo thp_not_always (stop_targets calls it).
thp_restore() {
	[[ -n $THP_SAVED ]] || return 0
	echo "$THP_SAVED" >"$THP_ENABLED"
	THP_SAVED=
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
	thp_restore
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
	: >"$TARGET_OUT"	# (see start_target)
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

# KSM settings are global to the machine. A test file that changes them calls
# ksm_save in setup and ksm_restore in teardown, which puts back run,
# pages_to_scan and sleep_millisecs of /sys/kernel/mm/ksm also when the test
# failed; tests change them with ksm_set or ksm_start only.
KSM=/sys/kernel/mm/ksm
KSM_SETTINGS=(run pages_to_scan sleep_millisecs)
KSM_SAVED=()

ksm_save() {
	local name
	KSM_SAVED=()
	[[ -d $KSM ]] || return 0
	for name in "${KSM_SETTINGS[@]}"; do
		KSM_SAVED+=("$(cat "$KSM/$name")")
	done
}

ksm_restore() {
	local i name now failed=0
	for i in "${!KSM_SAVED[@]}"; do
		name=${KSM_SETTINGS[i]}
		now=$(cat "$KSM/$name")
		[[ $now == "${KSM_SAVED[i]}" ]] && continue
		echo "${KSM_SAVED[i]}" >"$KSM/$name" || failed=1
		now=$(cat "$KSM/$name")
		if [[ $now != "${KSM_SAVED[i]}" ]]; then
			echo "teardown: could not restore $KSM/$name to ${KSM_SAVED[i]} (it is $now)" >&2
			failed=1
		fi
	done
	return "$failed"
}

# require_ksm_control: skip unless this kernel has KSM and we may change it.
require_ksm_control() {
	[[ -d $KSM ]] || skip "kernel without KSM (CONFIG_KSM)"
	[[ -w $KSM/run ]] || skip "changing $KSM/run needs root"
}

# ksm_set NAME VALUE: change a KSM setting (ksm_restore puts it back).
ksm_set() {
	echo "$2" >"$KSM/$1"
	[[ $(cat "$KSM/$1") == "$2" ]] || {
		echo "could not set $KSM/$1 to $2" >&2
		return 1
	}
}

# ksm_start: KSM running and quick: 5000 pages every 10 ms.
ksm_start() {
	require_ksm_control
	ksm_set pages_to_scan 5000
	ksm_set sleep_millisecs 10
	ksm_set run 1
}

# ksm_stat PID KEY: the value of KEY in /proc/PID/ksm_stat ("key value" or
# "key: value" lines).
ksm_stat() {
	awk -v key="$2" '{ sub(/:$/, "", $1) } $1 == key { print $2; found = 1; exit }
		END { exit !found }' "/proc/$1/ksm_stat" || {
		echo "no $2 in /proc/$1/ksm_stat" >&2
		return 1
	}
}

# ksm_flag FIELD PID: "yes" or "no", FIELD of /proc/PID/ksm_stat
# (ksm_merge_any or ksm_mergeable); on kernels without those fields (6.12),
# whether a mapping of PID has "mg" (VM_MERGEABLE) in its VmFlags.
ksm_flag() {
	if kernel_has ksm-stat-merge-any; then
		ksm_stat "$2" "$1"
	elif grep -qE '^VmFlags:.* mg( |$)' "/proc/$2/smaps"; then
		echo yes
	else
		echo no
	fi
}

# merge_any PID: "yes" when PID has the process-wide KSM flag.  Where only
# VmFlags tell, that is any "mg" mapping (a process started without the flag
# has none: maptarget does not madvise, nor do sleep or python3).
merge_any() { ksm_flag ksm_merge_any "$1"; }

# vmas_mergeable PID: "yes" when some mapping of PID is KSM-mergeable.
vmas_mergeable() { ksm_flag ksm_mergeable "$1"; }

# wait_merged PID PAGES SECONDS: wait until ksm_merging_pages of PID is at
# least PAGES; fail with the numbers after SECONDS.
wait_merged() {
	local pid=$1 want=$2 i merged
	for ((i = 0; i < $3 * 5; i++)); do
		merged=$(ksm_stat "$pid" ksm_merging_pages) || return 1
		((merged >= want)) && return 0
		sleep 0.2
	done
	echo "PID $pid: ksm_merging_pages $merged after $3 s, wanted $want or more" >&2
	echo "full_scans $(cat "$KSM/full_scans"), pages_shared $(cat "$KSM/pages_shared")" >&2
	return 1
}
