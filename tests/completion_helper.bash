# SPDX-License-Identifier: GPL-2.0-or-later
# Drives the bash completion of pmadvise the way readline does, for
# tests/70-docs.bats and tests/75-completion.bats (`load completion_helper`).

: "${TESTS_SRCDIR:?TESTS_SRCDIR is not set; run the suite with make check}"

COMPLETION_SCRIPT="$TESTS_SRCDIR/../bash-completion/pmadvise"

# shellcheck source=bash-completion/pmadvise
source "$COMPLETION_SCRIPT"

# compopt works only while readline is completing: record what is asked for
# in COMPOPT instead ("-o nospace" after a term that ends in '=').
compopt() {
	local IFS=' '
	COMPOPT+=("$*")
}

# complete_line LINE
# Completes at the end of LINE: splits it into COMP_WORDS as readline does
# (at blanks, with the characters of COMP_WORDBREAKS '=' and ':' as words of
# their own), sets COMP_CWORD, COMP_LINE and COMP_POINT, and calls _pmadvise.
# The candidates are left in COMPREPLY, and also printed one per line;
# compopt requests in COMPOPT.
complete_line() {
	local line=$1 word='' breaks='' c i

	COMP_WORDS=()
	for ((i = 0; i < ${#line}; i++)); do
		c=${line:i:1}
		if [[ $c == [[:blank:]] ]]; then
			[[ -n $word ]] && COMP_WORDS+=("$word")
			[[ -n $breaks ]] && COMP_WORDS+=("$breaks")
			word='' breaks=''
		elif [[ $c == [=:] ]]; then
			[[ -n $word ]] && COMP_WORDS+=("$word")
			word=''
			breaks+=$c
		else
			[[ -n $breaks ]] && COMP_WORDS+=("$breaks")
			breaks=''
			word+=$c
		fi
	done
	# The word being completed: the break characters the line ends in (as
	# bash has it for "--select="), else the last word, empty after a blank.
	if [[ -n $breaks ]]; then
		COMP_WORDS+=("$breaks")
	else
		COMP_WORDS+=("$word")
	fi
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMP_WORDBREAKS=$' \t\n"\'><=;|&(:'
	COMPREPLY=()
	COMPOPT=()
	_pmadvise
	((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}"
}

# replies_include WORD...: every WORD is one of the COMPREPLY candidates.
replies_include() {
	local want have found
	for want in "$@"; do
		found=0
		for have in "${COMPREPLY[@]}"; do
			[[ $have == "$want" ]] && found=1 && break
		done
		if ((!found)); then
			echo "'$want' is not offered; COMPREPLY: ${COMPREPLY[*]}" >&2
			return 1
		fi
	done
}

# replies_are WORD...: COMPREPLY holds exactly these candidates, in any order.
replies_are() {
	local got want
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort)
	want=$(printf '%s\n' "$@" | sort)
	if [[ $got != "$want" ]]; then
		echo "expected: ${want//$'\n'/ }" >&2
		echo "offered:  ${got//$'\n'/ }" >&2
		return 1
	fi
}
