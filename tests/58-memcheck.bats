#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Valgrind memcheck over representative invocations: no memory error and no
# definitely lost byte, whatever the exit status.  Valgrind 3.19 does not
# know pidfd_open (pmadvise then stops with its "needs Linux 5.10" message),
# so most cases are those that need no target: help, column lists (table and
# JSON), and the input errors of every kind.  The live paths (table, JSON,
# dry-run, failing rows) are leak-checked by LeakSanitizer in the sanitizer
# build of .ci/run.  Skipped without valgrind, and for a sanitizer build
# (valgrind cannot run those).

load test_helper

setup() {
	command -v valgrind >/dev/null || skip "valgrind is not installed"
	if ldd "$PMADVISE" 2>/dev/null | grep -q 'lib[at]san\|libubsan'; then
		skip "pmadvise is built with sanitizers"
	fi
}

teardown() {
	stop_targets
}

# memcheck ARG...: run pmadvise ARG... under memcheck; $status is pmadvise's
# own, and the test fails on any memcheck error or definitely lost byte.
memcheck() {
	local log="$BATS_TEST_TMPDIR/memcheck.log"
	run valgrind -q --log-file="$log" --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite --show-leak-kinds=definite \
		"$PMADVISE" "$@"
	if [ "$status" -eq 99 ] || grep -q '==[0-9]*==' "$log"; then
		echo "memcheck of pmadvise $*:"
		cat "$log"
		return 1
	fi
}

@test "memcheck: --help, --version, --list-columns (table and JSON)" {
	memcheck --help
	[ "$status" -eq 0 ]
	memcheck --version
	[ "$status" -eq 0 ]
	memcheck --list-columns
	[ "$status" -eq 0 ]
	memcheck -J --list-columns
	[ "$status" -eq 0 ]
	memcheck -J -r --list-columns
	[ "$status" -eq 0 ]
}

@test "memcheck: usage and argument errors" {
	local args
	while IFS= read -r args; do
		# shellcheck disable=SC2086 # word splitting wanted
		memcheck $args
		echo "pmadvise $args: $status"
		[ "$status" -eq 1 ]
	done <<-'EOF'
	--bogus-option
	cold
	cold -s all
	-p 1 dontneed -s all
	-p 1,2,x cold -s all
	-p 0 cold -s all
	-p 1 cold 7f0000000001-7f0000002000
	-p 1 cold 7f0000000000+0
	-p 1 cold -s all -o NOPE
	-p 1 cold -s all -o START,,END
	-p 1 cold -s anon,bogus
	-p 1 cold -s min-size=1Q -x file
	-p 1 cold --maps /nonexistent
	-P 99999 cold -s all
	EOF
}

@test "memcheck: --maps parse errors, from a file and from standard input" {
	local file
	for file in binary-garbage binary-with-nul truncated overflow blank-then-bad; do
		memcheck -p 1 cold --maps "$TESTS_SRCDIR/hostile/maps/$file"
		echo "$file: $status"
		[ "$status" -eq 1 ]
		memcheck -p 1 cold --maps - <"$TESTS_SRCDIR/hostile/maps/$file"
		[ "$status" -eq 1 ]
	done
}

@test "memcheck: a live target with --dry-run, -J, a range and a selector, as far as valgrind lets it go" {
	start_target anon=64K
	memcheck -p "$TARGET_PID" cold --dry-run -J -s anon "$(region_start anon)-$(region_end anon)"
	echo "status $status: $output"
	# 0, or 2 (not supported: "needs Linux 5.10") when valgrind does not
	# know pidfd_open: never a memcheck error
	[ "$status" -eq 0 ] || { [ "$status" -eq 2 ] && [[ "$output" == *"needs Linux 5.10"* ]]; }
}
