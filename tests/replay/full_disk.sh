#!/bin/sh
# Writing results or a trace to a disk that fills up: the failed write is
# said when it happens (replay stops its run there; capture says it while
# it goes on relaying), the counts printed are what reached the file (what
# `cat --salvage` reads back, the ground truth here), and the exit status
# is 1. Two ways to fill it: a file size limit (ulimit -f, any user: the
# write fails with EFBIG, and loadtrace ignores SIGXFSZ), and, when this
# runs as root where mounting is allowed, a 2 MB tmpfs filled to 64 KB of
# room (ENOSPC); without that permission the tmpfs part says so and is
# left out, the rest still runs.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"
L=$LOADTRACE
MNT=
cleanup_mnt() {
    [ -n "$MNT" ] && umount "$MNT" 2>/dev/null
    MNT=
}
servers_at_exit cleanup_mnt
"$L" synth --arrivals poisson --rate 2000 --requests 20000 --in fixed:50 --out fixed:60 --seed 3 \
    -q -o "$T/big.lt.zst" || fail "synth big"
"$L" synth --arrivals poisson --rate 1500 --requests 4000 --in fixed:50 --out fixed:30 --seed 4 \
    -q -o "$T/live.lt.zst" || fail "synth live"

salvaged() { # file: result (or trace) records cat --salvage reads back,
    # a request still running when it was written (err unfinished) aside
    "$L" cat --salvage --no-header "$1" 2>/dev/null |
        jq -c 'select(.rec == null and .err != "unfinished")' | wc -l
}
# run LIMIT-BLOCKS CMD...: CMD with its stderr in $T/err, under ulimit -f
# when LIMIT-BLOCKS is not 0
run() {
    _lim=$1
    shift
    if [ "$_lim" -gt 0 ]; then
        (ulimit -f "$_lim" && exec "$@") 2>"$T/err"
    else
        "$@" 2>"$T/err"
    fi
}
check_replay() { # what file
    expect_grep "write failed: \(No space left on device\|File too large\)" "$T/err"
    n=$(sed -n 's/.* \([0-9]*\) requests reached .* before the write failed.*/\1/p' "$T/err")
    [ -n "$n" ] || {
        fail "$1: no count of what reached the file"
        sed 's/^/    /' "$T/err" >&2
        return
    }
    expect_eq "$n" "$(salvaged "$2")" "$1: requests said to have reached the file vs cat --salvage"
    [ "$n" -gt 0 ] || fail "$1: nothing reached the file"
}

disk() { # name dir limit-blocks
    name=$1 D=$2 lim=$3
    # --- replay in virtual time
    run "$lim" "$L" replay "$T/big.lt.zst" --target sim --virtual -q --no-summary -o "$D/v.lt.zst"
    expect_status 1 $? "$name: virtual replay onto a full disk"
    check_replay "$name: virtual" "$D/v.lt.zst"
    rm -f "$D/v.lt.zst"
    # --- a live replay against the sim
    run "$lim" "$L" replay "$T/live.lt.zst" --target sim --sim-profile fast --no-calibrate \
        --no-server-metrics -q --no-summary -o "$D/r.lt.zst"
    expect_status 1 $? "$name: live replay onto a full disk"
    check_replay "$name: live" "$D/r.lt.zst"
    rm -f "$D/r.lt.zst"
    # --- capture: replay sends through it; the trace goes to the full disk
    # (fuller: a trace record takes a few bytes, a result tens)
    if [ "$lim" -gt 0 ]; then
        lim=48
    else
        dd if=/dev/zero of="$D/fill2" bs=1k count=48 2>/dev/null
    fi
    start_sim up --profile fast
    if [ "$lim" -gt 0 ]; then
        set -- sh -c 'ulimit -f "$0" && exec "$@"' "$lim"
    else
        set --
    fi
    server_start -e "$T/cap.err" cap "$@" "$L" capture --upstream "$SIM_URL" -o "$D/c.lt.zst" || {
        fail "$name: capture did not start"
        return
    }
    CAP_PID=$SERVER_PID
    CAP_URL=$SERVER_URL
    "$L" replay "$T/live.lt.zst" --target "$CAP_URL" --model m --no-calibrate \
        --no-server-metrics -q --no-summary -o "$T/through.lt.zst" 2>/dev/null
    # said while running: wait (bounded) for the line, with capture still up
    wait_until 10 grep -q "write failed" "$T/cap.err"
    expect_grep "write failed: \(No space left on device\|File too large\).*; requests from now on are relayed but not recorded" \
        "$T/cap.err"
    kill -0 "$CAP_PID" 2>/dev/null || fail "$name: capture ended at the failed write"
    # and it still relays
    req "$CAP_URL" /v1/chat/completions \
        '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3}' "$T/after"
    expect_eq 200 "$(cat "$T/after.status")" "$name: a request after the failed write"
    server_stop_pid "$CAP_PID"
    expect_status 1 $? "$name: capture exit after a failed write"
    rec=$(sed -n 's/.* requests, \([0-9]*\) recorded, .*/\1/p' "$T/cap.err")
    expect_eq "$rec" "$(salvaged "$D/c.lt.zst")" "$name: capture's recorded vs cat --salvage"
    [ "${rec:-0}" -gt 0 ] || fail "$name: capture recorded nothing"
    lost=$(sed -n 's/.* \([0-9]*\) lost (never finished, or not written).*/\1/p' "$T/cap.err")
    [ "${lost:-0}" -gt 0 ] || fail "$name: capture lost nothing though its disk filled"
    server_stop_pid "$SIM_PID"
    rm -f "$D/c.lt.zst"
}

# a file size limit of 128 blocks (ulimit -f counts 512-byte blocks, or
# 1 KiB in some shells: either way far below what these runs write)
mkdir -p "$T/lim"
disk "size limit" "$T/lim" 128

# a full tmpfs, where allowed
if [ "$(id -u)" = 0 ] && mkdir -p "$T/mnt" && mount -t tmpfs -o size=2m tmpfs "$T/mnt" 2>/dev/null; then
    MNT=$T/mnt
    dd if=/dev/zero of="$MNT/fill" bs=1k count=1984 2>/dev/null
    disk "full tmpfs" "$MNT" 0
    cleanup_mnt
else
    echo "note: not root or mounting not allowed: the tmpfs case is left out (the size limit case ran)"
fi
finish
