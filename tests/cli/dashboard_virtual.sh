#!/bin/sh
# Runs that draw no dashboard whatever the terminal (docs/dashboard.md):
#  1. replay --virtual on a terminal (tmux): --ui auto says why, in one
#     line, and the run's lines and totals follow on the normal screen;
#  2. --ui dashboard with --virtual, or in a rank of an MPI job, is a usage
#     error that says why;
#  3. standard error to a file: --virtual's lines as before, no note.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
L=$LOADTRACE

. "$LT_SRC/tests/cli/tmuxlib.sh"

"$L" synth --arrivals poisson --rate 5 --requests 200 --in fixed:64 --out fixed:32 --seed 3 -q \
    -o "$T/t.lt.zst" || fail "synth"

# --- 1. on a terminal
$TM new-session -d -s d -x 110 -y 36 \
    "LC_ALL=C.UTF-8 '$L' replay '$T/t.lt.zst' --target sim --virtual -o '$T/v.lt.zst' --no-summary --ui auto; echo EXIT=\$?; sleep 600" ||
    fail "tmux new-session"
wait_until 60 pane_has "^EXIT=" || fail "the virtual replay did not end: $(pane | tail -5)"
pane >"$T/pane.txt"
expect_eq "EXIT=0" "$(grep '^EXIT=' "$T/pane.txt")" "exit status"
expect_grep "^loadtrace replay: no dashboard: a --virtual replay runs in virtual time" "$T/pane.txt"
expect_grep "^loadtrace replay: virtual time, profile default: 200 requests" "$T/pane.txt"
expect_no_grep "latency (ms)" "$T/pane.txt"
stop_tmux

# --- 2. asked for, refused with the reason
"$L" replay "$T/t.lt.zst" --target sim --virtual -o "$T/v2.lt.zst" --ui dashboard 2>"$T/v2.err"
expect_status 2 $? "--ui dashboard --virtual"
expect_grep "ui dashboard: a --virtual replay runs in virtual time" "$T/v2.err"
[ -e "$T/v2.lt.zst" ] && fail "a refused run wrote its results file"
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 "$L" replay "$T/t.lt.zst" --target http://127.0.0.1:9 \
    -o "$T/m.lt.zst" --ui dashboard 2>"$T/m.err"
expect_status 2 $? "--ui dashboard in an MPI rank"
expect_grep "ui dashboard: the ranks of an MPI replay share no screen" "$T/m.err"

# --- 3. to a file: as before
"$L" replay "$T/t.lt.zst" --target sim --virtual -o "$T/v3.lt.zst" --no-summary 2>"$T/v3.err"
expect_status 0 $? "--virtual to a file"
expect_no_grep "no dashboard" "$T/v3.err"
expect_grep "^loadtrace replay: virtual time, profile default: 200 requests" "$T/v3.err"
finish
