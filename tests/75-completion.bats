#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Bash completion: _pmadvise is called directly, with COMP_WORDS, COMP_CWORD,
# COMP_LINE and COMP_POINT set as readline sets them (see completion_helper).

load completion_helper

setup() {
	# a process of our own to complete PIDs and addresses of
	sleep 1000 3>&- &
	SLEEP_PID=$!
	# wait until it sleeps, its mappings settled after exec
	local i state comm maps='' prev
	for ((i = 0; i < 200; i++)); do
		read -r _ comm state _ <"/proc/$SLEEP_PID/stat"
		prev=$maps
		maps=$(cat "/proc/$SLEEP_PID/maps")
		[[ $comm == "(sleep)" && $state == S && $maps == "$prev" ]] && return 0
		sleep 0.02
	done
	echo "sleep $SLEEP_PID did not settle" >&2
	return 1
}

teardown() {
	kill "$SLEEP_PID" 2>/dev/null || true
	wait "$SLEEP_PID" 2>/dev/null || true
}

# The start addresses in /proc/$SLEEP_PID/maps, one per line.
sleep_starts() {
	cut -d- -f1 "/proc/$SLEEP_PID/maps"
}

@test "completes options" {
	complete_line "pmadvise --"
	replies_include --pid --pidfd --select --exclude --maps --dry-run --output \
		--output-all --json --raw --noheadings --bytes --list-columns --quiet \
		--summary --rule --help --version

	complete_line "pmadvise --out"
	replies_are --output --output-all

	complete_line "pmadvise -"
	replies_include -p -P -s -x -m -R -o -J -r -n -b -H -q -h -V

	# options may follow the advice and the ranges
	complete_line "pmadvise -p $SLEEP_PID cold --dry"
	replies_are --dry-run
}

@test "offers nothing after --help, --version or --list-columns" {
	complete_line "pmadvise --help "
	replies_are
	complete_line "pmadvise -V -"
	replies_are
}

@test "completes advice names" {
	complete_line "pmadvise -p $SLEEP_PID "
	replies_are cold pageout willneed collapse mergeable unmergeable

	complete_line "pmadvise --pid=$SLEEP_PID p"
	replies_are pageout

	complete_line "pmadvise -p$SLEEP_PID -s anon -o START c"
	replies_are cold collapse

	# launcher mode starts with the advice too
	complete_line "pmadvise m"
	replies_are mergeable
}

@test "completes PIDs after -p, --pid= and -pPID" {
	local prefix=${SLEEP_PID:0:${#SLEEP_PID}-1}

	complete_line "pmadvise -p $prefix"
	replies_include "$SLEEP_PID"
	local w
	for w in "${COMPREPLY[@]}"; do
		[[ $w == "$prefix"* && $w =~ ^[0-9]+$ ]]
	done

	# readline replaces only what follows the '='
	complete_line "pmadvise --pid=$prefix"
	replies_include "$SLEEP_PID"

	complete_line "pmadvise -p$prefix"
	replies_include "-p$SLEEP_PID"
}

@test "completes the last PID of a comma-separated list" {
	local prefix=${SLEEP_PID:0:${#SLEEP_PID}-1}

	complete_line "pmadvise -p $$,$prefix"
	replies_include "$$,$SLEEP_PID"

	complete_line "pmadvise --pid=$$,$prefix"
	replies_include "$$,$SLEEP_PID"

	# a PID already in the list is not offered again
	complete_line "pmadvise -p $SLEEP_PID,$prefix"
	! replies_include "$SLEEP_PID,$SLEEP_PID" 2>/dev/null
}

@test "completes columns after -o, comma-aware" {
	complete_line "pmadvise -p $SLEEP_PID -o "
	replies_include PID COMM START END SIZE PERMS OFFSET DEVICE INODE PATH ADVICE \
		ADVISED STATUS ERRNO REASON RSS RSS-AFTER RSS-DELTA KSM

	complete_line "pmadvise -o ST"
	replies_are START STATUS

	# lower case is completed in capitals
	complete_line "pmadvise --output re"
	replies_are REASON REFERENCED REFERENCED-AFTER

	complete_line "pmadvise -o START,E"
	replies_are START,END START,ERRNO

	# columns already in the list are not offered again
	complete_line "pmadvise -o START,STATUS,ST"
	replies_are

	complete_line "pmadvise -oSIZE,ADV"
	replies_are -oSIZE,ADVICE -oSIZE,ADVISED
}

@test "completes columns after a '+' that extends the default" {
	complete_line "pmadvise -o +E"
	replies_are +END +ERRNO

	complete_line "pmadvise -o +START,s"
	replies_are +START,SIZE +START,STATUS +START,SWAP +START,SWAP-AFTER

	complete_line "pmadvise --output=+RSS-"
	replies_are +RSS-AFTER +RSS-DELTA
}

@test "completes selector terms after --select and --exclude" {
	complete_line "pmadvise -p $SLEEP_PID cold --select "
	replies_are all anon file heap stack private shared path= perms= min-size= max-size=

	complete_line "pmadvise --exclude s"
	replies_are stack shared

	complete_line "pmadvise -x m"
	replies_are min-size= max-size=

	complete_line "pmadvise --select=p"
	replies_are private path= perms=
}

@test "no space is added after path=, perms=, min-size=, max-size=" {
	complete_line "pmadvise --select pa"
	replies_are path=
	[[ " ${COMPOPT[*]} " == *" -o nospace "* ]]

	complete_line "pmadvise --select an"
	replies_are anon
	[[ " ${COMPOPT[*]} " != *nospace* ]]
}

@test "completes the last selector term of a comma-separated expression" {
	complete_line "pmadvise --select anon,p"
	replies_are anon,private anon,path= anon,perms=

	complete_line "pmadvise --exclude file,heap,m"
	replies_are file,heap,min-size= file,heap,max-size=

	# readline replaces only what follows the last '=' of the word;
	# a term already in the expression is not offered again
	complete_line "pmadvise --exclude=file,max-size=1G,m"
	replies_are 1G,min-size=

	complete_line "pmadvise -sanon,s"
	replies_are -sanon,shared -sanon,stack

	# nothing to offer for the value of path=, perms=, min-size=
	complete_line "pmadvise --select file,path="
	replies_are
	complete_line "pmadvise -s perms=r"
	replies_are
}

@test "completes selector terms for --rule, with no space after them" {
	complete_line "pmadvise -p $SLEEP_PID --rule "
	replies_are all anon file heap stack private shared path= perms= min-size= max-size=
	# a rule goes on after its selector (',' or '=ADVICE'): no space
	[[ " ${COMPOPT[*]} " == *" -o nospace "* ]]

	complete_line "pmadvise --rule anon,p"
	replies_are anon,private anon,path= anon,perms=

	complete_line "pmadvise -R s"
	replies_are stack shared

	complete_line "pmadvise -Rfile,m"
	replies_are -Rfile,min-size= -Rfile,max-size=

	# nothing to offer for the value of path=, perms=, min-size=
	complete_line "pmadvise --rule path="
	replies_are
	complete_line "pmadvise --rule anon,perms=r"
	replies_are
}

@test "completes advice names after the last '=' of --rule" {
	# readline replaces only what follows the last '=' of the word
	complete_line "pmadvise -p $SLEEP_PID --rule anon,private=pa"
	replies_are pageout

	complete_line "pmadvise --rule file="
	replies_are cold pageout willneed collapse mergeable unmergeable
	[[ " ${COMPOPT[*]} " != *nospace* ]]

	complete_line "pmadvise --rule=heap=c"
	replies_are cold collapse

	complete_line "pmadvise -Rstack=w"
	replies_are willneed

	# after a path=GLOB or perms=PATTERN term, the advice follows the next '='
	complete_line "pmadvise --rule path=*.so=p"
	replies_are pageout
	complete_line "pmadvise -R perms=r--p=m"
	replies_are mergeable
	complete_line "pmadvise -R anon,min-size=1M="
	replies_are cold pageout willneed collapse mergeable unmergeable

	# a RANGE selector is followed by the advice as well
	complete_line "pmadvise -R 7f3c2a400000+2M=u"
	replies_are unmergeable
}

@test "with --rule, the word after the options is a RANGE, not an ADVICE" {
	local -a starts
	mapfile -t starts < <(sleep_starts)

	complete_line "pmadvise -p $SLEEP_PID --rule anon=cold "
	replies_are "${starts[@]}"

	complete_line "pmadvise -p $SLEEP_PID -R file=cold -R anon=pageout "
	replies_are "${starts[@]}"

	complete_line "pmadvise --rule=anon=cold -p $SLEEP_PID "
	replies_are "${starts[@]}"

	# and the RULE column is offered
	complete_line "pmadvise -o START,RU"
	replies_are START,RULE
}

@test "completes files after --maps" {
	local dir=$BATS_TEST_TMPDIR/mapsdir
	mkdir "$dir"
	touch "$dir/heap.maps" "$dir/libs.maps" "$dir/notes.txt"

	complete_line "pmadvise -p $SLEEP_PID cold --maps $dir/"
	replies_are "$dir/heap.maps" "$dir/libs.maps" "$dir/notes.txt"

	complete_line "pmadvise -m $dir/h"
	replies_are "$dir/heap.maps"

	complete_line "pmadvise --maps=$dir/l"
	replies_are "$dir/libs.maps"

	# '-' is standard input
	complete_line "pmadvise --maps "
	replies_include -
	# readline quotes and marks directories as for file names
	[[ " ${COMPOPT[*]} " == *" -o filenames "* ]]
}

@test "completes the start addresses of the target's mappings for RANGE" {
	local -a starts
	mapfile -t starts < <(sleep_starts)
	[ "${#starts[@]}" -gt 3 ]

	complete_line "pmadvise -p $SLEEP_PID cold "
	replies_are "${starts[@]}"

	# and again for every further RANGE
	complete_line "pmadvise -p $SLEEP_PID pageout ${starts[0]} "
	replies_are "${starts[@]}"

	local prefix=${starts[0]:0:6} w
	complete_line "pmadvise -p $SLEEP_PID cold $prefix"
	replies_include "${starts[0]}"
	for w in "${COMPREPLY[@]}"; do
		[[ $w == "$prefix"* ]]
	done

	# a 0x prefix is kept
	complete_line "pmadvise -p $SLEEP_PID cold 0x$prefix"
	replies_include "0x${starts[0]}"
}

@test "the PID for RANGE completion comes from any form of --pid" {
	local first
	first=$(sleep_starts | head -n 1)

	complete_line "pmadvise --pid=$SLEEP_PID cold "
	replies_include "$first"

	complete_line "pmadvise -p$SLEEP_PID willneed "
	replies_include "$first"

	# the first PID of a list
	complete_line "pmadvise -p $SLEEP_PID,$$ cold "
	replies_include "$first"

	complete_line "pmadvise -J -s anon -p $SLEEP_PID --dry-run cold "
	replies_include "$first"
}

@test "offers no addresses without a PID on the line" {
	complete_line "pmadvise cold "
	replies_are
}

@test "completes a command after -- in launcher mode" {
	complete_line "pmadvise mergeable -- slee"
	replies_include sleep
}

@test "works with bash-completion's _init_completion as well" {
	local bc=/usr/share/bash-completion/bash_completion
	[ -r "$bc" ] || skip "bash-completion is not installed"
	# shellcheck source=/dev/null
	source "$bc"
	declare -F _init_completion >/dev/null || skip "no _init_completion in $bc"

	complete_line "pmadvise --select=anon,p"
	replies_are anon,private anon,path= anon,perms=

	complete_line "pmadvise -o +START,s"
	replies_are +START,SIZE +START,STATUS +START,SWAP +START,SWAP-AFTER

	complete_line "pmadvise -p $SLEEP_PID cold "
	replies_include "$(sleep_starts | head -n 1)"

	complete_line "pmadvise -p $SLEEP_PID --rule anon,private=pa"
	replies_are pageout
	complete_line "pmadvise --rule=anon,p"
	replies_are anon,private anon,path= anon,perms=
}

@test "--cgroup completes directories, the cgroup hierarchies first" {
	[[ -d /sys/fs/cgroup ]] || skip "no /sys/fs/cgroup"
	local -a dirs
	mapfile -t dirs < <(compgen -d -- /sys/fs/cgroup/)
	[ "${#dirs[@]}" -gt 0 ] || skip "nothing under /sys/fs/cgroup"
	complete_line "pmadvise --cgroup "
	replies_are "${dirs[@]}"
	complete_line "pmadvise -c "
	replies_are "${dirs[@]}"
	complete_line "pmadvise --cgroup=/sys/fs/cgroup/"
	replies_include "${dirs[0]}"

	# directories only, and what is typed is kept
	mkdir -p "$BATS_TEST_TMPDIR/cg/child"
	: >"$BATS_TEST_TMPDIR/cg/file"
	complete_line "pmadvise -c $BATS_TEST_TMPDIR/cg/"
	replies_are "$BATS_TEST_TMPDIR/cg/child"
}

@test "--timeout takes a value, offers none, and the advice follows" {
	complete_line "pmadvise --timeout "
	replies_are
	complete_line "pmadvise --timeout 10 --cgroup /sys/fs/cgroup -p $SLEEP_PID "
	replies_include cold pageout
	complete_line "pmadvise -c /sys/fs/cgroup --recursive --pro"
	replies_are --progress
	complete_line "pmadvise --no-p"
	replies_are --no-progress
}

@test "-- after --cgroup ends the options: no launcher completion" {
	complete_line "pmadvise -c /sys/fs/cgroup cold -- "
	# no command names: with a target, what follows -- is RANGEs
	replies_are
}
