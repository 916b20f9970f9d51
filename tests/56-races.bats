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
	"$HELPERS/churn" -d "$BATS_TEST_TMPDIR" -w 5 "$CHURN_LOG" >"$out" 2>"$out.err" 3>&- &
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
arena_lines() {
	local invert=0
	[ "$1" = -v ] && { invert=1; shift; }
	python3 -c 'import sys
lo, hi, inv = int(sys.argv[1], 16), int(sys.argv[2], 16), sys.argv[3] == "1"
for line in open(sys.argv[4]):
    s, e = (int(x, 16) for x in line.split()[0].split("-"))
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
    if mode != "select":
        want = sorted(span(l.split()[0]) for l in open("%s/run-%d.ranges" % (tmp, n)))
        got = sorted((int(r["start"], 16), int(r["end"], 16)) for r in rows)
        # rows tile the ranges: merge both and compare
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
# maps just read, and the anchor, as RANGEs) or maps (the same as --maps -).
churn_run() {
	local n=$1 mode=$2 advice=$3 s0 rc=0 args=()
	local base="$BATS_TEST_TMPDIR/run-$n"
	case $mode in
	select)
		args=(--select all)
		;;
	ranges | maps)
		{
			arena_lines "/proc/$TARGET_PID/maps"
			echo "$ANCHOR"
		} >"$base.ranges"
		if [ "$mode" = ranges ]; then
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
	local n=0 advice mode round
	for round in 1 2 3 4; do
		for advice in cold pageout willneed; do
			for mode in select ranges maps; do
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
		map({(.[0]): length}) | add'
}
