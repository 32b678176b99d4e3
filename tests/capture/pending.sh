#!/bin/sh
# capture's memory for request bodies has a total cap (--max-pending), as
# the sim's: 12 clients each send 8 MiB of a body and stall, the bodies
# unfinished. With --max-pending 32M capture's resident memory grows by at
# most the cap (plus room for buffers), those past it get a 503 when their
# body ends, and the rest are forwarded; with the default cap (256 MiB)
# the same clients take it up by their 96 MiB, which shows the measure
# sees what it should. Memory is read from /proc (VmRSS), the counts from
# the clients' own status codes.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"
[ -r /proc/self/status ] || { echo "FAIL: no /proc to read memory from" >&2; exit 1; }
N=12
clients() { # url tag: N clients that send 8 MiB, then wait for $T/go.tag
    for i in $(seq 1 $N); do
        {
            head -c 8388608 /dev/zero
            : >"$T/sent.$2.$i"
            j=0
            while [ ! -e "$T/go.$2" ] && [ $j -lt 600 ]; do
                sleep 0.1
                j=$((j + 1))
            done
        } | curl -sS -X POST -T - -H 'Content-Type: application/json' --max-time 120 \
            -o /dev/null -w '%{http_code}\n' "$1/v1/chat/completions" >"$T/code.$2.$i" 2>/dev/null &
    done
}
all_sent() { # tag: wait (at most 60 s) for every client to have written its 8 MiB
    i=0
    while [ "$(ls "$T" | grep -c "^sent\.$1\.")" -lt $N ] && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}
start_sim up --profile fast

run() { # tag [capture options...]: GROWN, the growth of capture's RSS in kB
    tag=$1
    shift
    start_capture "cap$tag" "$SIM_URL" "$@"
    base=$(rss "$CAP_PID")
    clients "$CAP_URL" "$tag"
    all_sent "$tag"
    wait_stable "$CAP_PID"
    grown=$(($(rss "$CAP_PID") - base))
    : >"$T/go.$tag"
    wait_clients
    stop "$CAP_PID" "capture $tag"
    GROWN=$grown
}
wait_clients() {
    i=0
    while [ "$(cat "$T"/code.$tag.* 2>/dev/null | wc -l)" -lt $N ] && [ $i -lt 1200 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

run capped --max-pending 32M --max-body 16M
grown=$GROWN
echo "capped: capture grew by $grown kB with $N x 8 MiB held"
# Under AddressSanitizer freed bodies sit in its quarantine and every
# block carries redzones: RSS says nothing of what capture holds there, so
# only the answers (503s below) are judged.
if asan_build "$LOADTRACE"; then
    echo "note: an ASan build: capture's RSS is not judged"
elif [ "$grown" -ge $((32 * 1024 + 24 * 1024)) ]; then
    fail "with --max-pending 32M capture grew by $grown kB"
fi
busy=$(cat "$T"/code.capped.* | grep -c '^503$')
other=$(cat "$T"/code.capped.* | grep -vc '^503$')
[ "$busy" -ge 8 ] || fail "503s: $busy of $N (at most 4 bodies of 8 MiB fit 32 MiB)"
[ "$other" -ge 1 ] && [ "$other" -le 4 ] || fail "answered past the cap: $other of $N"
expect_grep "$busy refused at the limit of bodies held (503)" "$T/capcapped.err"
records "$T/capcapped.lt.zst" | jq -r 'select(.err == "busy") | .err' >"$T/busy.recs"
expect_eq "$busy" "$(wc -l <"$T/busy.recs")" "records with err busy"

run default --max-body 16M
grown=$GROWN
echo "default cap: capture grew by $grown kB"
[ "$grown" -ge $((80 * 1024)) ] || fail "without a low cap capture held only $grown kB of 96 MiB"
expect_eq 0 "$(cat "$T"/code.default.* | grep -c '^503$')" "503s under the default cap"
finish
