#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Choosing what to advise: RANGE forms, --maps input, selectors, targets.

load test_helper

bats_require_minimum_version 1.5.0

teardown() { stop_targets; }

# hexadd HEX BYTES: HEX + BYTES, in hexadecimal without 0x.
hexadd() { printf '%x\n' $((0x$1 + $2)); }

# rows: "START END STATUS" for every row of the JSON table in $output.
rows() { jq -r '.pmadvise[] | "\(.start) \(.end) \(.status)"' <<<"$output"; }

# has_row START / lacks_row START: whether the JSON in $output has a row starting there.
has_row() {
	jq -e --arg s "$1" 'any(.pmadvise[]; .start == $s)' <<<"$output" >/dev/null
}
lacks_row() {
	jq -e --arg s "$1" 'all(.pmadvise[]; .start != $s)' <<<"$output" >/dev/null
}

# every_row JQ-CONDITION: a non-empty table whose every row satisfies it.
every_row() {
	jq -e ".pmadvise | length > 0 and all(.[]; $1)" <<<"$output" >/dev/null
}

# dry_select ARG...: --dry-run the latest target with ARGs (selectors, ranges);
# the JSON rows (sizes in bytes) are left in $output.
dry_select() {
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" --dry-run -J -b \
		-o START,END,SIZE,PERMS,INODE,PATH,STATUS cold "$@"
	[ "$status" -eq 0 ]
	every_row '.status == "dry-run"'
}

# maps_starts PID: start addresses of PID's mappings, [vvar]-like ones left out.
maps_starts() {
	awk '$6 !~ /^\[(vvar|vvar_vclock|vsyscall)\]$/ { split($1, a, "-"); print a[1] }' "/proc/$1/maps"
}

@test "START-END advises exactly that range" {
	start_target file=4M file=4M
	local file end
	file=$(region_start file)
	end=$(hexadd "$file" $((1 << 20)))

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J pageout "$file-$end"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$file $end ok" ]
	# the first MiB is paged out, the other 3 MiB and the other file stay
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 3072 ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -ge 3056 ]
	[ "$(smaps_field "$TARGET_PID" "$(region_start file.2)" Rss)" -eq 4096 ]
}

@test "START+SIZE takes a decimal size with a suffix" {
	start_target file=4M
	local file
	file=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J pageout "$file+1M"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$file $(hexadd "$file" $((1 << 20))) ok" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 3072 ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -ge 3056 ]
}

@test "START+SIZE takes a 0x hexadecimal size" {
	start_target file=4M
	local file
	file=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J pageout "0x$file+0x200000"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$file $(hexadd "$file" $((2 << 20))) ok" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 2048 ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -ge 2032 ]
}

@test "an ADDR inside a mapping advises the whole mapping" {
	start_target file=4M
	local file
	file=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J pageout "$(hexadd "$file" 0x1234)"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$file $(region_end file) ok" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 16 ]
}

@test "a range over two adjacent mappings gives one row per mapping" {
	start_target many=2
	local start middle end
	start=$(region_start many)
	middle=$(hexadd "$start" "$(getconf PAGESIZE)")
	end=$(region_end many)
	# the two pages really are two VMAs with different permissions
	grep -q "^$start-$middle rw-p " "/proc/$TARGET_PID/maps"
	grep -q "^$middle-$end r--p " "/proc/$TARGET_PID/maps"

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J cold "$start-$end"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$start $middle ok
$middle $end ok" ]
	[ "$(jq -r '[.pmadvise[].perms] | join(" ")' <<<"$output")" = "rw-p r--p" ]
}

@test "the unmapped middle of a range gets an unmapped row and exit 64" {
	local start page first second end
	page=$(getconf PAGESIZE)
	start_target hole=$((3 * page))
	start=$(region_start hole)
	first=$(hexadd "$start" "$page")
	second=$(hexadd "$start" $((2 * page)))
	end=$(region_end hole)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -o +ERRNO cold "$start-$end"
	[ "$status" -eq 64 ]
	[ "$(rows)" = "$start $first ok
$first $second unmapped
$second $end ok" ]
	[ "$(jq -r '.pmadvise[1].errno' <<<"$output")" = ENOMEM ]
	[[ "$stderr" == *"PID $TARGET_PID: $first-$second: nothing is mapped there"* ]]
}

@test "--select all selects every mapping but the kernel's special ones" {
	start_target file=1M anon=1M
	dry_select -s all
	[ "$(jq -r '.pmadvise[].start' <<<"$output")" = "$(maps_starts "$TARGET_PID")" ]
}

@test "--select all never selects [vvar], [vvar_vclock] or [vsyscall]" {
	start_target anon=1M
	grep -Eq '\[(vvar|vvar_vclock|vsyscall)\]$' "/proc/$TARGET_PID/maps"
	dry_select -s all
	every_row '.path != "[vvar]" and .path != "[vvar_vclock]" and .path != "[vsyscall]"'
}

@test "--select anon selects mappings without a backing file only" {
	start_target file=1M anon=1M
	dry_select -s anon
	every_row '.inode == 0 and (.path == null or .path == "[heap]" or .path == "[stack]"
		or (.path | startswith("[anon:")))'
	has_row "$(region_start anon)"
	lacks_row "$(region_start file)"
}

@test "--select file selects file-backed mappings only" {
	start_target file=1M anon=1M
	dry_select -s file
	every_row '.inode != 0 and (.path | startswith("/"))'
	has_row "$(region_start file)"
	lacks_row "$(region_start anon)"
}

@test "--select heap selects the [heap] alone" {
	start_target anon=1M
	dry_select -s heap
	[ "$(rows)" = "$(awk '$6 == "[heap]" { sub(/-/, " ", $1); print $1 " dry-run" }' \
		"/proc/$TARGET_PID/maps")" ]
	every_row '.path == "[heap]"'
}

@test "--select stack selects the [stack] alone" {
	start_target anon=1M
	dry_select -s stack
	[ "$(rows)" = "$(awk '$6 == "[stack]" { sub(/-/, " ", $1); print $1 " dry-run" }' \
		"/proc/$TARGET_PID/maps")" ]
	every_row '.path == "[stack]"'
}

@test "--select private selects private mappings only" {
	start_target file-shared=1M anon=1M file=1M
	dry_select -s private
	every_row '.perms | endswith("p")'
	has_row "$(region_start anon)"
	has_row "$(region_start file)"
	lacks_row "$(region_start file-shared)"
}

@test "--select shared selects shared mappings only" {
	start_target file-shared=1M anon=1M file=1M
	dry_select -s shared
	every_row '.perms | endswith("s")'
	has_row "$(region_start file-shared)"
	lacks_row "$(region_start anon)"
	lacks_row "$(region_start file)"
}

@test "--select path=GLOB selects the mappings of matching files" {
	start_target file=1M file-shared=1M anon=1M
	dry_select -s "path=$BATS_TEST_TMPDIR/maptarget-*.dat"
	[ "$(jq -r '.pmadvise[].path' <<<"$output" | sort)" = \
		"$(printf '%s\n' "$(region_path file)" "$(region_path file-shared)" | sort)" ]
	has_row "$(region_start file)"
	has_row "$(region_start file-shared)"
}

@test "--select perms=PATTERN matches the permissions as a glob" {
	start_target file=1M file-shared=1M anon=1M
	dry_select -s 'perms=r?-p'
	every_row '.perms == "r--p" or .perms == "rw-p"'
	has_row "$(region_start file)"
	has_row "$(region_start anon)"
	lacks_row "$(region_start file-shared)"
	# the PROT_NONE guard page before the anonymous region is ---p
	lacks_row "$(hexadd "$(region_start anon)" -"$(getconf PAGESIZE)")"
}

@test "--select min-size= selects mappings at least that large" {
	start_target anon=1M many=2
	dry_select -s min-size=1M
	every_row '.size >= 1048576'
	has_row "$(region_start anon)"
	lacks_row "$(region_start many)"
}

@test "--select max-size= selects mappings at most that large" {
	start_target anon=1M many=2
	dry_select -s max-size=4K
	every_row '.size <= 4096'
	has_row "$(region_start many)"
	lacks_row "$(region_start anon)"
}

@test "comma-separated selector terms must all hold" {
	start_target anon=1M file=1M many=2
	dry_select -s anon,min-size=1M
	every_row '.inode == 0 and .size >= 1048576'
	has_row "$(region_start anon)"
	lacks_row "$(region_start file)"
	lacks_row "$(region_start many)"
}

@test "repeated --select options select the union" {
	start_target anon=1M
	dry_select -s heap -s stack
	[ "$(jq -r '[.pmadvise[].path] | join(" ")' <<<"$output")" = "[heap] [stack]" ]
}

@test "--exclude removes mappings from a --select" {
	start_target file=1M file-shared=1M
	dry_select -s "path=$BATS_TEST_TMPDIR/maptarget-*.dat" -x shared
	[ "$(rows)" = "$(region_start file) $(region_end file) dry-run" ]
}

@test "--exclude alone selects everything but the excluded" {
	start_target file=1M anon=1M
	dry_select -x anon
	local expected
	expected=$(awk '$6 !~ /^\[(vvar|vvar_vclock|vsyscall)\]$/ &&
		!($5 == 0 && ($6 == "" || $6 == "[heap]" || $6 == "[stack]" || $6 ~ /^\[anon:/)) {
			split($1, a, "-"); print a[1] }' "/proc/$TARGET_PID/maps")
	[ -n "$expected" ]
	[ "$(jq -r '.pmadvise[].start' <<<"$output")" = "$expected" ]
	has_row "$(region_start file)"
	lacks_row "$(region_start anon)"
}

@test "a RANGE with --select advises only the selected mappings inside it" {
	start_target many=2
	local page start end
	page=$(getconf PAGESIZE)
	start=$(region_start many)
	end=$(region_end many)
	# from guard page to guard page: four mappings, one of them rw-p
	dry_select -s perms=rw-p "$(hexadd "$start" -"$page")-$(hexadd "$end" "$page")"
	[ "$(rows)" = "$start $(hexadd "$start" "$page") dry-run" ]
}

@test "--maps - reads maps lines from a pipe" {
	start_target file=4M file=4M
	local file
	file=$(region_start file)

	output=$(grep -F "$(region_path file)" "/proc/$TARGET_PID/maps" |
		"$PMADVISE" -p "$TARGET_PID" -J pageout --maps -)
	[ "$(rows)" = "$file $(region_end file) ok" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 16 ]
	[ "$(smaps_field "$TARGET_PID" "$(region_start file.2)" Rss)" -eq 4096 ]
}

@test "--maps FILE takes bare START-END lines" {
	start_target file=4M file=4M
	local file file2 mid list="$BATS_TEST_TMPDIR/ranges"
	file=$(region_start file)
	file2=$(region_start file.2)
	mid=$(hexadd "$file" $((1 << 20)))
	printf '%s-%s\n\n%s-%s\n' "$file" "$mid" "$file2" "$(region_end file.2)" >"$list"

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J pageout --maps "$list"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$file $mid ok
$file2 $(region_end file.2) ok" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -ge 3056 ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 3072 ]
	[ "$(smaps_field "$TARGET_PID" "$file2" Rss)" -le 16 ]
}

@test "-p A,B advises both processes and shows a PID column" {
	local pid1 pid2 file1 file2
	start_target file=1M
	pid1=$TARGET_PID
	file1=$(region_start file)
	start_target file=1M
	pid2=$TARGET_PID
	file2=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$pid1,$pid2" -J \
		-s "path=$BATS_TEST_TMPDIR/maptarget-*.dat" pageout
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[0] | keys_unsorted[0]' <<<"$output")" = pid ]
	[ "$(jq -r '.pmadvise[] | "\(.pid) \(.start) \(.status)"' <<<"$output")" = \
		"$pid1 $file1 ok
$pid2 $file2 ok" ]
	[ "$(smaps_field "$pid1" "$file1" Rss)" -le 16 ]
	[ "$(smaps_field "$pid2" "$file2" Rss)" -le 16 ]
}

@test "-p A -p B advises both processes and shows a PID column" {
	local pid1 pid2 file1 file2
	start_target file=1M
	pid1=$TARGET_PID
	file1=$(region_start file)
	start_target file=1M
	pid2=$TARGET_PID
	file2=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$pid1" -p "$pid2" -r \
		-s "path=$BATS_TEST_TMPDIR/maptarget-*.dat" pageout
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "PID START END SIZE PERMS ADVISED STATUS PATH" ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[1]}" == "$pid1 $file1 "*" ok $BATS_TEST_TMPDIR/maptarget-$pid1-0.dat" ]]
	[[ "${lines[2]}" == "$pid2 $file2 "*" ok $BATS_TEST_TMPDIR/maptarget-$pid2-0.dat" ]]
	[ "$(smaps_field "$pid1" "$file1" Rss)" -le 16 ]
	[ "$(smaps_field "$pid2" "$file2" Rss)" -le 16 ]
}

@test "--pidfd advises the process behind an inherited pidfd" {
	start_target file=4M
	local file
	file=$(region_start file)

	run --separate-stderr python3 -c '
import os, subprocess, sys
fd = os.pidfd_open(int(sys.argv[1]))
sys.exit(subprocess.run([sys.argv[2], "--pidfd", str(fd), "-J", "pageout", sys.argv[3]],
                        pass_fds=[fd]).returncode)' "$TARGET_PID" "$PMADVISE" "$file"
	[ "$status" -eq 0 ]
	[ "$(rows)" = "$file $(region_end file) ok" ]
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -le 16 ]
}

@test "a selection that matches nothing is an error and advises nothing" {
	start_target anon=1M
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -s 'path=/no/such/file*' cold
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	grep -q "nothing selected" "$BATS_TEST_TMPDIR/cmd.out"
	[ "$(smaps_field "$TARGET_PID" "$(region_start anon)" Referenced)" -gt 0 ]
}
