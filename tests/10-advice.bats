#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Each advice, checked by what it really does to the target's memory.

load test_helper

bats_require_minimum_version 1.5.0

teardown() { stop_targets; }

# row_of START: "END STATUS ADVISED" of the JSON row starting at START.
row_of() {
	jq -r --arg start "$1" \
		'.pmadvise[] | select(.start == $start) | "\(.end) \(.status) \(.advised)"' <<<"$output"
}

@test "pageout drops a private file mapping's pages and keeps anonymous memory (no swap)" {
	start_target file=4M anon=4M
	local file anon
	file=$(region_start file)
	anon=$(region_start anon)
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -eq 4096 ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq 4096 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b pageout "$file" "$anon"
	[ "$status" -eq 0 ]
	[ "$(row_of "$file")" = "$(region_end file) ok 4194304" ]
	[ "$(row_of "$anon")" = "$(region_end anon) ok 4194304" ]
	# file pages are clean: dropped (a few pages of slack at most)
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 16 ]
	# no swap: anonymous pages have nowhere to go
	[ "$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq 4096 ]
}

@test "cold clears the Referenced bits of an anonymous mapping and keeps it resident" {
	start_target anon=4M
	local anon rss
	anon=$(region_start anon)
	rss=$(smaps_field "$TARGET_PID" "$anon" Rss)
	[ "$rss" -eq 4096 ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Referenced)" -gt 0 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b cold "$anon"
	[ "$status" -eq 0 ]
	[ "$(row_of "$anon")" = "$(region_end anon) ok 4194304" ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Referenced)" -eq 0 ]
	[ "$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq "$rss" ]
}

@test "collapse turns an aligned anonymous mapping into transparent huge pages" {
	start_target aligned=4M
	local aligned
	aligned=$(region_start aligned)
	[ "$(smaps_field "$TARGET_PID" "$aligned" AnonHugePages)" -eq 0 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b collapse "$aligned"
	[ "$status" -eq 0 ]
	[ "$(row_of "$aligned")" = "$(region_end aligned) ok 4194304" ]
	[ "$(smaps_field "$TARGET_PID" "$aligned" AnonHugePages)" -eq 4096 ]
}

@test "willneed on a file mapping reports the whole mapping advised" {
	start_target file=4M
	local file
	file=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -b -r -n -o START,END,SIZE,ADVISED,STATUS \
		willneed "$file"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" = "$file $(region_end file) 4194304 4194304 ok" ]
	[ -z "$stderr" ]
}

@test "willneed reads a paged-out file back into the page cache" {
	command -v fincore >/dev/null || skip "fincore (util-linux) is not installed"
	start_target file=4M
	local file path i cached
	file=$(region_start file)
	path=$(region_path file)
	"$PMADVISE" -q -p "$TARGET_PID" pageout "$file"
	[ "$(fincore -b -n -o RES "$path" | tr -d ' ')" -eq 0 ]

	run "$PMADVISE" -q -p "$TARGET_PID" willneed "$file"
	[ "$status" -eq 0 ]
	# readahead completes asynchronously: poll for up to 5 s
	for ((i = 0; i < 100; i++)); do
		cached=$(fincore -b -n -o RES "$path" | tr -d ' ')
		[ "$cached" -eq 4194304 ] && break
		sleep 0.05
	done
	[ "$cached" -eq 4194304 ]
}
