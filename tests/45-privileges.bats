#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Privileges (SPEC §10): an unprivileged user advises its own processes with
# CAP_SYS_NICE alone (ambient, as a service manager would grant it), and is
# refused with EPERM without it.  Both pmadvise and the target run as nobody.

load test_helper

bats_require_minimum_version 1.5.0

NOBODY=65534

teardown() {
	stop_targets
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

setup() {
	# copies that nobody can run, and a directory for the target's files
	NOBODY_DIR=$(mktemp -d /tmp/pmadvise-nobody.XXXXXX)
	chmod 755 "$NOBODY_DIR"
	cp "$PMADVISE" "$HELPERS/maptarget" "$NOBODY_DIR/"
	mkdir -m 777 "$NOBODY_DIR/files"
	start_target_cmd setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
		"$NOBODY_DIR/maptarget" -d "$NOBODY_DIR/files" anon=256K
	[ "$(stat -c %u "/proc/$TARGET_PID")" -eq "$NOBODY" ]
}

@test "nobody with only ambient CAP_SYS_NICE advises a process of its own: rows ok, exit 0" {
	run count_madvise_calls setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
		--inh-caps=-all,+sys_nice --ambient-caps=+sys_nice \
		"$NOBODY_DIR/pmadvise" -p "$TARGET_PID" pageout \
		"$(region_start anon)-$(region_end anon)" -n -r -o STATUS,ADVISED
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 0 ]
	[ "$(count_ranged_madvise_calls)" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/cmd.out")" = "ok 256K" ]
}

@test "the same without CAP_SYS_NICE: EPERM message naming CAP_SYS_NICE, exit 1, nothing advised" {
	# before this rule, ptrace attach rights were enough (Debian's 5.10 has it backported)
	require_kernel madvise-cap-sys-nice
	run count_madvise_calls setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
		--inh-caps=-all "$NOBODY_DIR/pmadvise" -p "$TARGET_PID" pageout \
		"$(region_start anon)-$(region_end anon)"
	cat "$BATS_TEST_TMPDIR/cmd.out"
	[ "$status" -eq 1 ]
	[ "$(count_ranged_madvise_calls)" -eq 0 ]
	grep -q "PID $TARGET_PID:.*CAP_SYS_NICE" "$BATS_TEST_TMPDIR/cmd.out"
}

# as_nobody_pm PAGEMAP ARG...: pmadvise ARG... as nobody with ambient
# CAP_SYS_NICE, PMADVISE_PAGEMAP set to PAGEMAP (empty: unset), run like
# `run --separate-stderr`.
as_nobody_pm() {
	local mode=$1
	shift
	run --separate-stderr setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
		--inh-caps=-all,+sys_nice --ambient-caps=+sys_nice \
		env ${mode:+PMADVISE_PAGEMAP=$mode} "$NOBODY_DIR/pmadvise" -p "$TARGET_PID" "$@"
	printf 'stdout:\n%s\nstderr:\n%s\n' "$output" "$stderr"
}

@test "nobody on the pagemap-entry fallback cannot see huge pages: HUGE left empty, said once; RSS as smaps" {
	local range rss
	range="$(region_start anon)-$(region_end anon)"
	rss=$(($(smaps_field "$TARGET_PID" "$(region_start anon)" Rss) * 1024))
	[ "$rss" -eq 262144 ]
	# pagemap hides page frame numbers from all but CAP_SYS_ADMIN: no page
	# can be seen to be part of a huge one, so 0 would be a guess
	as_nobody_pm read cold "$range" "$range" -n -r -b -o RSS,HUGE,RSS-AFTER,HUGE-AFTER
	[ "$status" -eq 0 ]
	[ "$output" = "$rss  $rss "$'\n'"$rss  $rss " ]
	[ "$stderr" = "pmadvise: HUGE left empty: without PAGEMAP_SCAN (Linux 6.7), huge pages can be seen only with CAP_SYS_ADMIN" ]
	# without a HUGE column, nothing to say
	as_nobody_pm read cold "$range" -n -r -b -o RSS
	[ "$status" -eq 0 ] && [ "$output" = "$rss" ] && [ -z "$stderr" ]
	# root on the same path sees the frames: HUGE is measured (nothing is huge here)
	run env PMADVISE_PAGEMAP=read "$PMADVISE" -p "$TARGET_PID" cold "$range" -n -r -b -o RSS,HUGE
	[ "$output" = "$rss 0" ]
}

@test "nobody with PAGEMAP_SCAN sees huge pages: HUGE measured, nothing said" {
	require_kernel pagemap-scan
	as_nobody_pm "" cold "$(region_start anon)-$(region_end anon)" -n -r -b -o RSS,HUGE
	[ "$status" -eq 0 ]
	[ "$output" = "262144 0" ]
	[ -z "$stderr" ]
}
