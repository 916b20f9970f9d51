#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Output options: columns, JSON, raw, headings, bytes, quiet, dry-run, pipes.

load test_helper

bats_require_minimum_version 1.5.0

teardown() { stop_targets; }

CORE_COLUMNS="PID COMM START END SIZE PERMS OFFSET DEVICE INODE PATH ADVICE ADVISED STATUS ERRNO REASON"

@test "the default columns are START END SIZE PERMS ADVISED STATUS PATH" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	local -a header
	read -ra header <<<"${lines[0]}"
	[ "${header[*]}" = "START END SIZE PERMS ADVISED STATUS PATH" ]
}

@test "-o LIST prints exactly those columns, in that order" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -r -o STATUS,START,PATH \
		cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "STATUS START PATH" ]
	[ "${lines[1]}" = "ok $(region_start file) $(region_path file)" ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "-o +LIST appends columns to the default ones" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -r -o +ADVICE,COMM \
		cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "START END SIZE PERMS ADVISED STATUS PATH ADVICE COMM" ]
	[ "${lines[1]}" = "$(region_start file) $(region_end file) 4M r--p 4M ok $(region_path file) cold maptarget" ]
}

@test "-o +LIST keeps the PID column of several targets" {
	local pid1
	start_target anon=1M
	pid1=$TARGET_PID
	start_target anon=1M
	run --separate-stderr "$PMADVISE" -p "$pid1,$TARGET_PID" -r -o +ERRNO -s heap cold
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "PID START END SIZE PERMS ADVISED STATUS PATH ERRNO" ]
	[[ "${lines[1]}" == "$pid1 "* ]]
	[[ "${lines[2]}" == "$TARGET_PID "* ]]
}

@test "--output-all prints every column that --list-columns lists" {
	start_target file=4M
	local listed
	listed=$("$PMADVISE" -H -J | jq -r '[.columns[].name] | join(" ")')
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -r --output-all cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$listed" ]
}

@test "-H lists all 15 core columns" {
	run --separate-stderr "$PMADVISE" -H -J
	[ "$status" -eq 0 ]
	local listed name
	listed=" $(jq -r '[.columns[].name] | join(" ")' <<<"$output") "
	for name in $CORE_COLUMNS; do
		[[ "$listed" == *" $name "* ]] || {
			echo "column $name is not listed:$listed"
			false
		}
	done
}

@test "an unknown column is an error that names it" {
	start_target anon=1M
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -o START,BOGUS cold "$(region_start anon)"
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	grep -q "pmadvise: unknown column 'BOGUS'" "$BATS_TEST_TMPDIR/cmd.out"
}

@test "-J prints a JSON object whose pmadvise array holds the rows" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J cold "$(region_start file)"
	[ "$status" -eq 0 ]
	jq -e --arg start "$(region_start file)" --arg stop "$(region_end file)" \
		'.pmadvise | length == 1 and .[0].start == $start and .[0].end == $stop
			and .[0].status == "ok"' <<<"$output" >/dev/null
	[ "$(jq -r '.pmadvise[0] | keys_unsorted | join(" ")' <<<"$output")" = \
		"start end size perms advised status path" ]
}

@test "-J -b prints sizes, ADVISED and PID as JSON numbers" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b -o START,SIZE,ADVISED,PID \
		cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[0] | "\(.size|type) \(.advised|type) \(.pid|type)"' <<<"$output")" = \
		"number number number" ]
	[ "$(jq -r '.pmadvise[0] | "\(.size) \(.advised) \(.pid)"' <<<"$output")" = \
		"4194304 4194304 $TARGET_PID" ]
}

@test "-J without -b prints sizes as human-readable strings" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -o SIZE,ADVISED cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[0] | "\(.size|type) \(.size) \(.advised|type) \(.advised)"' <<<"$output")" = \
		"string 4M string 4M" ]
}

@test "-r prints cells separated by single spaces" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -r cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "START END SIZE PERMS ADVISED STATUS PATH" ]
	[ "${lines[1]}" = "$(region_start file) $(region_end file) 4M r--p 4M ok $(region_path file)" ]
}

@test "-n leaves out the header line" {
	start_target file=4M
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -n -r -o START,STATUS cold "$(region_start file)"
	[ "$status" -eq 0 ]
	[ "$output" = "$(region_start file) ok" ]
}

@test "-q prints nothing and still advises" {
	start_target file=4M
	local file
	file=$(region_start file)
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -eq 4096 ]
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -q pageout "$file"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 16 ]
}

@test "--dry-run prints dry-run rows and makes no process_madvise call" {
	start_target file=4M
	local file
	file=$(region_start file)
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" --dry-run -r -n -b \
		-o START,END,ADVISED,STATUS pageout "$file"
	[ "$status" -eq 0 ]
	[ "$output" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/cmd.out")" = "$file $(region_end file) 0 dry-run" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -eq 4096 ]
}

@test "output into a closed pipe ends quietly" {
	# more rows than a pipe buffer holds, so writing really hits the closed pipe
	start_target many=4000
	[ "$("$PMADVISE" -p "$TARGET_PID" --dry-run -s all cold | wc -c)" -gt 131072 ]
	local first
	# with SIGPIPE ignored pmadvise sees EPIPE itself (as under some supervisors)
	first=$(env --ignore-signal=PIPE "$PMADVISE" -p "$TARGET_PID" -s all cold \
		2>"$BATS_TEST_TMPDIR/stderr" | head -1)
	local -a header
	read -ra header <<<"$first"
	[ "${header[*]}" = "START END SIZE PERMS ADVISED STATUS PATH" ]
	[ ! -s "$BATS_TEST_TMPDIR/stderr" ] || {
		cat "$BATS_TEST_TMPDIR/stderr"
		false
	}
}

# same_as_terminal ARGS...: run pmadvise ARGS... into a pipe (where it prints
# a long table in slices of rows) and on a terminal wide enough for every row
# (where libsmartcols lays the rows out as one table); the bytes must be equal.
same_as_terminal() {
	local pipe=$BATS_TEST_TMPDIR/pipe.out tty=$BATS_TEST_TMPDIR/tty.out
	"$PMADVISE" "$@" >"$pipe"
	script -qec "stty cols 4000 rows 50; $(printf '%q ' "$PMADVISE" "$@")" /dev/null |
		tr -d '\r' >"$tty"
	[ "$(wc -l <"$pipe")" -gt 0 ]
	cmp "$pipe" "$tty" || {
		echo "pmadvise $*: the pipe and the terminal differ"
		diff "$pipe" "$tty" | head -5
		return 1
	}
}

@test "a table of more rows than a slice, into a pipe, is laid out as one table (as on a terminal)" {
	command -v script >/dev/null || skip "no script(1)"
	start_target anon=64M many=3000 file=1M
	local many anon opts
	many="$(region_start many)-$(region_end many)"
	anon="$(region_start anon)-$(region_end anon)"
	[ "$("$PMADVISE" -p "$TARGET_PID" --dry-run -n --select all cold | wc -l)" -gt 3000 ]
	for opts in "" "-n" "-o +RSS,RSS-AFTER,REFERENCED" "--output-all" "--output-all -b" \
		"-o SIZE" "-o PATH,STATUS" "-o START,SIZE,PATH -b"; do
		# shellcheck disable=SC2086 # opts are words
		same_as_terminal -p "$TARGET_PID" --dry-run --select all $opts cold
	done
	# the widest cells in the last rows: 3000 of 4096 bytes, then 67108864
	same_as_terminal -p "$TARGET_PID" --dry-run -b -o START,SIZE,STATUS cold "$many" "$anon"
	[ "$(tail -1 "$BATS_TEST_TMPDIR/pipe.out" | awk '{ print $2 }')" = 67108864 ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/pipe.out" | awk '{ print $2 }')" = 4096 ]
	# advised for real, measured, several targets
	start_target many=1500
	same_as_terminal -p "${TARGET_PIDS[0]}" -p "$TARGET_PID" --select all \
		-o +PID,RSS,RSS-AFTER cold
}

@test "a long table with paths libsmartcols encodes is still laid out as one table" {
	command -v script >/dev/null || skip "no script(1)"
	local dir="$BATS_TEST_TMPDIR/a\\xb é"
	mkdir -p "$dir"
	start_target many=2500 file=1M -d "$dir"
	same_as_terminal -p "$TARGET_PID" --dry-run --select all -o START,PATH,STATUS cold
	# the path was encoded (the backslash of "\x" as \x5c) and its column
	# is as wide as its widest cell
	grep -F 'a\x5cxb' "$BATS_TEST_TMPDIR/pipe.out"
	same_as_terminal -p "$TARGET_PID" --dry-run --select all -r cold
	grep -F 'a\x5cxb' "$BATS_TEST_TMPDIR/pipe.out"
}
