#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later

load test_helper
