#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later

load test_helper

@test "--version exits 0 and names the program" {
	run "$PMADVISE" --version
	[ "$status" -eq 0 ]
	[[ "$output" == *pmadvise* ]]
}

@test "no arguments is a usage error (exit 1)" {
	run "$PMADVISE"
	[ "$status" -eq 1 ]
}
