#!/bin/sh
# Sampling a trace never cuts a session in half: `--window` keeps
# the sessions that begin in it, each with all its turns (those after the
# window's end too, and none that began before it), `--requests N` the
# first sessions (in order of their first request) that fit whole in N, in
# trace time, closed loop and virtual time alike, and the run's first line
# says what was kept. The trace is built by hand, so every answer is known:
# each request asks for a distinct output length (10 + its record number),
# and the sim's log says which lengths it was asked for.
#
#   record  t (s)  session  turn      record  t (s)  session  turn
#     0     0      A=1      0           7     7      E=5      0
#     1     1      B=2      0           8     9      A=1      2
#     2     3      B=2      1           9     10     F=6      0
#     3     4      -        -          10     11     F=6      1
#     4     5      D=4      0          11     12     D=4      2
#     5     6      D=4      1          12     13     -        -
#     6     6.5    A=1      1
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# record: t in seconds, session (0: none), turn
rows='0 1 0
1 2 0
3 2 1
4 0 0
5 4 0
6 4 1
6.5 1 1
7 5 0
9 1 2
10 6 0
11 6 1
12 4 2
13 0 0'
echo "$rows" | awk '{ printf "{\"t\":%d,", $1 * 1000000
    if ($2) printf "\"session\":%d,\"turn\":%d,", $2, $3
    printf "\"in\":16,\"out\":%d}\n", 10 + NR - 1 }' >"$T/h.jsonl"
"$L" import --from jsonl "$T/h.jsonl" -o "$T/h.lt.zst" -q || fail "import the hand-built trace"

# The records the sim was asked for (by output length), sorted.
asked() { # sim-log
    streams "$1" | jq -r '.max_tokens - 10' | sort -n | tr '\n' ' ' | sed 's/ $//'
}
# Live replay against a sim of its own; $1 names the run, the rest are options.
live() { # name options...
    _n=$1
    shift
    "$L" replay "$T/h.lt.zst" --target sim --sim-profile fast --sim-log "$T/$_n.log" \
        --no-calibrate -o "$T/$_n.lt.zst" --no-summary "$@" 2>"$T/$_n.err"
}

# --- --window 4,8: sessions that begin in [4 s, 8 s): record 3 (no session),
# D (4, 5 and 11, its last turn after the window) and E (7); A's turn at
# 6.5 s (record 6) began before the window and is not sent.
live win --speed 20 --window 4s,8s
expect_status 0 $? "replay --window"
expect_eq "3 4 5 7 11" "$(asked "$T/win.log")" "records sent with --window 4s,8s"
expect_eq "loadtrace replay: sample: 5 of 13 requests, 2 of 5 sessions, each session whole (kept where its first request falls)" \
    "$(head -1 "$T/win.err")" "first line with --window"
# D's last turn waits for its previous one (the sim's times).
d1_end=$(streams "$T/win.log" | jq -r 'select(.max_tokens == 15) | .end_us')
d2_arr=$(streams "$T/win.log" | jq -r 'select(.max_tokens == 21) | .arrival_us')
[ -n "$d1_end" ] && [ -n "$d2_arr" ] && [ "$d2_arr" -ge "$d1_end" ] ||
    fail "D's third turn arrived at $d2_arr us, before its second ended at $d1_end us"

# --- --requests 6 in trace time: A (3 requests), B (2), record 3 (1) fit;
# D (3 more) would make 9, so the sample ends there.
live req6 --speed 20 --requests 6
expect_status 0 $? "replay --requests 6"
expect_eq "0 1 2 3 6 8" "$(asked "$T/req6.log")" "records sent with --requests 6"
expect_grep "sample: 6 of 13 requests, 2 of 5 sessions" "$T/req6.err"

# --- --requests 5: A and B; record 3 would be the sixth.
live req5 --speed 20 --requests 5
expect_status 0 $? "replay --requests 5"
expect_eq "0 1 2 6 8" "$(asked "$T/req5.log")" "records sent with --requests 5"

# --- --requests 2: the first session alone has 3 requests: a usage error
# (exit 2, docs/cli.md) that names the smallest N that keeps it whole;
# nothing sent.
live req2 --speed 20 --requests 2
expect_status 2 $? "replay --requests 2, though no whole session fits"
expect_grep "first session to replay (record 0) has 3 requests.*ask for at least 3" "$T/req2.err"
expect_eq "" "$(asked "$T/req2.log" 2>/dev/null)" "records sent with --requests 2"

# --- closed loop: --requests 6 per run takes the same whole sessions.
live closed --concurrency 2 --requests 6
expect_status 0 $? "closed loop --requests 6"
expect_eq "0 1 2 3 6 8" "$(asked "$T/closed.log")" "records sent by the closed loop"

# --- virtual time: the same samples; the results file names each record.
virt() { # name options...
    _n=$1
    shift
    "$L" replay "$T/h.lt.zst" --target sim --virtual -o "$T/$_n.lt.zst" --no-summary \
        "$@" 2>"$T/$_n.err"
}
recs() { results "$1" | jq -r .i | sort -n | tr '\n' ' ' | sed 's/ $//'; }
virt vwin --window 4s,8s
expect_status 0 $? "virtual --window"
expect_eq "3 4 5 7 11" "$(recs "$T/vwin.lt.zst")" "records replayed in virtual time with --window"
expect_grep "sample: 5 of 13 requests, 2 of 5 sessions" "$T/vwin.err"
virt vreq2 --requests 2
expect_status 2 $? "virtual --requests 2, though no whole session fits"
expect_grep "first session to replay (record 0) has 3 requests.*ask for at least 3" "$T/vreq2.err"
# the closed loop and a capacity search's probes sample the same way
virt vreq2c --requests 2 --concurrency 1
expect_status 2 $? "virtual closed loop --requests 2"
"$L" replay "$T/h.lt.zst" --target sim --virtual --find-max concurrency --slo ttft=1s \
    --requests 2 -o "$T/fm2.lt.zst" -q 2>"$T/fm2.err" >/dev/null
expect_status 2 $? "--find-max concurrency --requests 2"
expect_grep "ask for at least 3" "$T/fm2.err"
[ ! -e "$T/fm2.lt.zst" ] || fail "a refused search wrote a results file"
expect_no_grep "recorded in" "$T/vreq2.err"
[ ! -e "$T/vreq2.lt.zst" ] || fail "virtual --requests 2 wrote a results file"
virt vreq --requests 6
expect_status 0 $? "virtual --requests 6"
expect_eq "0 1 2 3 6 8" "$(recs "$T/vreq.lt.zst")" "records replayed in virtual time with --requests 6"
# Open loop: the same sessions, at drawn times.
virt vopen --rate 100 --arrivals constant --requests 6
expect_status 0 $? "virtual open loop --requests 6"
expect_eq "0 1 2 3 6 8" "$(recs "$T/vopen.lt.zst")" "records replayed by the open loop"
# Closed loop past the trace's end: one whole lap (13), then A alone (its 3
# turns fit in the 4 left; B's 2 more would make 5 past 17).
virt vlap --concurrency 2 --requests 17
expect_status 0 $? "virtual closed loop --requests 17"
expect_eq "0 0 1 2 3 4 5 6 6 7 8 8 9 10 11 12" "$(recs "$T/vlap.lt.zst")" "records of a lap and a part"

# --- no sampling, no sample line.
virt vall
expect_status 0 $? "virtual, the whole trace"
expect_no_grep "sample:" "$T/vall.err"
expect_eq 13 "$(results "$T/vall.lt.zst" | wc -l)" "results of the whole trace"
finish
