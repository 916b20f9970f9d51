#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Hostile input (SPEC §5, §10): the corpus under tests/hostile/ (bad --maps
# files and bad arguments, each with the message it must give) and inputs
# too big to keep in git, made here: very long lines, 100 000-line --maps
# files, huge column lists and selectors.  Each bad one is reported with its
# line or argument, exit 1, before any process_madvise call; the good ones
# work, spaces and " (deleted)" in paths included.

load test_helper

bats_require_minimum_version 1.5.0

HOSTILE="$TESTS_SRCDIR/hostile"

teardown() {
	stop_targets
}

setup() {
	start_target anon=64K
}

# bad_input ARG...: run pmadvise ARG... under strace; status in $status, the
# messages in $msg; fails when anything was advised.
bad_input() {
	run count_madvise_calls "$PMADVISE" "$@"
	msg=$(cat "$BATS_TEST_TMPDIR/cmd.out")
	echo "status $status, $output process_madvise calls: $msg"
	[ "$output" -eq 0 ]
}

# expect_bad WHAT FRAGMENT ARG...: like bad_input, and also exit 1 with FRAGMENT
# in the message; on failure says which case (WHAT) it was.
expect_bad() {
	local what=$1 fragment=$2
	shift 2
	bad_input "$@" || { echo "FAILED: $what: advised something"; return 1; }
	[ "$status" -eq 1 ] || { echo "FAILED: $what: status $status"; return 1; }
	[[ "$msg" == *"$fragment"* ]] || { echo "FAILED: $what: no '$fragment' in: $msg"; return 1; }
}

@test "every bad --maps file of tests/hostile/maps: its line number and why, exit 1, nothing advised" {
	local file line why n=0
	while IFS=$'\t' read -r file line why; do
		[[ -z "$file" || "$file" == '#'* ]] && continue
		expect_bad "$file" "--maps $HOSTILE/maps/$file: line $line: $why" \
			-p "$TARGET_PID" cold --maps "$HOSTILE/maps/$file"
		n=$((n + 1))
	done <"$HOSTILE/maps.expect"
	# every file is listed, and the list is not empty
	[ "$n" -ge 18 ]
	[ "$n" -eq "$(find "$HOSTILE/maps" -type f | wc -l)" ]
}

@test "bad --maps input from standard input: the same messages, 'standard input'" {
	expect_bad binary-with-nul "--maps standard input: line 3: contains a NUL byte" \
		-p "$TARGET_PID" cold --maps - <"$HOSTILE/maps/binary-with-nul"
	expect_bad binary-garbage "--maps standard input: line 1:" \
		-p "$TARGET_PID" cold --maps - <"$HOSTILE/maps/binary-garbage"
}

@test "every bad argument of tests/hostile/args.expect: named with why, exit 1, nothing advised" {
	local opt arg why shown n=0
	while IFS=$'\t' read -r opt arg why; do
		[[ -z "$opt" || "$opt" == '#'* ]] && continue
		# messages show \n and \t as written here, and an escape as \x1b
		shown=${arg//\\e/\\x1b}
		arg=$(printf '%b' "$arg")
		if [ "$opt" = RANGE ]; then
			expect_bad "RANGE '$arg'" "invalid range '$shown': $why" \
				-p "$TARGET_PID" cold -- "$arg"
		else
			expect_bad "$opt '$arg'" "$why" -p "$TARGET_PID" cold -s all "$opt" "$arg"
		fi
		n=$((n + 1))
	done <"$HOSTILE/args.expect"
	[ "$n" -ge 37 ]
}

@test "a 1 MiB --maps line is reported by its line number, not echoed; nothing advised" {
	local anon="$(region_start anon)-$(region_end anon)"
	{
		echo "$anon"
		head -c 1048576 /dev/zero | tr '\0' 'f'
		echo
	} >"$BATS_TEST_TMPDIR/maps"
	expect_bad long-hex "line 2: number is too large" -p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps"
	[ "${#msg}" -lt 1000 ]
	{
		echo "$anon"
		head -c 1048576 /dev/zero | tr '\0' 'x'
		echo
	} >"$BATS_TEST_TMPDIR/maps"
	expect_bad long-junk "line 2: expected a hexadecimal number" \
		-p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps"
	[ "${#msg}" -lt 1000 ]
}

@test "a valid maps line with a 64 KiB path of spaces and ' (deleted)' advises its range" {
	local anon="$(region_start anon)-$(region_end anon)" path
	path="/$(head -c 65536 /dev/zero | tr '\0' ' ')x (deleted)"
	printf '%s rw-p 00000000 08:01 1234 %s\n' "$anon" "$path" >"$BATS_TEST_TMPDIR/maps"
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps" \
		-n -r -o START,STATUS
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/cmd.out")" = "$(region_start anon) ok" ]
}

@test "100 000 valid --maps lines: 100 000 rows ok in ceil(100000/1024) ranged calls" {
	stop_targets
	start_target untouched=400M
	# (awk's %x stops at 32 bits)
	python3 -c 'import sys
s = int(sys.argv[1], 16)
for i in range(100000):
    print("%x-%x" % (s + i * 4096, s + (i + 1) * 4096))' "$(region_start untouched)" >"$BATS_TEST_TMPDIR/maps"
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps" \
		-n -r -o STATUS
	echo "status $status, $output calls"
	[ "$status" -eq 0 ]
	[ "$(count_ranged_madvise_calls)" -eq 98 ]
	[ "$(grep -cx ok "$BATS_TEST_TMPDIR/cmd.out")" -eq 100000 ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/cmd.out")" -eq 100000 ]
}

@test "100 000 --maps lines with a bad one at line 99 999: that line reported, nothing advised" {
	local anon="$(region_start anon)-$(region_end anon)"
	awk -v r="$anon" 'BEGIN {
		for (i = 1; i <= 100000; i++)
			print (i == 99999 ? "7f0000000000-7f0000001000 rw-p zz" : r)
	}' >"$BATS_TEST_TMPDIR/maps"
	expect_bad line-99999 "--maps $BATS_TEST_TMPDIR/maps: line 99999: malformed maps line" \
		-p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps"
	# and from a pipe
	expect_bad line-99999-stdin "--maps standard input: line 99999: malformed maps line" \
		-p "$TARGET_PID" cold --maps - <"$BATS_TEST_TMPDIR/maps"
}

@test "paths with spaces and ' (deleted)': the maps lines of /proc work as --maps and in selectors" {
	local dir="$BATS_TEST_TMPDIR/dir with  spaces" path json
	mkdir "$dir"
	stop_targets
	start_target -d "$dir" file=64K
	# the path has spaces: everything after the third field
	path=$(awk '$1 == "file" { sub(/^[^ ]+ [^ ]+ [^ ]+ /, ""); print }' "$TARGET_OUT")
	[[ "$path" == *" "* ]]
	rm "$path"
	grep -F "$path (deleted)" "/proc/$TARGET_PID/maps"

	# /proc's own line, path and all, as --maps input
	grep -F "$path (deleted)" "/proc/$TARGET_PID/maps" >"$BATS_TEST_TMPDIR/maps"
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" cold --maps - -J -o START,PATH,STATUS \
		<"$BATS_TEST_TMPDIR/maps"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 0 ]
	json=$(cat "$BATS_TEST_TMPDIR/cmd.out")
	[ "$(jq -r '.pmadvise | length' <<<"$json")" -eq 1 ]
	[ "$(jq -r '.pmadvise[0].path' <<<"$json")" = "$path (deleted)" ]
	[ "$(jq -r '.pmadvise[0].status' <<<"$json")" = ok ]

	# selectors see the whole path; 'file' includes deleted files
	run "$PMADVISE" -p "$TARGET_PID" cold --dry-run -s "path=$dir/* (deleted)" -n -r -o START
	[ "$status" -eq 0 ]
	[ "$output" = "$(region_start file)" ]
	run "$PMADVISE" -p "$TARGET_PID" cold --dry-run -s file -J -o PATH
	[ "$status" -eq 0 ]
	jq -e --arg p "$path (deleted)" '[.pmadvise[].path] | index($p) != null' <<<"$output"
}

@test "a 20 000-column --output list: 'too many columns', exit 1, nothing advised" {
	local list
	list=$(printf 'START,%.0s' {1..20000})
	expect_bad columns "too many columns" -p "$TARGET_PID" cold -s all -o "${list%,}"
	expect_bad plus-columns "too many columns" -p "$TARGET_PID" cold -s all -o "+${list%,}"
}

@test "the longest +LIST of columns with two targets: PID first and every column, or 'too many columns'" {
	local first=$TARGET_PID n list fields
	start_target anon=64K
	# the most columns one target takes
	for ((n = 1; n < 1000; n++)); do
		list=$(printf 'SIZE,%.0s' $(seq "$n"))
		"$PMADVISE" -p "$first" cold --dry-run -s anon -o "+${list%,}" -n -r >/dev/null 2>&1 || break
	done
	n=$((n - 1))
	[ "$n" -ge 1 ] && [ "$n" -lt 999 ]
	list=$(printf 'SIZE,%.0s' $(seq "$n"))
	run "$PMADVISE" -p "$first,$TARGET_PID" cold --dry-run -s anon -o "+${list%,}" -n -r
	echo "$n extra columns: status $status"
	echo "$output" | head -3
	if [ "$status" -eq 1 ]; then
		[[ "$output" == *"too many columns"* ]]
	else
		[ "$status" -eq 0 ]
		# PID + the default columns + n SIZEs: as many fields as with one target, plus one
		fields=$("$PMADVISE" -p "$first" cold --dry-run -s anon -o "+${list%,}" -n -r |
			head -1 | awk '{ print NF }')
		echo "$output" | awk -v want=$((fields + 1)) -v pid="$first|$TARGET_PID" '
			NF != want || $1 !~ "^(" pid ")$" { print "bad row: " $0; bad = 1 }
			END { exit bad }'
	fi
}

@test "a selector of 10 000 terms works; one bad term among them is named, nothing advised" {
	local sel
	sel=$(printf 'anon,%.0s' {1..10000})
	run "$PMADVISE" -p "$TARGET_PID" cold --dry-run -s "${sel%,}" -n -r -o START
	[ "$status" -eq 0 ]
	[[ "$output" == *"$(region_start anon)"* ]]
	expect_bad bad-term "unknown selector term 'bogus'" \
		-p "$TARGET_PID" cold -s "${sel}bogus,${sel%,}"
	# 10 000 --select options too
	local args=()
	for ((i = 0; i < 10000; i++)); do args+=(-s anon); done
	run "$PMADVISE" -p "$TARGET_PID" cold --dry-run "${args[@]}" -x file -n -r -o START
	[ "$status" -eq 0 ]
	[[ "$output" == *"$(region_start anon)"* ]]
}

# no_raw_controls TEXT: TEXT holds no control byte but the newlines that end
# its lines, and no UTF-8 C1 control or bidirectional override.
no_raw_controls() {
	! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$1" &&
		! grep -qF -e $'\xc2\x9b' -e $'\xe2\x80\xae' <<<"$1"
}

@test "control characters in arguments are shown escaped in messages, never raw" {
	local mapsdir="$BATS_TEST_TMPDIR/"$'dir\e[2J\nx' n=0 line opt arg shown
	mkdir "$mapsdir"
	printf '7f0000000001-7f0000002000\n' >"$mapsdir/maps"
	# each case: the arguments (after -p PID), and what the message shows
	while IFS='|' read -r shown args; do
		[ -z "$shown" ] && continue
		eval "set -- $args"
		expect_bad "$args" "$shown" -p "$TARGET_PID" "$@" || return 1
		no_raw_controls "$msg" || { echo "FAILED: $args: raw control in: $msg"; return 1; }
		# one message, one line
		[ "$(wc -l <<<"$msg")" -eq 1 ] || { echo "FAILED: $args: more than one line"; return 1; }
		n=$((n + 1))
	done <<'CASES'
invalid range '\x1b[31m7f0000000000'|cold $'\e[31m7f0000000000'
invalid range '7f0000000000\nrm -rf /'|cold $'7f0000000000\nrm -rf /'
invalid range '\xc2\x9b31m'|cold $'\xc2\x9b31m'
invalid range '\xff\xfe'|cold $'\xff\xfe'
invalid range '7f\r\x7f\x01'|cold $'7f\r\x7f\x01'
unknown selector term '\x1b]0;owned\x07'|cold -s $'anon,\e]0;owned\a'
invalid --select 'path=*\x1b[5m,bogus'|cold -s $'path=*\e[5m,bogus'
invalid --exclude 'perms=\n,bogus'|cold -x $'perms=\n,bogus'
unknown column '\x1b[2J' in --output|cold -s all -o $'START,\e[2J'
invalid PID '1\n2' in --pid '1\n2'|-p $'1\n2' cold -s all
unknown advice 'cold\x1b[0m'|cold$'\e[0m' -s all
advice 'dontneed\n'|$'dontneed\n' -s all
invalid --rule '\x1b=cold'|--rule $'\e=cold'
invalid --rule 'bogus\t=cold'|--rule $'bogus\t=cold'
invalid --timeout '1\x1b'|--timeout $'1\e' cold -s all
invalid file descriptor '0\x1b' for --pidfd|-P $'0\e' cold -s all
cannot open --maps file /nonexistent/\x1b[2J\n|cold --maps $'/nonexistent/\e[2J\n'
dir\x1b[2J\nx/maps: line 1:|cold --maps "$mapsdir/maps"
nothing selected by --select 'path=\xe2\x80\xae*'|cold -s $'path=\u202e*'
nothing selected by --select 'path=/caf\x1b*' --exclude 'path=\x9b'|cold -s $'path=/caf\e*' -x $'path=\x9b'
CASES
	[ "$n" -eq 20 ]
}

@test "printable UTF-8 in arguments is shown as it is" {
	expect_bad utf-8 "nothing selected by --select 'path=/tmp/café-日本-😀*'" \
		-p "$TARGET_PID" cold -s 'path=/tmp/café-日本-😀*'
}

@test "--maps input with CRLF line ends (a file from Windows) works like LF" {
	local anon="$(region_start anon)-$(region_end anon)"
	# a bare range, a line of /proc's maps, a blank line: each ends in \r\n
	printf '%s\r\n\r\n%s rw-p 00000000 00:00 0 \r\n' "$anon" "$anon" >"$BATS_TEST_TMPDIR/maps"
	run count_madvise_calls "$PMADVISE" -p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps" \
		-n -r -o START,STATUS
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/cmd.out")" = "$(region_start anon) ok"$'\n'"$(region_start anon) ok" ]
	# the last line without its \n, and from standard input
	printf '%s\r' "$anon" >"$BATS_TEST_TMPDIR/maps"
	run "$PMADVISE" -p "$TARGET_PID" cold --maps - -n -r -o START,STATUS <"$BATS_TEST_TMPDIR/maps"
	[ "$status" -eq 0 ]
	[ "$output" = "$(region_start anon) ok" ]
	# a \r inside a line is still an error
	printf '%s\r junk\n' "$anon" >"$BATS_TEST_TMPDIR/maps"
	expect_bad cr-inside "--maps $BATS_TEST_TMPDIR/maps: line 1:" \
		-p "$TARGET_PID" cold --maps "$BATS_TEST_TMPDIR/maps"
}

@test "a target that names itself with control characters: escaped in the table and the --summary lines" {
	local out="$BATS_TEST_TMPDIR/named.out" i
	# comm is the process's own to set, up to 15 bytes: an escape sequence,
	# a bell and a C1 control introducer
	python3 -c 'import time
with open("/proc/self/comm", "w") as f:
    f.write("\x1b[7mev\x07il\x9b")
print("ready", flush=True)
time.sleep(1000)' >"$out" 3>&- &
	TARGET_PIDS+=("$!")
	for ((i = 0; i < 200; i++)); do
		grep -qx ready "$out" && break
		sleep 0.05
	done
	local named=${TARGET_PIDS[-1]}
	# two targets: a summary line for each
	run --separate-stderr "$PMADVISE" -p "$named,$TARGET_PID" --dry-run -s anon --summary \
		-o PID,COMM,START cold
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	no_raw_controls "$output"
	no_raw_controls "$stderr"
	[[ "$output$stderr" == *"PID $named (\x1b[7mev\x07il\xc2\x9b)"* ]]
	[[ "$output" == *"\x1b[7mev\x07il\xc2\x9b"* ]]
}
