#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Privileges (SPEC §10): an unprivileged user advises its own processes with
# CAP_SYS_NICE alone (ambient, as a service manager would grant it), and is
# refused with EPERM without it.  Both pmadvise and the target run as nobody.

load test_helper

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
