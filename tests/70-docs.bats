#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The man page and the bash completion against the program: every option,
# column, advice and selector term that pmadvise knows is documented and
# completed, and the documents name nothing that it does not know.

load test_helper
load completion_helper

MAN_SOURCE="$TESTS_SRCDIR/../man/pmadvise.1.adoc"

# man_section NAME: the lines of "== NAME" in the AsciiDoc source.
man_section() {
	awk -v name="$1" '/^== / { inside = ($0 == "== " name); next } inside' "$MAN_SOURCE"
}

# man_terms NAME: the terms of the definition lists ("TERM::") in a section.
man_terms() {
	man_section "$1" | sed -n 's/::$//p'
}

# help_options: "SHORT LONG" per option of --help ("-" when there is no short one).
help_options() {
	"$PMADVISE" --help | sed -nE \
		-e 's/^ +(-[A-Za-z]), (--[a-z][a-z-]*).*/\1 \2/p' \
		-e 's/^ +(--[a-z][a-z-]*).*/- \1/p'
}

# help_list HEADING: first words of the lines after the --help line that
# starts with HEADING, up to a blank line (the advice and selector tables).
help_list() {
	"$PMADVISE" --help | awk -v heading="$1" '
		index($0, heading) == 1 { inside = 1; next }
		inside && !NF { exit }
		inside { print $1 }'
}

list_columns() {
	"$PMADVISE" --list-columns --raw --noheadings | cut -d' ' -f1
}

# in_list WORD LIST...: WORD is one of LIST.
in_list() {
	local word=$1 w
	shift
	for w in "$@"; do
		[[ $w == "$word" ]] && return 0
	done
	return 1
}

@test "the man page has the sections in util-linux order" {
	local sections
	sections=$(sed -n 's/^== //p' "$MAN_SOURCE" | paste -sd '|')
	[[ $sections == "NAME|SYNOPSIS|DESCRIPTION|OPTIONS|ADVICE|RANGES AND SELECTORS|OUTPUT|PERMISSIONS|EXIT STATUS|"*"NOTES|EXAMPLES|SEE ALSO"* ]] || {
		echo "sections: $sections" >&2
		return 1
	}
}

@test "every option in --help is documented in OPTIONS" {
	local short long terms missing=0
	terms=$(man_terms OPTIONS)
	while read -r short long; do
		if [[ $short == - ]]; then
			grep -qE "^\*$long\*( |$)" <<<"$terms" && continue
		else
			grep -qE "^\*$short\*, \*$long\*( |$)" <<<"$terms" && continue
		fi
		echo "not in the man page's OPTIONS: $short $long" >&2
		missing=1
	done < <(help_options)
	[ "$missing" -eq 0 ]
	# the --help parser found them at all
	help_options | grep -qx -- '-p --pid'
	help_options | grep -qx -- '- --dry-run'
}

@test "OPTIONS documents no option that --help does not list" {
	local -a known
	local opt extra=0
	mapfile -t known < <(help_options | tr ' ' '\n' | grep -vx -- -)
	while read -r opt; do
		in_list "$opt" "${known[@]}" && continue
		echo "in the man page but not in --help: $opt" >&2
		extra=1
	done < <(man_terms OPTIONS | grep -oE '\*--?[A-Za-z][a-z-]*\*' | tr -d '*')
	[ "$extra" -eq 0 ]
}

@test "every option in --help is completed" {
	local short long missing=0
	local -a longs shorts
	complete_line "pmadvise --" >/dev/null
	longs=("${COMPREPLY[@]}")
	complete_line "pmadvise -" >/dev/null
	shorts=("${COMPREPLY[@]}")
	while read -r short long; do
		if ! in_list "$long" "${longs[@]}"; then
			echo "not completed: $long" >&2
			missing=1
		fi
		if [[ $short != - ]] && ! in_list "$short" "${shorts[@]}"; then
			echo "not completed: $short" >&2
			missing=1
		fi
	done < <(help_options)
	[ "$missing" -eq 0 ]
	[ "${#longs[@]}" -gt 0 ]
}

@test "the completion offers no option that --help does not list" {
	local -a known
	local opt extra=0
	mapfile -t known < <(help_options | tr ' ' '\n' | grep -vx -- -)
	complete_line "pmadvise -" >/dev/null
	for opt in "${COMPREPLY[@]}"; do
		in_list "$opt" "${known[@]}" && continue
		echo "completed but not in --help: $opt" >&2
		extra=1
	done
	[ "$extra" -eq 0 ]
}

@test "every column of --list-columns has its own entry in OUTPUT" {
	local col terms missing=0 n=0
	terms=$(man_terms OUTPUT)
	while read -r col; do
		n=$((n + 1))
		grep -qxF "*$col*" <<<"$terms" && continue
		echo "no '*$col*::' entry in the man page's OUTPUT" >&2
		missing=1
	done < <(list_columns)
	[ "$missing" -eq 0 ]
	[ "$n" -ge 15 ]
}

@test "OUTPUT documents no column that --list-columns does not list" {
	local -a known
	local col extra=0
	mapfile -t known < <(list_columns)
	# column entries are the terms in capitals; the STATUS words are lower case
	while read -r col; do
		in_list "$col" "${known[@]}" && continue
		echo "in the man page's OUTPUT but not a column: $col" >&2
		extra=1
	done < <(man_terms OUTPUT | sed -nE 's/^\*([A-Z][A-Z-]*)\*$/\1/p')
	[ "$extra" -eq 0 ]
}

@test "the completion offers exactly the columns of --list-columns" {
	complete_line "pmadvise -o " >/dev/null
	local -a columns
	mapfile -t columns < <(list_columns)
	replies_are "${columns[@]}"
}

@test "every STATUS word is documented in OUTPUT" {
	local word terms missing=0
	terms=$(man_terms OUTPUT)
	# the STATUS description of --list-columns: "ok, failed, ... or dry-run"
	for word in $("$PMADVISE" --list-columns | awk '$1 == "STATUS" { $1 = $2 = ""; print }' |
			tr -d ',' | sed 's/ or / /'); do
		grep -qxF "*$word*" <<<"$terms" && continue
		echo "STATUS word '$word' has no entry in OUTPUT" >&2
		missing=1
	done
	[ "$missing" -eq 0 ]
}

@test "every advice name in --help has an entry in ADVICE" {
	local advice terms missing=0 n=0
	terms=$(man_terms ADVICE)
	while read -r advice; do
		n=$((n + 1))
		grep -qxF "*$advice*" <<<"$terms" && continue
		echo "advice '$advice' has no entry in the man page's ADVICE" >&2
		missing=1
	done < <(help_list Advice:)
	[ "$missing" -eq 0 ]
	[ "$n" -ge 6 ]
}

@test "the completion offers exactly the advice names of --help" {
	local -a advice
	mapfile -t advice < <(help_list Advice:)
	complete_line "pmadvise -p 1 " >/dev/null
	replies_are "${advice[@]}"
}

@test "every selector term in --help has an entry in RANGES AND SELECTORS" {
	local term terms missing=0 n=0
	terms=$(man_terms "RANGES AND SELECTORS")
	while read -r term; do
		n=$((n + 1))
		# *anon*:: or **path=**__GLOB__::
		grep -qE "^\*\*?${term}\*?\*" <<<"$terms" && continue
		echo "selector term '$term' has no entry in RANGES AND SELECTORS" >&2
		missing=1
	done < <(help_list "Selector terms")
	[ "$missing" -eq 0 ]
	[ "$n" -ge 11 ]
}

@test "the completion offers exactly the selector terms of --help" {
	local -a terms
	mapfile -t terms < <(help_list "Selector terms")
	complete_line "pmadvise --select " >/dev/null
	replies_are "${terms[@]}"
}

@test "the man page source converts without warnings" {
	command -v asciidoctor >/dev/null || skip "asciidoctor is not installed"
	run asciidoctor -b manpage --failure-level=WARN -o "$BATS_TEST_TMPDIR/pmadvise.1" "$MAN_SOURCE"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "the built man page renders every section" {
	local page
	command -v man >/dev/null || skip "man is not installed"
	# built in the build directory, or shipped in the source tree of a release
	for page in "${PMADVISE%/*}/pmadvise.1" "$TESTS_SRCDIR/../pmadvise.1" ""; do
		[[ -f $page ]] && break
	done
	[[ -n $page ]] || skip "pmadvise.1 is not built (no asciidoctor)"
	run env MANWIDTH=100 man -l "$page"
	[ "$status" -eq 0 ]
	local section
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS ADVICE "RANGES AND SELECTORS" OUTPUT \
		PERMISSIONS "EXIT STATUS" NOTES EXAMPLES "SEE ALSO"; do
		grep -qx "$section" <<<"$output" || {
			echo "no $section in the rendered page" >&2
			return 1
		}
	done
	# the page names the version it was built for
	grep -qE "pmadvise [0-9]+\.[0-9]+" <<<"${lines[-1]}"
}
