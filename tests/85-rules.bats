#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# -R, --rule SELECTOR=ADVICE: several advices in one run. Rules are tried in
# the order given and each piece takes the advice of the first rule that
# selects it; a range rule splits a mapping; one maps read, one pass, pieces
# batched per advice.

load test_helper

bats_require_minimum_version 1.5.0

# process_madvise's per-call limit on iovecs, as the kernel has it
UIO_MAXIOV=1024

teardown() { stop_targets; }

# hexadd HEX BYTES: HEX + BYTES, in hexadecimal without 0x.
hexadd() { printf '%x\n' $((0x$1 + $2)); }

# field_at START FIELD: FIELD of the JSON row in $output that starts at START
# (empty when there is no such row; several lines when there are several).
field_at() {
	jq -r --arg s "$1" --arg f "$2" '.pmadvise[] | select(.start == $s) | .[$f] // ""' <<<"$output"
}

# nrows: the number of rows of the JSON table in $output.
nrows() { jq '.pmadvise | length' <<<"$output"; }

# dry_rules ARG...: --dry-run the latest target with ARGs (rules, ranges,
# selectors); the JSON rows, sizes in bytes, are left in $output.
dry_rules() {
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" --dry-run -J -b \
		-o START,END,SIZE,PERMS,PATH,ADVICE,RULE,STATUS "$@"
	echo "status $status; stderr: $stderr"
}

@test "two rules on one target: anon rows are paged out, file rows go cold, each for real" {
	start_target anon=4M file=4M file=4M
	local anon file file2 path2
	anon=$(region_start anon)
	file=$(region_start file)
	file2=$(region_start file.2)
	path2=$(region_path file.2)
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -eq 4096 ]
	[ "$(smaps_field "$TARGET_PID" "$file" Referenced)" -gt 0 ]
	[ "$(smaps_field "$TARGET_PID" "$file2" Rss)" -eq 4096 ]

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b \
		-o START,END,PERMS,PATH,ADVICE,ADVISED,STATUS \
		--rule "path=$path2=pageout" --rule 'anon,private=pageout' --rule file=cold
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	jq -e '.pmadvise | length > 0 and all(.[]; .status == "ok" and .advised > 0)' <<<"$output"
	# every anonymous row (no path, or [heap], [stack]...) carries pageout
	jq -e '[.pmadvise[] | select(.path == null or (.path | startswith("[")))] |
		length > 2 and all(.[]; .advice == "pageout")' <<<"$output"
	# every file row carries cold, but the file of the earlier path= rule
	jq -e --arg p2 "$path2" '[.pmadvise[] | select(.path != null and (.path | startswith("/")))
		| select(.path != $p2)] | length > 1 and all(.[]; .advice == "cold")' <<<"$output"
	[ "$(field_at "$anon" advice)" = pageout ]
	[ "$(field_at "$file" advice)" = cold ]
	[ "$(field_at "$file2" advice)" = pageout ]
	[ "$(field_at "$file" advised)" -eq 4194304 ]
	[ "$(field_at "$file2" advised)" -eq 4194304 ]

	# the effects are those of two different advices:
	# cold keeps the file's pages resident and clears their Referenced bits,
	[ "$(smaps_field "$TARGET_PID" "$file" Rss)" -eq 4096 ]
	[ "$(smaps_field "$TARGET_PID" "$file" Referenced)" -eq 0 ]
	# pageout drops the other file's clean pages (a few pages of slack at most)
	[ "$(smaps_field "$TARGET_PID" "$file2" Rss)" -le 16 ]
}

@test "rule order matters: swapping two overlapping rules swaps the advice of the overlap only" {
	start_target anon=1M file=1M anon=8K
	local big file small
	big=$(region_start anon)
	file=$(region_start file)
	small=$(region_start anon.2)

	dry_rules -R anon=cold -R min-size=1M=pageout
	[ "$status" -eq 0 ]
	local first=$output
	[ "$(field_at "$big" advice) $(field_at "$big" rule)" = "cold 1" ]
	[ "$(field_at "$file" advice) $(field_at "$file" rule)" = "pageout 2" ]
	[ "$(field_at "$small" advice) $(field_at "$small" rule)" = "cold 1" ]

	dry_rules -R min-size=1M=pageout -R anon=cold
	[ "$status" -eq 0 ]
	# the overlap (anonymous and at least 1M) changes sides...
	[ "$(field_at "$big" advice) $(field_at "$big" rule)" = "pageout 1" ]
	# ...what only one rule selects keeps its advice
	[ "$(field_at "$file" advice) $(field_at "$file" rule)" = "pageout 1" ]
	[ "$(field_at "$small" advice) $(field_at "$small" rule)" = "cold 2" ]
	# the same pieces either way, and exactly those that both rules select
	# (anonymous and 1M or more) changed advice
	jq -e -n --argjson a "$first" --argjson b "$output" '
		def anon: .path == null or (.path | startswith("["));
		[$a.pmadvise, $b.pmadvise] | transpose
		| length > 3 and all(.[]; .[0].start == .[1].start and
			((.[0].advice != .[1].advice) == (.[0] | anon and .size >= 1048576)))'
}

@test "a RANGE rule before a selector rule wins for its range; the rest of the mapping follows the selector" {
	start_target anon=1M
	local anon end mid
	anon=$(region_start anon)
	end=$(region_end anon)
	mid=$(hexadd "$anon" $((256 * 1024)))

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -J -b -o START,END,ADVICE,ADVISED,STATUS,RULE \
		-R "$anon+256K=cold" -R anon=pageout "$anon"
	echo "$output"
	[ "$status" -eq 0 ]
	# one mapping, two rows: the range under cold, the rest under pageout
	[ "$(nrows)" -eq 2 ]
	[ "$(field_at "$anon" end) $(field_at "$anon" advice) $(field_at "$anon" rule)" = "$mid cold 1" ]
	[ "$(field_at "$anon" advised) $(field_at "$anon" status)" = "262144 ok" ]
	[ "$(field_at "$mid" end) $(field_at "$mid" advice) $(field_at "$mid" rule)" = "$end pageout 2" ]
	[ "$(field_at "$mid" advised) $(field_at "$mid" status)" = "786432 ok" ]
}

@test "a RANGE rule in the middle of a mapping gives three rows; after the selector rule it selects nothing" {
	start_target anon=1M
	local anon end a b
	anon=$(region_start anon)
	end=$(region_end anon)
	a=$(hexadd "$anon" $((256 * 1024)))
	b=$(hexadd "$anon" $((512 * 1024)))

	dry_rules -R "$a-$b=willneed" -R anon=cold "$anon"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[] | "\(.start) \(.end) \(.advice) \(.rule)"' <<<"$output")" = \
	  "$anon $a cold 2
$a $b willneed 1
$b $end cold 2" ]

	# the first rule that selects a piece wins: the range rule comes too late
	dry_rules -R anon=cold -R "$a-$b=willneed" "$anon"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[] | "\(.start) \(.end) \(.advice) \(.rule)"' <<<"$output")" = \
	  "$anon $end cold 1" ]
	grep -qF -- "--rule '$a-$b=willneed' selects nothing" <<<"$stderr"
}

@test "the unmapped part of a range rule is an unmapped row with no syscall for it" {
	start_target hole=12K
	local start end gap gap_end
	start=$(region_start hole)
	end=$(region_end hole)
	gap=$(hexadd "$start" 4096)
	gap_end=$(hexadd "$start" 8192)

	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -J -b \
		-o START,END,ADVICE,RULE,ADVISED,STATUS,ERRNO -R "$start-$end=cold" -R anon=pageout
	[ "$status" -eq 64 ]
	output=$(sed -n '/^{/,/^}/p' "$BATS_TEST_TMPDIR/cmd.out")
	echo "$output"
	[ "$(field_at "$start" end) $(field_at "$start" advice) $(field_at "$start" status)" = "$gap cold ok" ]
	[ "$(field_at "$gap" end) $(field_at "$gap" status) $(field_at "$gap" errno)" = \
	  "$gap_end unmapped ENOMEM" ]
	[ "$(field_at "$gap" rule)" -eq 1 ]
	[ "$(field_at "$gap" advised)" -eq 0 ]
	[ "$(field_at "$gap_end" end) $(field_at "$gap_end" advice) $(field_at "$gap_end" status)" = \
	  "$end cold ok" ]
	grep -q "PID $TARGET_PID: $gap-$gap_end: nothing is mapped there" "$BATS_TEST_TMPDIR/cmd.out"
	# the cold calls carried the two mapped pages and nothing of the hole
	[ "$(grep 'MADV_COLD' "$BATS_TEST_TMPDIR/strace.log" | grep -o 'iov_len=[0-9]*' |
		awk -F= '{ sum += $2 } END { print sum + 0 }')" -eq 8192 ]
}

@test "syscalls: ceil(pieces/1024) ranged calls per advice, one probe per advice" {
	start_target many=3000
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -r -n -o ADVICE,STATUS \
		-R 'perms=rw?p=cold' -R 'perms=r--p=pageout'
	local calls=$output log="$BATS_TEST_TMPDIR/strace.log" ncold npageout
	[ "$status" -eq 0 ]
	# every line is a row, every row ok
	[ "$(grep -cvE '^(cold|pageout) +ok$' "$BATS_TEST_TMPDIR/cmd.out")" -eq 0 ]
	ncold=$(grep -c '^cold ' "$BATS_TEST_TMPDIR/cmd.out")
	npageout=$(grep -c '^pageout ' "$BATS_TEST_TMPDIR/cmd.out")
	echo "rows: $ncold cold, $npageout pageout; calls: $calls"
	[ "$ncold" -gt 1500 ]
	[ "$npageout" -gt 1500 ]
	[ "$(grep -c 'process_madvise([0-9]*, \[{.*MADV_COLD' "$log")" -eq \
	  $(((ncold + UIO_MAXIOV - 1) / UIO_MAXIOV)) ]
	[ "$(grep -c 'process_madvise([0-9]*, \[{.*MADV_PAGEOUT' "$log")" -eq \
	  $(((npageout + UIO_MAXIOV - 1) / UIO_MAXIOV)) ]
	[ "$(grep -c 'process_madvise([0-9]*, \[\], 0, MADV_COLD' "$log")" -eq 1 ]
	[ "$(grep -c 'process_madvise([0-9]*, \[\], 0, MADV_PAGEOUT' "$log")" -eq 1 ]
	[ "$calls" -eq $((2 + (ncold + UIO_MAXIOV - 1) / UIO_MAXIOV + (npageout + UIO_MAXIOV - 1) / UIO_MAXIOV)) ]
}

@test "rules read the target's maps once, through one pidfd" {
	start_target anon=1M file=1M many=10
	local log="$BATS_TEST_TMPDIR/open.log" first=willneed
	# (a kernel without remote willneed would refuse that rule)
	kernel_has remote-willneed || first=cold
	run --separate-stderr strace -f -qq -o "$log" \
		-e trace=open,openat,openat2,pidfd_open \
		"$PMADVISE" -p "$TARGET_PID" -q -R "$(region_start anon)+8K=$first" \
		-R 'anon,private=pageout' -R file=cold -R 'perms=r--p=cold'
	[ "$status" -eq 0 ]
	grep -E '"(/proc/[0-9]+/)?maps"' "$log"
	[ "$(grep -cE '"(/proc/[0-9]+/)?maps"' "$log")" -eq 1 ]
	[ "$(grep -c 'pidfd_open(' "$log")" -eq 1 ]
}

@test "a rule that is not SELECTOR=ADVICE is a usage error, before any syscall" {
	start_target anon=1M
	local rule
	for rule in anon '=cold' 'anon='; do
		run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" --rule "$rule"
		[ "$status" -eq 1 ]
		[ "$output" -eq 0 ]
		cat "$BATS_TEST_TMPDIR/cmd.out"
		grep -qF "invalid --rule '$rule': expected SELECTOR=ADVICE" "$BATS_TEST_TMPDIR/cmd.out"
	done
	# a selector that is neither a range nor an expression
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -R anon=cold -R 'bogus=cold'
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	grep -qF "invalid --rule 'bogus=cold'" "$BATS_TEST_TMPDIR/cmd.out"
}

@test "an unknown advice in a rule is a usage error naming the rule, before any syscall" {
	start_target anon=1M
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -R file=cold -R anon=coldest
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	cat "$BATS_TEST_TMPDIR/cmd.out"
	grep -qF "unknown advice 'coldest' in --rule 'anon=coldest'" "$BATS_TEST_TMPDIR/cmd.out"
	# destructive advice is refused in a rule as anywhere
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -R anon=dontneed
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	grep -qF "never given" "$BATS_TEST_TMPDIR/cmd.out"
}

@test "a rule together with a positional ADVICE is a usage error naming --rule" {
	start_target anon=1M
	local advice
	for advice in cold PAGEOUT MADV_WILLNEED; do
		run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -R anon=cold "$advice" \
			"$(region_start anon)"
		[ "$status" -eq 1 ]
		[ "$output" -eq 0 ]
		cat "$BATS_TEST_TMPDIR/cmd.out"
		grep -qF -- "--rule" "$BATS_TEST_TMPDIR/cmd.out"
		grep -qF "'$advice'" "$BATS_TEST_TMPDIR/cmd.out"
	done
}

@test "--dry-run shows ADVICE and the winning rule's 1-based index in the RULE column" {
	start_target anon=1M file=1M
	local anon file
	anon=$(region_start anon)
	file=$(region_start file)

	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" --dry-run \
		-R 'path=/nonexistent/*=willneed' -R file=pageout -R anon=cold
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} =~ ^\ *START\ +END\ +SIZE\ +PERMS\ +ADVICE\ +RULE\ +ADVISED\ +STATUS\ +PATH$ ]]
	grep -Eq "^ *$anon +$(region_end anon) +1M +rw-p +cold +3 +0B +dry-run *$" <<<"$output"
	grep -Eq "^ *$file +$(region_end file) +1M +r--p +pageout +2 +0B +dry-run +$(region_path file)$" \
		<<<"$output"
	# every row names rule 2 or 3, never the one that selects nothing
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" --dry-run -J \
		-R 'path=/nonexistent/*=willneed' -R file=pageout -R anon=cold
	jq -e '.pmadvise | length > 2 and all(.[]; (.rule == 2 and .advice == "pageout")
		or (.rule == 3 and .advice == "cold"))' <<<"$output"

	# a real run shows ADVICE by default, RULE only when asked for
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -R anon=cold "$anon"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} =~ ^\ *START\ +END\ +SIZE\ +PERMS\ +ADVICE\ +ADVISED\ +STATUS\ +PATH$ ]]
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" -r -n -o START,RULE -R file=cold -R anon=cold "$anon"
	[ "$status" -eq 0 ]
	[ "$output" = "$anon 2" ]
}

@test "a rule that selects nothing is warned about once; the run still succeeds" {
	start_target anon=1M
	local anon
	anon=$(region_start anon)
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -r -n -o START,ADVICE,STATUS \
		-R 'path=/nonexistent/*=pageout' -R anon=cold -R 'perms=rwxs=willneed'
	[ "$status" -eq 0 ]
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$(grep -c "^pmadvise: --rule 'path=/nonexistent/\*=pageout' selects nothing$" \
		"$BATS_TEST_TMPDIR/cmd.out")" -eq 1 ]
	[ "$(grep -c "^pmadvise: --rule 'perms=rwxs=willneed' selects nothing$" \
		"$BATS_TEST_TMPDIR/cmd.out")" -eq 1 ]
	[ "$(grep -c 'selects nothing' "$BATS_TEST_TMPDIR/cmd.out")" -eq 2 ]
	grep -qx "$anon cold ok" "$BATS_TEST_TMPDIR/cmd.out"
	# only the rule that selected something was advised
	grep -q 'MADV_COLD' "$BATS_TEST_TMPDIR/strace.log"
	[ "$(grep -cE 'MADV_PAGEOUT|MADV_WILLNEED' "$BATS_TEST_TMPDIR/strace.log")" -eq 0 ]
}

@test "when no rule selects anything the run fails with 'nothing selected' and advises nothing" {
	start_target anon=1M
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" \
		-R 'path=/nonexistent/*=pageout' -R 'perms=rwxs=cold'
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	cat "$BATS_TEST_TMPDIR/cmd.out"
	grep -q "PID $TARGET_PID: nothing selected" "$BATS_TEST_TMPDIR/cmd.out"
	grep -qF -- "--rule 'path=/nonexistent/*=pageout' selects nothing" "$BATS_TEST_TMPDIR/cmd.out"
	# an --exclude that takes away all that the rules select fails the same way
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" -x all -R anon=cold
	[ "$status" -eq 1 ]
	[ "$output" -eq 0 ]
	grep -q "PID $TARGET_PID: nothing selected" "$BATS_TEST_TMPDIR/cmd.out"
}

@test "a rule splits at its last '=': path=GLOB=ADVICE and perms=PATTERN=ADVICE" {
	start_target file=1M anon=1M
	local file path
	file=$(region_start file)
	path=$(region_path file)

	dry_rules -R "path=*${path##*/}=cold"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[] | "\(.start) \(.path) \(.advice) \(.rule)"' <<<"$output")" = \
	  "$file $path cold 1" ]

	dry_rules -R 'perms=r--p=pageout' -R 'perms=rw?p=cold'
	[ "$status" -eq 0 ]
	jq -e '.pmadvise | length > 2 and all(.[]; (.perms == "r--p" and .advice == "pageout")
		or (.perms == "rw-p" and .advice == "cold"))' <<<"$output"
	[ "$(field_at "$file" advice)" = pageout ]
	[ "$(field_at "$(region_start anon)" advice)" = cold ]
}

@test "--exclude removes pieces from every rule, range rules included" {
	start_target anon=1M file=1M
	local anon file path
	anon=$(region_start anon)
	file=$(region_start file)
	path=$(region_path file)

	# without --exclude, the range rules take their mappings
	dry_rules -R "$file=willneed" -R "$anon+8K=cold" -R 'all=pageout'
	[ "$status" -eq 0 ]
	[ "$(field_at "$file" advice)" = willneed ]
	[ "$(field_at "$anon" advice)" = cold ]

	dry_rules -x "path=$path" -x anon -R "$file=willneed" -R "$anon+8K=cold" -R 'all=pageout'
	[ "$status" -eq 0 ]
	[ -z "$(field_at "$file" advice)" ]
	[ -z "$(field_at "$anon" advice)" ]
	# no piece of an excluded mapping is left, under any rule; the rest is there
	jq -e --arg p "$path" '.pmadvise | length > 0 and all(.[]; .path != $p and .path != null
		and .path != "[heap]" and .path != "[stack]" and .advice == "pageout")' <<<"$output"
	grep -qF -- "--rule '$file=willneed' selects nothing" <<<"$stderr"
	grep -qF -- "--rule '$anon+8K=cold' selects nothing" <<<"$stderr"
}

@test "positional RANGEs, --select and --maps bound where the rules apply" {
	start_target anon=1M file=1M anon=8K
	local anon file small
	anon=$(region_start anon)
	file=$(region_start file)
	small=$(region_start anon.2)

	dry_rules -R file=cold -R anon=pageout "$anon+8K" "$file"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[] | "\(.start) \(.end) \(.advice) \(.rule)"' <<<"$output")" = \
	  "$file $(region_end file) cold 1
$anon $(hexadd "$anon" 8192) pageout 2" ]

	# --select: intersection with what the rules pick
	dry_rules -R file=cold -R anon=pageout -s min-size=1M -s "path=$(region_path file)"
	[ "$status" -eq 0 ]
	[ "$(field_at "$anon" advice)" = pageout ]
	[ "$(field_at "$file" advice)" = cold ]
	[ -z "$(field_at "$small" advice)" ]
	jq -e '.pmadvise | all(.[]; .size >= 1048576)' <<<"$output"

	# --maps lines bound the rules as RANGEs do
	run --separate-stderr "$PMADVISE" -p "$TARGET_PID" --dry-run -J -b -o START,END,ADVICE,RULE \
		-R file=cold -R anon=pageout --maps - <<<"$small-$(region_end anon.2)"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.pmadvise[] | "\(.start) \(.end) \(.advice) \(.rule)"' <<<"$output")" = \
	  "$small $(region_end anon.2) pageout 2" ]
}
