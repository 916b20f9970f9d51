#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Target and kernel errors (SPEC §3, §10): each one has its message, its exit
# status, and nothing is advised (no process_madvise call carries a range).

load test_helper

NOBODY=65534

teardown() {
	stop_targets
	if [ -n "${NOBODY_DIR:-}" ]; then
		rm -rf "$NOBODY_DIR"
	fi
}

# as_nobody COMMAND...: run COMMAND as user nobody with no capabilities.
as_nobody() {
	setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups --inh-caps=-all "$@"
}

# nobody_pmadvise: set NOBODY_PMADVISE to a pmadvise binary that user nobody
# can run (a copy in a mode-755 directory when the build tree is closed).
nobody_pmadvise() {
	if as_nobody test -x "$PMADVISE"; then
		NOBODY_PMADVISE=$PMADVISE
		return 0
	fi
	NOBODY_DIR=$(mktemp -d /tmp/pmadvise-nobody.XXXXXX)
	chmod 755 "$NOBODY_DIR"
	cp "$PMADVISE" "$NOBODY_DIR/pmadvise"
	chmod 755 "$NOBODY_DIR/pmadvise"
	NOBODY_PMADVISE=$NOBODY_DIR/pmadvise
	as_nobody test -x "$NOBODY_PMADVISE"
}

# start_nobody_target: a `sleep` owned by nobody; waits until it runs as
# nobody (setpriv has switched user and exec'd). Sets TARGET_PID.
start_nobody_target() {
	local i
	setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups sleep 1000 3>&- &
	TARGET_PID=$!
	TARGET_PIDS+=("$TARGET_PID")
	for ((i = 0; i < 200; i++)); do
		if [ "$(cat "/proc/$TARGET_PID/comm" 2>/dev/null)" = sleep ] &&
			awk -v u="$NOBODY" '/^Uid:/ { ok = $2 == u && $3 == u } END { exit !ok }' \
				"/proc/$TARGET_PID/status"; then
			return 0
		fi
		sleep 0.05
	done
	echo "nobody's sleep did not start" >&2
	return 1
}

# start_python SCRIPT: run python3 -c SCRIPT in the background (killed by
# stop_targets) and wait up to 10 s for its first whole output line, put in LINE.
start_python() {
	local out="$BATS_TEST_TMPDIR/python-${#TARGET_PIDS[@]}.out" i
	: >"$out"
	python3 -c "$1" >>"$out" 3>&- &
	TARGET_PIDS+=("$!")
	for ((i = 0; i < 200; i++)); do
		if [ "$(wc -l <"$out")" -ge 1 ]; then
			LINE=$(head -n 1 "$out")
			return 0
		fi
		sleep 0.05
	done
	echo "python3 target printed nothing" >&2
	return 1
}

@test "EACCES: a caller without ptrace read access is told so, exit 1, nothing advised" {
	start_target anon=64K
	nobody_pmadvise
	run count_madvise_calls setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
		--inh-caps=-all "$NOBODY_PMADVISE" -p "$TARGET_PID" cold --select all
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -q "PID $TARGET_PID: .*no ptrace read access" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
}

@test "EPERM: advising another process without CAP_SYS_NICE names the capability, exit 1" {
	start_nobody_target
	nobody_pmadvise
	run count_madvise_calls setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
		--inh-caps=-all "$NOBODY_PMADVISE" -p "$TARGET_PID" cold --select all
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -q "PID $TARGET_PID: .*needs CAP_SYS_NICE" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
}

@test "ESRCH: a process that has exited is 'no such process', exit 1, nothing advised" {
	sleep 1000 3>&- &
	local pid=$!
	kill -KILL "$pid"
	wait "$pid" || true
	run count_madvise_calls "$PMADVISE" -p "$pid" cold --select all
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -Eq "PID $pid: (no such process|process has exited)" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "ESRCH: a zombie is rejected as a zombie, exit 1, no process_madvise call" {
	start_python 'import os, time
child = os.fork()
if child == 0:
    os._exit(0)
print(child, flush=True)
time.sleep(1000)'
	local zombie=$LINE i
	for ((i = 0; i < 200; i++)); do
		[ "$(awk '{ print $3 }' "/proc/$zombie/stat")" = Z ] && break
		sleep 0.05
	done
	[ "$(awk '{ print $3 }' "/proc/$zombie/stat")" = Z ]

	run count_madvise_calls "$PMADVISE" -p "$zombie" cold --select all
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -q "PID $zombie: .*zombie" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "ESRCH: a kernel thread is rejected as a kernel thread, exit 1, no process_madvise call" {
	[ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ] || skip "PID 2 is not kthreadd here"
	run count_madvise_calls "$PMADVISE" -p 2 cold --select all
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -q "PID 2: .*kernel thread" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "EINVAL: remote mergeable is not supported, exit 2, launcher mode suggested" {
	start_target anon=64K
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" mergeable --select anon
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 2 ]
	grep -q "PID $TARGET_PID: .*does not support remote KSM hints" "$BATS_TEST_TMPDIR/cmd.out"
	grep -qF "pmadvise mergeable -- COMMAND" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
}

@test "EINVAL: a bare advice number the kernel refuses remotely is exit 2, names the number" {
	start_target anon=64K
	# 14 is MADV_HUGEPAGE: harmless, and never accepted for another process
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" 14 --select anon
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 2 ]
	grep -q "PID $TARGET_PID: .*does not accept advice 14 for another process" \
		"$BATS_TEST_TMPDIR/cmd.out"
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
}

@test "ENOSYS: no process_madvise names Linux 5.10, exit 2, nothing advised" {
	start_target anon=64K
	local trace="$BATS_TEST_TMPDIR/strace.log"
	run strace -f -qq -o "$trace" -e trace=process_madvise \
		-e inject=process_madvise:error=ENOSYS \
		"$PMADVISE" -p "$TARGET_PID" cold --select anon
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs Linux 5.10"* ]]
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
}

@test "a thread ID is rejected with the process ID to use instead, exit 1" {
	start_python 'import threading, time
def run():
    print(threading.get_native_id(), flush=True)
    time.sleep(1000)
threading.Thread(target=run, daemon=True).start()
time.sleep(1000)'
	local tid=$LINE pid=${TARGET_PIDS[-1]}
	[ "$tid" != "$pid" ]
	[ "$(awk '/^Tgid:/ { print $2 }' "/proc/$tid/status")" = "$pid" ]

	run count_madvise_calls "$PMADVISE" -p "$tid" cold --select all
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -qF "PID $tid is a thread of process $pid: use --pid $pid" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "--pid of pmadvise itself is rejected, exit 1" {
	# bash -c execs pmadvise in place: its $$ is pmadvise's PID
	run count_madvise_calls bash -c 'exec "$0" -p $$ cold --select all' "$PMADVISE"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -Eq "PID [0-9]+ is pmadvise itself" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "--pidfd with a regular file is 'not a pidfd', exit 1, no process_madvise call" {
	run count_madvise_calls "$PMADVISE" -P 7 cold --select all 7</etc/hostname
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -q -- "--pidfd 7: .*not a pidfd" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "--pidfd with a file descriptor that is not open says so, exit 1, no process_madvise call" {
	run count_madvise_calls "$PMADVISE" -P 9 cold --select all 9<&-
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -q -- "--pidfd 9: .*not open" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}

@test "--pidfd of a process that has exited says so, exit 1, no process_madvise call" {
	run count_madvise_calls python3 -c 'import os, subprocess, sys
child = subprocess.Popen(["sleep", "1000"])
fd = os.pidfd_open(child.pid)
child.kill()
child.wait()
sys.exit(subprocess.run([sys.argv[1], "-P", str(fd), "cold", "--select", "all"],
                        pass_fds=[fd]).returncode)' "$PMADVISE"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	grep -Eq -- "--pidfd [0-9]+: .*(has exited|no such process)" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$output" -eq 0 ]
}
