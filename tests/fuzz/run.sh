#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the libFuzzer harnesses of lib/parse.c and run each for a bounded time.
#
#   tests/fuzz/run.sh [HARNESS...]        (default: all of them)
#
# Environment:
#   FUZZ_SECONDS   time per harness (default 60; -max_total_time)
#   FUZZ_BUILDDIR  where the binaries, the grown corpora and any crashing
#                  input go (default: a new temporary directory)
#   CC             a clang with the libFuzzer runtime (default: clang)
#
# The harnesses link lib/parse.c itself, built with
# -fsanitize=fuzzer,address,undefined.  Each starts from its committed seed
# corpus (tests/fuzz/corpus/NAME, which is only read) and fails on any crash,
# sanitizer report, leak, timeout or out-of-memory; the input that did it is
# printed and kept in FUZZ_BUILDDIR/artifacts.  Ends with one line per harness:
# "fuzz NAME: N executions in S s, ok|FAILED".
set -uo pipefail

fuzzdir=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$fuzzdir/../.." && pwd)
seconds=${FUZZ_SECONDS:-60}
cc=${CC:-clang}
builddir=${FUZZ_BUILDDIR:-$(mktemp -d "${TMPDIR:-/tmp}/pmadvise-fuzz.XXXXXX")}
all=(range size selector maps_line maps_input_line)
harnesses=("${@:-${all[@]}}")

case "$seconds" in
'' | *[!0-9]* | 0) echo "run.sh: FUZZ_SECONDS must be a positive number of seconds" >&2; exit 2 ;;
esac
mkdir -p "$builddir/artifacts" || exit 2

flags=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
	-fno-sanitize-recover=all -Wall -Wextra -Werror -I"$srcdir/lib")
for name in "${harnesses[@]}"; do
	if [ ! -f "$fuzzdir/fuzz_$name.c" ]; then
		echo "run.sh: no harness '$name' (known: ${all[*]})" >&2
		exit 2
	fi
	echo "building fuzz_$name"
	"$cc" "${flags[@]}" -o "$builddir/fuzz_$name" \
		"$fuzzdir/fuzz_$name.c" "$srcdir/lib/parse.c" || {
		echo "run.sh: cannot build fuzz_$name with $cc (Debian: apt-get install clang libclang-rt-14-dev)" >&2
		exit 2
	}
done

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

status=0 summary=()
for name in "${harnesses[@]}"; do
	work="$builddir/corpus-$name" log="$builddir/fuzz_$name.log"
	mkdir -p "$work"
	echo "fuzzing $name for $seconds s"
	# New inputs go to the first directory; the seeds are only read.
	# -timeout: one input taking more than 10 s is a finding too.
	"$builddir/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-max_len=4096 -print_final_stats=1 \
		-artifact_prefix="$builddir/artifacts/$name-" \
		"$work" "$fuzzdir/corpus/$name" >"$log" 2>&1
	rc=$?
	execs=$(awk '/stat::number_of_executed_units:/ { n = $2 } END { print n + 0 }' "$log")
	if [ "$rc" -eq 0 ] && ! grep -qE '^(==[0-9]+==ERROR|SUMMARY: )' "$log"; then
		summary+=("fuzz $name: $execs executions in $seconds s, ok")
	else
		status=1
		summary+=("fuzz $name: $execs executions in $seconds s, FAILED (status $rc)")
		echo "---- fuzz_$name found a problem (log: $log) ----"
		grep -vE '^#[0-9]+' "$log" | tail -60
		for artifact in "$builddir/artifacts/$name-"*; do
			[ -f "$artifact" ] || continue
			echo "---- input $artifact ----"
			od -A d -c "$artifact" | head -40
		done
	fi
done

printf '%s\n' "${summary[@]}"
exit "$status"
