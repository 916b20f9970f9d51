#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Measured effect (SPEC §9): the RSS, SWAP, HUGE and REFERENCED columns and
# --summary, checked against /proc/PID/smaps and against what the advice does.
#
# Every test runs on both measurement paths: "scan" is the PAGEMAP_SCAN ioctl
# (chosen by default where the kernel has it), "read" the pagemap-entry
# fallback forced with PMADVISE_PAGEMAP=read. Test names and failure
# messages say which path failed.

bats_require_minimum_version 1.5.0

load test_helper

teardown() { stop_targets; }

PAGE=$(getconf PAGESIZE)

# pm_env PATH: the env(1) arguments that choose measurement path PATH.
pm_env() {
	case $1 in
	scan) echo "-u PMADVISE_PAGEMAP" ;;
	read) echo "PMADVISE_PAGEMAP=read" ;;
	*) echo "unknown measurement path '$1'" >&2; return 1 ;;
	esac
}

# run_pm PATH ARG...: run pmadvise on measurement path PATH, like
# `run --separate-stderr`, and log the command and its results (bats shows
# the log when the test fails).
run_pm() {
	local path=$1 envargs
	shift
	envargs=$(pm_env "$path")
	# shellcheck disable=SC2086 # envargs is one or two words on purpose
	run --separate-stderr env $envargs "$PMADVISE" "$@"
	printf '[%s] pmadvise %s\n  -> status %s\n  stdout:\n%s\n  stderr:\n%s\n' \
		"$path" "$*" "$status" "$output" "$stderr"
}

# expect PATH WHAT ACTUAL OP EXPECTED: test(1) ACTUAL OP EXPECTED; when it
# does not hold, say which path and what was wrong, and fail.
expect() {
	local path=$1 what=$2 actual=$3 op=$4 expected=$5
	if ! test "$actual" "$op" "$expected" 2>/dev/null; then
		echo "[$path path] $what: got '$actual', expected $op '$expected'" >&2
		return 1
	fi
}

# field N LINE: field N of a raw (-r) output line; empty cells count, so
# that a row with an empty measurement keeps its columns in place.
field() {
	awk -F '[ ]' -v n="$1" '{ print $n }' <<<"$2"
}

# collapse_region LABEL: make the latest target's aligned region LABEL huge
# (MADV_COLLAPSE), and check in smaps that it is.
collapse_region() {
	local start size_kb huge_kb
	start=$(region_start "$1")
	size_kb=$(((0x$(region_end "$1") - 0x$start) / 1024))
	# Without remote collapse, THP [always] made the region huge at its
	# first touch (maptarget wrote it), or nothing can.
	if ! kernel_has remote-collapse; then
		[ "$(smaps_field "$TARGET_PID" "$start" AnonHugePages)" -eq "$size_kb" ] ||
			skip "this kernel ($(uname -r)) lacks $(kernel_feature_text remote-collapse) and THP did not make $1 huge at first touch"
		return 0
	fi
	"$PMADVISE" -p "$TARGET_PID" -q collapse "$start" || {
		echo "setup: collapse of $1 failed" >&2
		return 1
	}
	huge_kb=$(smaps_field "$TARGET_PID" "$start" AnonHugePages)
	if [ "$huge_kb" -ne "$size_kb" ]; then
		echo "setup: $1 has AnonHugePages $huge_kb kB after collapse, not $size_kb kB" >&2
		return 1
	fi
}

# smaps_rows PID: "START END RSS HUGE SWAP" in bytes for every mapping of
# PID, addresses in lower case without leading zeros.
smaps_rows() {
	awk '
		function norm(a) { a = tolower(a); sub(/^0+/, "", a); return a == "" ? "0" : a }
		function flush() {
			if (start != "")
				printf "%s %s %.0f %.0f %.0f\n", start, end, rss, huge, swap
		}
		/^[0-9a-f]+-[0-9a-f]+ / {
			flush()
			split($1, r, "-")
			start = norm(r[1]); end = norm(r[2]); rss = huge = swap = -1
			next
		}
		$1 == "Rss:" { rss = $2 * 1024 }
		$1 == "AnonHugePages:" { huge = $2 * 1024 }
		$1 == "Swap:" { swap = $2 * 1024 }
		END { flush() }' "/proc/$1/smaps"
}

# hex_add HEX BYTES: HEX + BYTES, in hex without 0x.
hex_add() { printf '%x' $((0x$1 + $2)); }

#
# Whole mappings agree with smaps
#
whole_mappings_match_smaps() {
	local path=$1 smaps="$BATS_TEST_TMPDIR/smaps.rows" rows="$BATS_TEST_TMPDIR/pm.rows"
	local nsmaps row
	start_target anon=1M file=1M aligned=4M anon-half=1M zero=256K
	collapse_region aligned

	run_pm "$path" -p "$TARGET_PID" --select all --dry-run -b -r -n \
		-o START,END,RSS,HUGE,SWAP cold
	expect "$path" "exit status" "$status" -eq 0
	printf '%s\n' "$output" >"$rows"
	smaps_rows "$TARGET_PID" >"$smaps"

	# every mapping but the ones a selection skips is a row
	nsmaps=$(grep -cvE '^(ffffffffff600000 |.* \[vvar\]|.* \[vvar_vclock\])' \
		<(paste -d ' ' "$smaps" <(grep -E '^[0-9a-f]+-' "/proc/$TARGET_PID/maps" |
			awk '{ print $NF }')))
	expect "$path" "rows of --select all" "${#lines[@]}" -eq "$nsmaps"

	# every row: a whole mapping, with smaps' Rss, AnonHugePages and Swap
	awk -v path="$path" '
		function norm(a) { a = tolower(a); sub(/^0+/, "", a); return a == "" ? "0" : a }
		NR == FNR { end[$1] = $2; rss[$1] = $3; huge[$1] = $4; swap[$1] = $5; next }
		{
			s = norm($1); n++
			if (!(s in end)) {
				printf "[%s path] row \"%s\": no mapping starts there in smaps\n", path, $0
				bad++; next
			}
			if (norm($2) != end[s]) {
				printf "[%s path] row \"%s\": smaps mapping ends at %s\n", path, $0, end[s]
				bad++
			}
			if ($3 != rss[s] || $4 != huge[s] || $5 != swap[s]) {
				printf "[%s path] row \"%s\": smaps says RSS %s HUGE %s SWAP %s\n",
					path, $0, rss[s], huge[s], swap[s]
				bad++
			}
		}
		END {
			printf "[%s path] %d rows compared with smaps, %d differ\n", path, n, bad
			exit (bad > 0 || n == 0)
		}' "$smaps" "$rows" >&2

	# and the known regions have the values they were built with
	for row in "anon 1048576 0" "file 1048576 0" "aligned 4194304 4194304" \
		"anon-half 524288 0" "zero 0 0"; do
		set -- $row
		expect "$path" "RSS HUGE of region $1" \
			"$(awk -v s="$(region_start "$1")" '$1 == s { print $3, $4 }' "$rows")" \
			= "$2 $3"
	done
}

@test "whole-mapping rows: RSS, HUGE, SWAP equal smaps Rss, AnonHugePages, Swap [scan]" {
	whole_mappings_match_smaps scan
}

@test "whole-mapping rows: RSS, HUGE, SWAP equal smaps Rss, AnonHugePages, Swap [read]" {
	whole_mappings_match_smaps read
}

#
# Pieces: parts of mappings are measured exactly
#
half_touched_pieces() {
	local path=$1 start end mid half npages from to
	start_target anon-half=1M
	start=$(region_start anon-half)
	end=$(region_end anon-half)
	half=$(((0x$end - 0x$start) / 2))
	mid=$(hex_add "$start" "$half")

	run_pm "$path" -p "$TARGET_PID" --dry-run -b -r -n -o START,END,RSS cold "$start-$mid" "$mid-$end"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "number of rows" "${#lines[@]}" -eq 2
	expect "$path" "first half (written)" "${lines[0]}" = "$start $mid $half"
	expect "$path" "second half (never touched)" "${lines[1]}" = "$mid $end 0"

	# a piece from page 3 to three quarters: pages 3 .. half-1 were written
	npages=$(((0x$end - 0x$start) / PAGE))
	from=$(hex_add "$start" $((3 * PAGE)))
	to=$(hex_add "$start" $((npages * 3 / 4 * PAGE)))
	run_pm "$path" -p "$TARGET_PID" --dry-run -b -r -n -o START,END,RSS cold "$from-$to"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "piece across the written/untouched boundary" "$output" = \
		"$from $to $(((npages / 2 - 3) * PAGE))"
}

@test "a piece reports exactly the touched bytes of its part of a mapping [scan]" {
	half_touched_pieces scan
}

@test "a piece reports exactly the touched bytes of its part of a mapping [read]" {
	half_touched_pieces read
}

huge_pieces() {
	local path=$1 start end from to
	start_target aligned=4M
	collapse_region aligned
	start=$(region_start aligned)
	end=$(region_end aligned)

	# 1M into the first huge page to 1M into the second one
	from=$(hex_add "$start" $((1 << 20)))
	to=$(hex_add "$start" $((3 << 20)))
	run_pm "$path" -p "$TARGET_PID" --dry-run -b -r -n -o START,END,RSS,HUGE cold "$from-$to"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "2M piece across two huge pages" "$output" = "$from $to $((2 << 20)) $((2 << 20))"

	# one page in the middle of the last huge page
	from=$(hex_add "$start" $((3 << 20)))
	to=$(hex_add "$from" "$PAGE")
	run_pm "$path" -p "$TARGET_PID" --dry-run -b -r -n -o START,END,RSS,HUGE cold "$from-$to"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "one page of a huge page" "$output" = "$from $to $PAGE $PAGE"

	# two pieces of the same huge page, with a gap between them
	set -- "$(hex_add "$start" "$PAGE")-$(hex_add "$start" $((2 * PAGE)))" \
		"$(hex_add "$start" $((4 * PAGE)))-$(hex_add "$start" $((5 * PAGE)))"
	run_pm "$path" -p "$TARGET_PID" --dry-run -b -r -n -o RSS,HUGE cold "$@"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "two one-page pieces of one huge page" "$(paste -sd ' ' <<<"$output")" = \
		"$PAGE $PAGE $PAGE $PAGE"
}

@test "a piece of a huge page counts only its own part as HUGE [scan]" {
	huge_pieces scan
}

@test "a piece of a huge page counts only its own part as HUGE [read]" {
	huge_pieces read
}

@test "the shared zero page is not resident memory, as in smaps [scan]" {
	start_target zero=1M
	expect scan "smaps Rss of the zero= region" \
		"$(smaps_field "$TARGET_PID" "$(region_start zero)" Rss)" -eq 0
	run_pm scan -p "$TARGET_PID" --dry-run -b -r -n -o RSS cold "$(region_start zero)"
	expect scan "RSS of a region mapping only the zero page" "$output" = 0
}

@test "the shared zero page is not resident memory, as in smaps [read]" {
	start_target zero=1M
	expect read "smaps Rss of the zero= region" \
		"$(smaps_field "$TARGET_PID" "$(region_start zero)" Rss)" -eq 0
	run_pm read -p "$TARGET_PID" --dry-run -b -r -n -o RSS cold "$(region_start zero)"
	expect read "RSS of a region mapping only the zero page" "$output" = 0
}

#
# Before and after the advice
#
pageout_file() {
	local path=$1 start rss after delta
	start_target file=4M
	start=$(region_start file)

	run_pm "$path" -p "$TARGET_PID" -b -r -n -o START,STATUS,RSS,RSS-AFTER,RSS-DELTA pageout "$start"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "number of rows" "${#lines[@]}" -eq 1
	expect "$path" "START STATUS" "$(field 1 "$output") $(field 2 "$output")" = "$start ok"
	rss=$(field 3 "$output")
	after=$(field 4 "$output")
	delta=$(field 5 "$output")
	# maptarget read every page of the 4M file
	expect "$path" "RSS before pageout" "$rss" -eq $((4 << 20))
	# clean page cache pages are dropped: a few pages of slack at most
	expect "$path" "RSS-AFTER" "$after" -le $((16 * PAGE))
	expect "$path" "RSS-AFTER against smaps Rss" "$after" -eq \
		$(($(smaps_field "$TARGET_PID" "$start" Rss) * 1024))
	expect "$path" "RSS-DELTA" "$delta" -eq $((after - rss))
	expect "$path" "RSS-DELTA is negative" "${delta:0:1}" = "-"
}

@test "pageout of a file mapping: RSS-AFTER about 0, RSS-DELTA = -(RSS - RSS-AFTER) [scan]" {
	pageout_file scan
}

@test "pageout of a file mapping: RSS-AFTER about 0, RSS-DELTA = -(RSS - RSS-AFTER) [read]" {
	pageout_file read
}

collapse_aligned() {
	local path=$1 start
	require_kernel remote-collapse
	thp_not_always
	start_target aligned=4M
	start=$(region_start aligned)
	expect "$path" "smaps AnonHugePages before" \
		"$(smaps_field "$TARGET_PID" "$start" AnonHugePages)" -eq 0

	run_pm "$path" -p "$TARGET_PID" -b -r -n \
		-o START,STATUS,RSS,HUGE,RSS-AFTER,HUGE-AFTER,RSS-DELTA collapse "$start"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "START STATUS RSS HUGE RSS-AFTER HUGE-AFTER RSS-DELTA" "$output" = \
		"$start ok 4194304 0 4194304 4194304 0"
	expect "$path" "smaps AnonHugePages after" \
		"$(smaps_field "$TARGET_PID" "$start" AnonHugePages)" -eq 4096
}

@test "collapse of aligned=4M: HUGE 0 before, HUGE-AFTER 4194304 [scan]" {
	collapse_aligned scan
}

@test "collapse of aligned=4M: HUGE 0 before, HUGE-AFTER 4194304 [read]" {
	collapse_aligned read
}

# smaps_ksm_bytes PID START: the KSM field of smaps in bytes, or "null" (as
# pmadvise -J prints it) where the kernel's smaps has no KSM field.
smaps_ksm_bytes() {
	if kernel_has smaps-ksm; then
		echo $(($(smaps_field "$1" "$2" KSM) * 1024))
	else
		echo null
	fi
}

cold_referenced() {
	local path=$1 start end mid
	start_target anon=1M
	start=$(region_start anon)
	end=$(region_end anon)
	mid=$(hex_add "$start" $(((0x$end - 0x$start) / 2)))
	expect "$path" "smaps Referenced before" \
		"$(smaps_field "$TARGET_PID" "$start" Referenced)" -eq 1024

	run_pm "$path" -p "$TARGET_PID" -J -b \
		-o START,STATUS,RSS,REFERENCED,REFERENCED-AFTER,KSM cold "$start"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "whole-mapping row: status rss referenced referenced-after ksm" \
		"$(jq -r '.pmadvise[] | "\(.status) \(.rss) \(.referenced) \(."referenced-after") \(.ksm)"' \
			<<<"$output")" = "ok 1048576 1048576 0 $(smaps_ksm_bytes "$TARGET_PID" "$start")"
	expect "$path" "smaps Referenced after" \
		"$(smaps_field "$TARGET_PID" "$start" Referenced)" -eq 0

	# part of a mapping: smaps cannot tell, so the cells are empty (null)
	run_pm "$path" -p "$TARGET_PID" -J -b \
		-o START,RSS,REFERENCED,REFERENCED-AFTER,KSM cold "$start-$mid"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "part row (JSON): start rss referenced referenced-after ksm" \
		"$(jq -r '.pmadvise[] | "\(.start) \(.rss) \(.referenced) \(."referenced-after") \(.ksm)"' \
			<<<"$output")" = "$start 524288 null null null"

	run_pm "$path" -p "$TARGET_PID" -b -r -n -o START,REFERENCED,RSS,REFERENCED-AFTER cold "$start-$mid"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "part row (raw): empty REFERENCED cells" "$output" = "$start  524288 "
}

@test "cold: REFERENCED = Rss before, REFERENCED-AFTER 0; empty for part of a mapping [scan]" {
	cold_referenced scan
}

@test "cold: REFERENCED = Rss before, REFERENCED-AFTER 0; empty for part of a mapping [read]" {
	cold_referenced read
}

#
# The two paths agree
#
@test "PAGEMAP_SCAN and the pagemap-entry fallback print identical RSS, HUGE, SWAP" {
	local start mid scan read
	start_target anon=1M file=1M aligned=4M anon-half=1M zero=256K hole=64K many=300
	collapse_region aligned

	run_pm scan -p "$TARGET_PID" --select all --dry-run -b -r -n -o START,END,RSS,HUGE,SWAP cold
	expect scan "exit status" "$status" -eq 0
	scan=$output
	run_pm read -p "$TARGET_PID" --select all --dry-run -b -r -n -o START,END,RSS,HUGE,SWAP cold
	expect read "exit status" "$status" -eq 0
	read=$output
	diff -u <(echo "$scan") <(echo "$read") >&2 ||
		{ echo "--select all: the two paths differ (- scan, + read)" >&2; return 1; }
	# not a vacuous agreement: the many= mappings and the huge page are there
	expect both "rows of --select all" "$(wc -l <<<"$scan")" -gt 300
	expect both "aligned row" "$(grep "^$(region_start aligned) " <<<"$scan")" = \
		"$(region_start aligned) $(region_end aligned) 4194304 4194304 0"

	# pieces cutting through the huge pages and the written/untouched boundary
	start=$(region_start aligned)
	mid=$(region_start anon-half)
	set -- "$(hex_add "$start" $((PAGE * 7)))-$(hex_add "$start" $(((3 << 20) + PAGE * 5)))" \
		"$(hex_add "$mid" $((PAGE * 100)))-$(hex_add "$mid" $((PAGE * 200)))"
	run_pm scan -p "$TARGET_PID" --dry-run -b -r -n -o START,END,RSS,HUGE,SWAP cold "$@"
	expect scan "exit status" "$status" -eq 0
	scan=$output
	run_pm read -p "$TARGET_PID" --dry-run -b -r -n -o START,END,RSS,HUGE,SWAP cold "$@"
	expect read "exit status" "$status" -eq 0
	read=$output
	diff -u <(echo "$scan") <(echo "$read") >&2 ||
		{ echo "pieces: the two paths differ (- scan, + read)" >&2; return 1; }
	expect both "pieces" "$(awk '{ print $3, $4 }' <<<"$scan" | paste -sd ' ')" = \
		"$(((3 << 20) - 2 * PAGE)) $(((3 << 20) - 2 * PAGE)) $((28 * PAGE)) 0"
}

# trace_pm PATH SYSCALLS ARG...: run pmadvise on path PATH under strace,
# tracing SYSCALLS; the trace goes to $BATS_TEST_TMPDIR/trace.log.
trace_pm() {
	local path=$1 syscalls=$2 envargs
	shift 2
	envargs=$(pm_env "$path")
	# shellcheck disable=SC2086
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		run --separate-stderr strace -f -qq -e trace="$syscalls" \
		-o "$BATS_TEST_TMPDIR/trace.log" env $envargs "$PMADVISE" "$@"
	printf '[%s] strace pmadvise %s\n  -> status %s\n  stderr:\n%s\n  trace:\n' \
		"$path" "$*" "$status" "$stderr"
	grep -v '\.so' "$BATS_TEST_TMPDIR/trace.log" || true
}

@test "the scan path calls PAGEMAP_SCAN, the read path only reads pagemap entries" {
	local fd
	start_target anon=1M aligned=4M

	trace_pm scan openat,ioctl,pread64 -p "$TARGET_PID" --dry-run -o +RSS,HUGE cold \
		"$(region_start anon)" "$(region_start aligned)"
	expect scan "exit status" "$status" -eq 0
	fd=$(sed -nE 's/.*openat\([0-9]+, "pagemap", .*\) = ([0-9]+)$/\1/p' \
		"$BATS_TEST_TMPDIR/trace.log" | head -n 1)
	expect scan "pagemap opened through the /proc/PID directory" "$fd" -ge 0
	expect scan "PAGEMAP_SCAN ioctls on pagemap" \
		"$(grep -cE "ioctl\($fd, (PAGEMAP_SCAN|_IOC\(_IOC_READ\|_IOC_WRITE, 0x66, 0x10, )" \
			"$BATS_TEST_TMPDIR/trace.log")" -ge 1
	if kernel_has pagemap-scan; then
		expect scan "pagemap entries read" \
			"$(grep -c "pread64($fd," "$BATS_TEST_TMPDIR/trace.log")" -eq 0
	else
		# no PAGEMAP_SCAN: one try, refused, then the fallback does the work
		expect scan "PAGEMAP_SCAN tries (kernel without it)" \
			"$(grep -cE "ioctl\($fd, (PAGEMAP_SCAN|_IOC\(_IOC_READ\|_IOC_WRITE, 0x66, 0x10, )" \
				"$BATS_TEST_TMPDIR/trace.log")" -eq 1
		expect scan "the refused PAGEMAP_SCAN (kernel without it)" \
			"$(grep -cE "ioctl\($fd, .* = -1 (ENOTTY|EINVAL)" "$BATS_TEST_TMPDIR/trace.log")" -eq 1
		expect scan "pagemap entries read (kernel without PAGEMAP_SCAN)" \
			"$(grep -c "pread64($fd," "$BATS_TEST_TMPDIR/trace.log")" -ge 1
	fi

	trace_pm read openat,ioctl,pread64 -p "$TARGET_PID" --dry-run -o +RSS,HUGE cold \
		"$(region_start anon)" "$(region_start aligned)"
	expect read "exit status" "$status" -eq 0
	fd=$(sed -nE 's/.*openat\([0-9]+, "pagemap", .*\) = ([0-9]+)$/\1/p' \
		"$BATS_TEST_TMPDIR/trace.log" | head -n 1)
	expect read "pagemap opened through the /proc/PID directory" "$fd" -ge 0
	expect read "ioctls on pagemap" \
		"$(grep -c "ioctl($fd," "$BATS_TEST_TMPDIR/trace.log")" -eq 0
	expect read "pagemap entries read" \
		"$(grep -c "pread64($fd," "$BATS_TEST_TMPDIR/trace.log")" -ge 1
}

#
# Nothing is measured unless asked for
#
measured_only_when_asked() {
	local path=$1 anon trace="$BATS_TEST_TMPDIR/trace.log"
	start_target anon=1M
	anon=$(region_start anon)

	# default columns: maps read, neither pagemap nor smaps
	trace_pm "$path" openat,open -p "$TARGET_PID" cold "$anon"
	expect "$path" "exit status (default columns)" "$status" -eq 0
	expect "$path" "maps opened (the trace works)" "$(grep -c '"maps"' "$trace")" -ge 1
	expect "$path" "pagemap/smaps opens with default columns" \
		"$(grep -cE 'pagemap|smaps|kpageflags' "$trace")" -eq 0

	# a page measurement column: pagemap, not smaps
	trace_pm "$path" openat,open -p "$TARGET_PID" -o +RSS cold "$anon"
	expect "$path" "exit status (-o +RSS)" "$status" -eq 0
	expect "$path" "target's pagemap opens with -o +RSS" \
		"$(grep -cE '"(/proc/[0-9]+/)?pagemap"' "$trace" | tr -d ' ')" -ge 1
	expect "$path" "smaps opens with -o +RSS" "$(grep -c 'smaps' "$trace")" -eq 0

	# an smaps column: smaps, not pagemap
	trace_pm "$path" openat,open -p "$TARGET_PID" -o +REFERENCED cold "$anon"
	expect "$path" "exit status (-o +REFERENCED)" "$status" -eq 0
	expect "$path" "smaps opens with -o +REFERENCED" "$(grep -c '"smaps"' "$trace")" -ge 1
	expect "$path" "pagemap opens with -o +REFERENCED" "$(grep -c 'pagemap' "$trace")" -eq 0
}

@test "no pagemap or smaps read without a measurement column; -o +RSS reads pagemap [scan]" {
	measured_only_when_asked scan
}

@test "no pagemap or smaps read without a measurement column; -o +RSS reads pagemap [read]" {
	measured_only_when_asked read
}

#
# --summary
#

# check_summary PATH: $output is a raw table with columns STATUS,ADVISED,
# RSS,RSS-AFTER; $stderr must hold one summary line with its totals.
check_summary() {
	local path=$1 line ok failed skipped notrun advised rss after
	local re='^summary: ([0-9]+) rows: ([0-9]+) ok, ([0-9]+) failed, ([0-9]+) skipped, ([0-9]+) not-run; advised ([0-9]+); RSS ([0-9]+) -> ([0-9]+); swap ([0-9]+) -> ([0-9]+)$'
	expect "$path" "summary lines on stderr" "$(grep -c '^summary:' <<<"$stderr")" -eq 1
	expect "$path" "summary lines on stdout" "$(grep -c 'summary' <<<"$output")" -eq 0
	line=$(grep '^summary:' <<<"$stderr")
	[[ $line =~ $re ]] || {
		echo "[$path path] summary line not understood: '$line'" >&2
		return 1
	}
	read -r ok failed skipped notrun advised rss after < <(awk -F '[ ]' '
		$1 == "ok" { ok++ }
		$1 == "failed" || $1 == "unmapped" || $1 == "partial" { failed++ }
		$1 == "skipped" { skipped++ }
		$1 == "not-run" { notrun++ }
		{ advised += $2; rss += $3; after += $4 }
		END { printf "%d %d %d %d %.0f %.0f %.0f\n", ok, failed, skipped, notrun, advised, rss, after }
	' <<<"$output")
	expect "$path" "summary rows" "${BASH_REMATCH[1]}" -eq "${#lines[@]}"
	expect "$path" "summary ok" "${BASH_REMATCH[2]}" -eq "$ok"
	expect "$path" "summary failed" "${BASH_REMATCH[3]}" -eq "$failed"
	expect "$path" "summary skipped" "${BASH_REMATCH[4]}" -eq "$skipped"
	expect "$path" "summary not-run" "${BASH_REMATCH[5]}" -eq "$notrun"
	expect "$path" "summary advised" "${BASH_REMATCH[6]}" -eq "$advised"
	expect "$path" "summary RSS before" "${BASH_REMATCH[7]}" -eq "$rss"
	expect "$path" "summary RSS after" "${BASH_REMATCH[8]}" -eq "$after"
}

summary_line() {
	local path=$1 start end
	start_target anon=1M file=1M hole=64K
	start=$(region_start hole)
	end=$(region_end hole)

	run_pm "$path" -p "$TARGET_PID" --select all --summary -b -r -n \
		-o STATUS,ADVISED,RSS,RSS-AFTER cold
	expect "$path" "exit status (--select all)" "$status" -eq 0
	expect "$path" "rows" "${#lines[@]}" -gt 5
	check_summary "$path"

	# a range over the hole: ok, unmapped, ok
	run_pm "$path" -p "$TARGET_PID" --summary -b -r -n -o STATUS,ADVISED,RSS,RSS-AFTER \
		pageout "$start-$end"
	expect "$path" "exit status (range with a hole)" "$status" -eq 64
	expect "$path" "statuses" "$(awk -F '[ ]' '{ print $1 }' <<<"$output" | paste -sd ' ')" = \
		"ok unmapped ok"
	check_summary "$path"
	expect "$path" "summary counts" "$(grep -o '^summary: [^;]*' <<<"$stderr")" = \
		"summary: 3 rows: 2 ok, 1 failed, 0 skipped, 0 not-run"

	# pageout of the file-backed mappings: RSS goes down
	run_pm "$path" -p "$TARGET_PID" --select file --summary -b -r -n \
		-o STATUS,ADVISED,RSS,RSS-AFTER pageout
	expect "$path" "exit status (--select file pageout)" "$status" -eq 0
	check_summary "$path"
	expect "$path" "RSS freed by pageout (summary before - after)" \
		$((BASH_REMATCH[7] - BASH_REMATCH[8])) -ge $((1 << 20))
}

@test "--summary: one 'summary:' line on stderr whose counts and totals match the table [scan]" {
	summary_line scan
}

@test "--summary: one 'summary:' line on stderr whose counts and totals match the table [read]" {
	summary_line read
}

summary_json() {
	local path=$1 check
	start_target anon=1M file=1M
	run_pm "$path" -p "$TARGET_PID" --select all --summary -J -b -o +RSS,RSS-AFTER cold
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "summary lines on stderr with -J" "$(grep -c 'summary' <<<"$stderr")" -eq 0
	jq -e . >/dev/null <<<"$output" || {
		echo "[$path path] -J --summary output is not valid JSON" >&2
		return 1
	}
	check=$(jq -r '
		[ (.summary.rows == (.pmadvise | length)),
		  ((.pmadvise | length) > 5),
		  (.summary.ok == ([.pmadvise[] | select(.status == "ok")] | length)),
		  (.summary.rss | type == "number"),
		  (.summary."rss-after" | type == "number"),
		  (.summary.rss == ([.pmadvise[].rss // 0] | add)),
		  (.summary."rss-after" == ([.pmadvise[]."rss-after" // 0] | add)),
		  (.summary.rss > 0),
		  (.summary.advised == ([.pmadvise[].advised] | add)) ] | map(tostring) | join(" ")' \
		<<<"$output")
	expect "$path" "rows=length, >5 rows, ok count, rss number, rss-after number, rss sum, rss-after sum, rss>0, advised sum" \
		"$check" = "true true true true true true true true true"
}

@test "--summary -J: valid JSON, .summary.rows = rows of .pmadvise, rss and rss-after numbers [scan]" {
	summary_json scan
}

@test "--summary -J: valid JSON, .summary.rows = rows of .pmadvise, rss and rss-after numbers [read]" {
	summary_json read
}

#
# --dry-run: a per-range pmap
#
dry_run_residency() {
	local path=$1 anon half envargs
	start_target anon=1M anon-half=1M
	anon=$(region_start anon)
	half=$(region_start anon-half)
	envargs=$(pm_env "$path")

	# shellcheck disable=SC2086
	run count_madvise_calls env $envargs "$PMADVISE" -p "$TARGET_PID" --dry-run -b -r -n \
		-o START,STATUS,RSS,RSS-AFTER,RSS-DELTA,HUGE-AFTER,SWAP-AFTER pageout "$anon" "$half"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	expect "$path" "exit status" "$status" -eq 0
	expect "$path" "process_madvise calls" "$output" -eq 0
	expect "$path" "rows: current RSS, empty after-columns" "$(cat "$BATS_TEST_TMPDIR/cmd.out")" = \
		"$anon dry-run 1048576    
$half dry-run 524288    "
	# nothing was paged out
	expect "$path" "smaps Rss of anon after the dry run" \
		"$(smaps_field "$TARGET_PID" "$anon" Rss)" -eq 1024

	run_pm "$path" -p "$TARGET_PID" --dry-run -J -b -o +RSS,RSS-AFTER pageout "$anon"
	expect "$path" "exit status (-J)" "$status" -eq 0
	expect "$path" "JSON rss rss-after" \
		"$(jq -r '.pmadvise[] | "\(.rss) \(."rss-after")"' <<<"$output")" = "1048576 null"
}

@test "--dry-run -o +RSS: current residency, empty RSS-AFTER, no advice [scan]" {
	dry_run_residency scan
}

@test "--dry-run -o +RSS: current residency, empty RSS-AFTER, no advice [read]" {
	dry_run_residency read
}
