#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Races with the target (SPEC §3, §6): a target whose mappings change while
# it is advised, a target killed in the middle of a run, and a target whose
# PID is taken by another process between the steps of pmadvise's check.
# pmadvise must never advise a range the target did not have, never advise
# another process, never crash or hang, and always say what happened.

bats_require_minimum_version 1.5.0

load test_helper

teardown() {
	stop_targets
}

# start_churn: start tests/helpers/churn (its change log is $CHURN_LOG) and
# wait for "ready"; sets TARGET_PID, ARENA_START/ARENA_END, ANCHOR (a range
# that never changes) and STATIC_MAPS (its maps outside the arena).
start_churn() {
	local out="$BATS_TEST_TMPDIR/churn.out" i
	CHURN_LOG="$BATS_TEST_TMPDIR/churn.log"
	"$HELPERS/churn" -d "$BATS_TEST_TMPDIR" -p 4096 -w 5 "$CHURN_LOG" >"$out" 2>"$out.err" 3>&- &
	TARGET_PID=$!
	TARGET_PIDS+=("$TARGET_PID")
	for ((i = 0; i < 200; i++)); do
		grep -qx ready "$out" && break
		process_alive "$TARGET_PID" || { cat "$out.err" >&2; return 1; }
		sleep 0.05
	done
	grep -qx ready "$out"
	ARENA_START=$(awk '$1 == "arena" { print $2 }' "$out")
	ARENA_END=$(awk '$1 == "arena" { print $3 }' "$out")
	ANCHOR=$(awk '$1 == "anchor" { print $2 "-" $3 }' "$out")
	STATIC_MAPS="$BATS_TEST_TMPDIR/static.maps"
	arena_lines -v "/proc/$TARGET_PID/maps" >"$STATIC_MAPS"
}

# arena_lines [-v] MAPS: the lines of MAPS inside the arena (-v: outside it).
# A maps file read while the mappings change can show a mapping again with
# another end, overlapping the line before: such lines are left out.
arena_lines() {
	local invert=0
	[ "$1" = -v ] && { invert=1; shift; }
	python3 -c 'import sys
lo, hi, inv = int(sys.argv[1], 16), int(sys.argv[2], 16), sys.argv[3] == "1"
last = 0
for line in open(sys.argv[4]):
    s, e = (int(x, 16) for x in line.split()[0].split("-"))
    if s < last:
        continue
    last = e
    if (lo <= s and e <= hi) != inv:
        sys.stdout.write(line)' "$ARENA_START" "$ARENA_END" "$invert" "$1"
}

# log_lines: how many whole lines the churn log has now.
log_lines() {
	wc -l <"$CHURN_LOG"
}

# check_churn_runs RUNS: check every run listed in RUNS (lines "N S0 S1
# STATUS MODE": files run-N.json, run-N.err and, for explicit ranges,
# run-N.ranges) against the churn log: exit status 0 or 64, valid JSON, each
# row's STATUS ok, unmapped, skipped or failed with ENOMEM, and each advised
# row inside what the target really had mapped: in the arena, mapped
# entirely after some line of the log between S0 and S1+1; outside it, inside
# one of the mappings that never change.  With explicit ranges the rows must
# also cover those ranges exactly.  Prints each violation; fails on any.
check_churn_runs() {
	python3 - "$1" "$CHURN_LOG" "$ARENA_START" "$ARENA_END" "$STATIC_MAPS" \
		"$BATS_TEST_TMPDIR" "$TARGET_PID" <<'EOF'
import json, re, sys

runs_file, log_file, lo, hi, static_file, tmp, pid = sys.argv[1:]
lo, hi = int(lo, 16), int(hi, 16)
PAGE = 4096
bad = []

def span(text):
    s, e = text.split("-")
    return int(s, 16), int(e, 16)

def pages(s, e):
    """the arena pages of [s, e) as a bit mask"""
    return ((1 << ((e - s) // PAGE)) - 1) << ((s - lo) // PAGE)

static = [span(l.split()[0]) for l in open(static_file)]
runs, pending = [], {}
for line in open(runs_file):
    n, s0, s1, status, mode = line.split()
    n, s0, s1, status = int(n), int(s0), int(s1), int(status)
    what = "run %d (%s)" % (n, mode)
    if status not in (0, 64):
        bad.append("%s: exit status %d" % (what, status))
    err = open("%s/run-%d.err" % (tmp, n), errors="replace").read()
    for l in err.splitlines():
        # a row warning, or a sanitizer or any other message: not expected
        if not re.fullmatch(r"pmadvise: PID %s: [0-9a-f]+-[0-9a-f]+: "
                            r"(\w+ failed: not mapped any more|nothing is mapped there)" % pid, l):
            bad.append("%s: unexpected message: %s" % (what, l))
    try:
        rows = json.load(open("%s/run-%d.json" % (tmp, n)))["pmadvise"]
    except Exception as e:
        bad.append("%s: invalid JSON: %s" % (what, e))
        continue
    if not rows:
        bad.append("%s: no rows" % what)
    for r in rows:
        s, e = int(r["start"], 16), int(r["end"], 16)
        st = r["status"] + ("" if r["errno"] is None else " " + r["errno"])
        where = "%s: row %x-%x %s" % (what, s, e, st)
        if st not in ("ok", "unmapped ENOMEM", "failed ENOMEM", "skipped EINVAL"):
            bad.append("%s: unexpected status" % where)
        if s >= e or s % PAGE or e % PAGE:
            bad.append("%s: not a page range" % where)
        elif st == "unmapped ENOMEM":
            pass  # what was not mapped: checked against the ranges below
        elif lo <= s and e <= hi:
            pending.setdefault(n, []).append((pages(s, e), where))
        elif e <= lo or s >= hi:
            if not any(ms <= s and e <= me for ms, me in static):
                bad.append("%s: outside every mapping the target had" % where)
        else:
            bad.append("%s: straddles the arena's edge" % where)
    got = sorted((int(r["start"], 16), int(r["end"], 16)) for r in rows)
    # no two rows overlap: no range is advised twice
    for (a, b), (c, d) in zip(got, got[1:]):
        if c < b:
            bad.append("%s: rows %x-%x and %x-%x overlap" % (what, a, b, c, d))
    if mode != "select":
        want = sorted(span(l.split()[0]) for l in open("%s/run-%d.ranges" % (tmp, n)))
        # rows tile the ranges exactly: merge both and compare
        def merge(spans):
            out = []
            for s, e in spans:
                if out and out[-1][1] == s:
                    out[-1] = (out[-1][0], e)
                else:
                    out.append((s, e))
            return out
        if merge(got) != merge(want):
            bad.append("%s: rows %s do not cover the ranges %s" % (what,
                       [("%x" % s, "%x" % e) for s, e in got[:8]],
                       [("%x" % s, "%x" % e) for s, e in want[:8]]))
    runs.append((n, s0, s1 + 1))

# replay the log: after line k the arena holds exactly `mapped`; a row is
# good when it lies in `mapped` after some line of its run's window
mapped, k = 0, 0
def check_window():
    for n, s0, s1 in runs:
        if s0 <= k <= s1 and n in pending:
            pending[n] = [(m, w) for m, w in pending[n] if m & ~mapped]
for line in open(log_file):
    check_window()
    parts = line.split()
    if len(parts) != 4:
        break
    k = int(parts[0])
    m = pages(int(parts[2], 16), int(parts[3], 16))
    mapped = mapped | m if parts[1] == "map" else mapped & ~m
check_window()
for n, s0, s1 in runs:
    if s1 > k:
        bad.append("run %d: the log ends at %d, before the run's end %d" % (n, k, s1))
for n in pending:
    for m, where in pending[n]:
        bad.append("%s: never mapped while pmadvise ran" % where)

for b in bad[:40]:
    print(b)
print("%d runs, %d violations" % (len(runs), len(bad)))
sys.exit(1 if bad else 0)
EOF
}

# churn_run N MODE ADVICE: one pmadvise run on the churning target, recorded
# in runs.txt.  MODE: select (--select all), ranges (the arena's lines of a
# maps just read, and the anchor, as RANGEs), maps (the same as --maps FILE)
# or arena (the whole arena and the anchor as two RANGEs).
churn_run() {
	local n=$1 mode=$2 advice=$3 s0 rc=0 args=()
	local base="$BATS_TEST_TMPDIR/run-$n"
	case $mode in
	select)
		args=(--select all)
		;;
	ranges | maps | arena)
		{
			if [ "$mode" = arena ]; then
				echo "$ARENA_START-$ARENA_END"
			else
				arena_lines "/proc/$TARGET_PID/maps"
			fi
			echo "$ANCHOR"
		} >"$base.ranges"
		if [ "$mode" != maps ]; then
			mapfile -t args < <(awk '{ print $1 }' "$base.ranges")
			args=(-- "${args[@]}")
		else
			args=(--maps "$base.ranges")
		fi
		;;
	esac
	s0=$(log_lines)
	"$PMADVISE" -p "$TARGET_PID" -J -o START,END,STATUS,ERRNO "$advice" "${args[@]}" \
		>"$base.json" 2>"$base.err" || rc=$?
	echo "$n $s0 $(log_lines) $rc $mode" >>"$BATS_TEST_TMPDIR/runs.txt"
}

@test "a target that maps, unmaps, mprotects and remaps while advised: only ranges it had, no crash" {
	start_churn
	local n=0 advice mode round advices=(cold pageout)
	# willneed for another process needs 5.15; where it is missing the
	# churn runs use the other two (10-advice checks its exit 2)
	kernel_has remote-willneed && advices+=(willneed)
	for round in 1 2 3 4; do
		for advice in "${advices[@]}"; do
			for mode in select ranges maps arena select; do
				churn_run $((++n)) "$mode" "$advice"
			done
		done
	done
	# the log must reach past every run's window before it is read
	local want=$(($(log_lines) + 2)) i
	for ((i = 0; i < 200; i++)); do
		[ "$(log_lines)" -ge "$want" ] && break
		sleep 0.05
	done
	arena_lines -v "/proc/$TARGET_PID/maps" >>"$STATIC_MAPS"
	stop_targets
	check_churn_runs "$BATS_TEST_TMPDIR/runs.txt"
	# the races really happened: some rows met a range that had gone
	cat "$BATS_TEST_TMPDIR"/run-*.json | jq -s '[.[].pmadvise[] | .status] | group_by(.) |
		map({(.[0]): length}) | add' | tee "$BATS_TEST_TMPDIR/counts"
	jq -e '(.unmapped // 0) + (.failed // 0) > 0' "$BATS_TEST_TMPDIR/counts"
}

# rows_summary JSON: the STATUS ERRNO of its rows, runs of equal ones counted
# ("2048 ok -" then "3975 not-run ESRCH").
rows_summary() {
	jq -r '.pmadvise[] | .status + " " + (.errno // "-")' "$1" | uniq -c
}

@test "a target killed from another process in the middle of a long run: rows ok then not-run, exit 64" {
	start_target many=6000
	local rows trace="$BATS_TEST_TMPDIR/strace.log" i calls
	rows=$("$PMADVISE" -p "$TARGET_PID" --dry-run --select all -n -r -o START cold | wc -l)
	[ "$rows" -gt 6000 ]
	# the third call with ranges waits 3 s before it enters the kernel, a
	# window wide enough for a slow machine (an emulated one too) to kill
	# the target in (LeakSanitizer cannot work under ptrace: off for a
	# sanitizer build)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 120 strace -f -qq -o "$trace" -e trace=process_madvise \
		-e inject=process_madvise:delay_enter=3000000:when=4+ \
		"$PMADVISE" -p "$TARGET_PID" --select all -J -o START,STATUS,ERRNO cold \
		>"$BATS_TEST_TMPDIR/out.json" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local runner=$!
	# the probe and two calls with ranges are done: kill the target
	for ((i = 0; i < 400; i++)); do
		calls=$(grep -c 'process_madvise(.*= [0-9]' "$trace" 2>/dev/null || true)
		[ "${calls:-0}" -ge 3 ] && break
		sleep 0.05
	done
	kill -KILL "$TARGET_PID"
	local rc=0
	wait "$runner" || rc=$?
	cat "$BATS_TEST_TMPDIR/err"
	rows_summary "$BATS_TEST_TMPDIR/out.json"
	# not killed by timeout (124), no signal, SPEC §10: some advised, some not
	[ "$rc" -eq 64 ]
	grep -qx "pmadvise: PID $TARGET_PID: process has exited" "$BATS_TEST_TMPDIR/err"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -eq 1 ]
	# one row per piece; the two batches done are ok, all the rest not-run
	[ "$(jq '.pmadvise | length' "$BATS_TEST_TMPDIR/out.json")" -eq "$rows" ]
	[ "$(rows_summary "$BATS_TEST_TMPDIR/out.json" | awk '{ print $2, $3 }' | paste -sd,)" = \
		"ok -,not-run ESRCH" ]
	[ "$(jq '[.pmadvise[] | select(.status == "ok")] | length' "$BATS_TEST_TMPDIR/out.json")" -eq 2048 ]
	# nothing was tried after the call that found the process gone
	[ "$(grep -c 'process_madvise(' "$trace")" -eq 4 ]
}

@test "a target killed at any moment of a run: no crash, no hang, a coherent table, the PID named" {
	local round rc delay err json
	for round in 1 2 3 4 5 6 7 8; do
		start_target many=20000
		json="$BATS_TEST_TMPDIR/out-$round.json"
		err="$BATS_TEST_TMPDIR/err-$round"
		timeout 60 "$PMADVISE" -p "$TARGET_PID" --select all -J -o START,STATUS,ERRNO \
			pageout >"$json" 2>"$err" 3>&- &
		local runner=$!
		delay=$(printf '0.%03d' $((round * 9)))
		sleep "$delay"
		kill -KILL "$TARGET_PID"
		rc=0
		wait "$runner" || rc=$?
		stop_targets
		echo "round $round, killed after ${delay}s: exit $rc; $(head -c 300 "$err")"
		case $rc in
		0)	# done before the kill
			[ ! -s "$err" ] ;;
		1)	# gone before anything was advised
			grep -Eq "PID [0-9]+: (no such process|process has exited|process has no memory mappings)" "$err" ;;
		64)
			grep -qx "pmadvise: PID [0-9]*: process has exited" "$err"
			rows_summary "$json" | awk '{ print $2, $3 }' | paste -sd, |
				grep -Eqx 'ok -,(partial ESRCH,)?not-run ESRCH' ;;
		*)
			false ;;
		esac
		# the table, when there is one, is valid JSON
		[ ! -s "$json" ] || jq -e '.pmadvise | length > 0' "$json" >/dev/null
	done
}

# PID reuse (SPEC §3).  pmadvise names its target by PID, and a PID is free
# again as soon as its process is reaped: a pidfd does not hold the number.
# pmadvise is race-free only because it opens a pidfd first, opens
# /proc/PID second, and then asks the pidfd whether that same process is
# still alive; every later read goes through the /proc/PID directory fd and
# the advice through the pidfd, and both stay bound to the first process.
#
# The test makes the race happen on purpose, at each step in turn.  In a new
# PID namespace (unshare --pid --fork --mount-proc) it starts the target,
# runs pmadvise under strace with a 3 s delay injected after one step, and in
# that window kills and reaps the target and starts an impostor that gets
# the same PID (writing PID-1 to /proc/sys/kernel/ns_last_pid makes it the
# next one in the namespace; nothing else forks there meanwhile).  The
# impostor has a file mapping whose pages are resident and an anonymous one
# whose pages are referenced: advice would show (pageout drops the file's
# Rss).  pmadvise must say the target has exited, exit 1, make no call with
# ranges, and leave the impostor as it was.  Both run without address space
# randomization, so the impostor's mappings are where the target's were:
# advice that went to the wrong process would hit them.  At the end the
# impostor is advised directly, to show that this check sees advice when
# there is some.

# pid_reuse_script: the script run in the namespace, as a file; it writes
# KEY=VALUE lines to $1/result.
pid_reuse_script() {
	cat >"$BATS_TEST_TMPDIR/reuse.sh" <<'SCRIPT'
dir=$1 injection=$2
cd "$dir" || exit 1
mkdir -p target impostor
exec 3>&-
# smaps_kb PID START FIELD
smaps_kb() {
	awk -v start="$2" -v field="$3:" '
		/^[0-9a-f]+-[0-9a-f]+ / { inside = index($1, start "-") == 1; next }
		inside && $1 == field { print $2; exit }' "/proc/$1/smaps"
}
wait_ready() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -qx ready "$1" && return 0
		sleep 0.05
	done
	return 1
}
# both without address space randomization: the impostor's mappings lie at
# the very addresses of the target's, so advice meant for the target's
# ranges would land on the impostor's pages
setarch "$(uname -m)" -R "$HELPERS/maptarget" -d target file=1M anon=1M >target.out 2>&1 &
target=$!
wait_ready target.out || exit 1
rm -f trace
strace -f -qq -o trace -e trace=pidfd_open,pidfd_send_signal,openat,process_madvise \
	-e inject="$injection" \
	"$PMADVISE" -p "$target" pageout --select all -J -o START,STATUS >pm.out 2>pm.err &
runner=$!
syscall=${injection%%:*}
for ((i = 0; i < 400; i++)); do
	grep -q "^[0-9]* *$syscall(.*DELAYED" trace 2>/dev/null && break
	sleep 0.02
done
held=$(wc -l <trace)
# no fork from here until the impostor runs: it must get the target's PID
kill -KILL "$target"
wait "$target"
echo $((target - 1)) >/proc/sys/kernel/ns_last_pid
setarch "$(uname -m)" -R "$HELPERS/maptarget" -d impostor file=1M anon=1M >impostor.out 2>&1 &
impostor=$!
wait_ready impostor.out || exit 1
file=$(awk '$1 == "file" { print $2 }' impostor.out)
anon=$(awk '$1 == "anon" { print $2 }' impostor.out)
{
	echo "target=$target"
	echo "impostor=$impostor"
	echo "same_layout=$(awk '$1 == "file" { print $2 }' target.out | grep -cx "$file")"
	# pmadvise still held in the window when the impostor was ready
	echo "early=$(( $(wc -l <trace) != held ))"
	echo "rss_before=$(smaps_kb "$impostor" "$file" Rss)"
	echo "ref_before=$(smaps_kb "$impostor" "$anon" Referenced)"
} >result
rc=0
wait "$runner" || rc=$?
{
	echo "rc=$rc"
	# successful opens of a maps file (through the /proc/PID directory fd)
	echo "maps_reads=$(grep -c 'openat([0-9]*, "maps", .*= [0-9]' trace)"
	# calls with ranges that the kernel took
	echo "advised_calls=$(grep -c 'process_madvise([0-9]*, \[{.*= [0-9]' trace)"
	echo "rss_after=$(smaps_kb "$impostor" "$file" Rss)"
	echo "ref_after=$(smaps_kb "$impostor" "$anon" Referenced)"
	rc=0
	"$PMADVISE" -p "$impostor" pageout --select all -q || rc=$?
	echo "control_rc=$rc"
	echo "rss_control=$(smaps_kb "$impostor" "$file" Rss)"
} >>result
kill "$impostor"
wait "$impostor"
SCRIPT
}

# pid_reuse INJECTION: run the scenario with that strace injection; the
# results are in shell variables named as in the result file.
pid_reuse() {
	command -v unshare >/dev/null || skip "no unshare"
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "cannot make a PID namespace"
	pid_reuse_script
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		timeout 60 unshare --pid --fork --mount-proc \
		bash "$BATS_TEST_TMPDIR/reuse.sh" "$BATS_TEST_TMPDIR" "$1" 3>&-
	cat "$BATS_TEST_TMPDIR/result"
	echo "pmadvise said: $(cat "$BATS_TEST_TMPDIR/pm.err")"
	grep -v 'ld.so\|/lib' "$BATS_TEST_TMPDIR/trace" | cut -c1-160
	local key value
	while IFS== read -r key value; do
		printf -v "$key" '%s' "$value"
	done <"$BATS_TEST_TMPDIR/result"
}

# impostor_untouched: the assertions every PID reuse scenario shares.
impostor_untouched() {
	# the race really happened: the impostor had the PID while pmadvise waited
	[ "$impostor" -eq "$target" ]
	[ "$early" -eq 0 ]
	[ "$same_layout" -eq 1 ]
	# pmadvise noticed, said so, and advised nothing
	[ "$rc" -eq 1 ]
	grep -Eqx "pmadvise: PID $target: (process has exited|no such process)" "$BATS_TEST_TMPDIR/pm.err"
	[ "$advised_calls" -eq 0 ]
	# no table, or one where no row was advised
	[ ! -s "$BATS_TEST_TMPDIR/pm.out" ] ||
		[ "$(jq -r '[.pmadvise[].status] | unique | join(",")' "$BATS_TEST_TMPDIR/pm.out")" = not-run ]
	# the impostor's pages are as they were
	[ "$rss_before" -ge 1000 ]
	[ "$rss_after" -eq "$rss_before" ]
	[ "$ref_before" -ge 1000 ]
	[ "$ref_after" -eq "$ref_before" ]
	# and advice to it would have shown
	[ "$control_rc" -eq 0 ]
	[ "$rss_control" -lt $((rss_before / 2)) ]
}

@test "PID reused between pidfd_open and opening /proc/PID: the impostor is not advised" {
	pid_reuse pidfd_open:delay_exit=$(scaled_us 3)
	impostor_untouched
	# the pidfd check came before anything of the impostor was read
	[ "$maps_reads" -eq 0 ]
}

@test "PID reused after the pidfd check, before the maps are read: the impostor is not advised" {
	pid_reuse pidfd_send_signal:delay_exit=$(scaled_us 3)
	impostor_untouched
	# /proc/PID, opened before, still shows the target, which has gone
	[ "$maps_reads" -eq 0 ]
}

@test "PID reused after the maps are read and the probe, before the ranges: the impostor is not advised" {
	# the first process_madvise is the zero-length probe
	pid_reuse process_madvise:delay_exit=$(scaled_us 3):when=1
	impostor_untouched
}

@test "--pidfd of a process that has exited, its PID taken by another: 'has exited', the impostor is not advised" {
	command -v unshare >/dev/null || skip "no unshare"
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "cannot make a PID namespace"
	mkdir "$BATS_TEST_TMPDIR/target" "$BATS_TEST_TMPDIR/impostor"
	# a pidfd is taken on the target, the target is killed and reaped, and
	# the impostor gets its PID; then pmadvise gets the old pidfd
	run --separate-stderr timeout 60 unshare --pid --fork --mount-proc python3 -c '
import os, subprocess, sys
helpers, pmadvise, tmp = sys.argv[1:4]

def start(name):
    p = subprocess.Popen(["setarch", os.uname().machine, "-R",
                          helpers + "/maptarget", "-d", tmp + "/" + name, "file=1M"],
                         stdout=subprocess.PIPE, text=True)
    lines = [p.stdout.readline() for _ in range(2)]
    assert lines[1] == "ready\n", lines
    return p, lines[0].split()[1]

def rss(pid, start):
    inside = False
    for line in open("/proc/%d/smaps" % pid):
        first = line.split()[0]
        if not first.endswith(":"):
            inside = first.startswith(start + "-")
        elif inside and first == "Rss:":
            return int(line.split()[1])

target, target_file = start("target")
fd = os.pidfd_open(target.pid)
target.kill()
target.wait()
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(target.pid - 1))
impostor, file_start = start("impostor")
assert file_start == target_file, "not the same layout"
before = rss(impostor.pid, file_start)
pm = subprocess.run([pmadvise, "-P", str(fd), "pageout", "--select", "all"],
                    pass_fds=[fd], capture_output=True, text=True)
after = rss(impostor.pid, file_start)
control = subprocess.run([pmadvise, "-p", str(impostor.pid), "pageout", "--select", "all", "-q"])
print(target.pid, impostor.pid, pm.returncode, before, after, control.returncode,
      rss(impostor.pid, file_start))
sys.stderr.write(pm.stderr)
sys.stdout.write(pm.stdout)
impostor.kill()
impostor.wait()
' "$HELPERS" "$PMADVISE" "$BATS_TEST_TMPDIR" 3>&-
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	local target impostor rc before after control_rc control
	read -r target impostor rc before after control_rc control <<<"$output"
	[ "$impostor" -eq "$target" ]
	[ "$rc" -eq 1 ]
	[[ "$stderr" =~ ^"pmadvise: --pidfd "[0-9]+": the process behind it has exited"$ ]]
	[ "$(wc -l <<<"$output")" -eq 1 ]
	[ "$before" -ge 1000 ]
	[ "$after" -eq "$before" ]
	[ "$control_rc" -eq 0 ]
	[ "$control" -lt $((before / 2)) ]
}
