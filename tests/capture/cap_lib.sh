# Helpers for capture's integration tests (sourced after tests/cli/lib.sh):
# start sim and capture on free ports and stop them with a signal
# (tests/lib/servers.sh), send requests and read traces. Every wait loop and
# every curl has a limit, so no test can hang.
. "$LT_SRC/tests/lib/servers.sh"

# start_sim NAME [sim options...]: sets SIM_PID, SIM_URL; log in $T/NAME.log
start_sim() {
    sname=$1
    shift
    sim_start "$sname" --seed 1 -q "$@"
}

# start_capture NAME UPSTREAM [capture options...]: sets CAP_PID, CAP_URL;
# trace in $T/NAME.lt.zst, stderr in $T/NAME.err
start_capture() {
    cname=$1
    up=$2
    shift 2
    server_start "$cname" "$LOADTRACE" capture --upstream "$up" -o "$T/$cname.lt.zst" "$@" || exit 1
    CAP_PID=$SERVER_PID CAP_URL=$SERVER_URL
}

# stop PID NAME [SIGNAL]: stop a server, expect exit status 0.
stop() {
    server_stop_pid "$1" "${3:-TERM}"
    expect_status 0 $? "$2 exit status after SIG${3:-TERM}"
}

# req URL PATH JSON OUT [curl options...]: body in OUT, status in OUT.status,
# curl's exit status in OUT.rc
req() {
    u=$1
    p=$2
    d=$3
    o=$4
    shift 4
    curl -sS -N --max-time 20 -o "$o" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$d" "$@" "$u$p" >"$o.status" 2>"$o.err"
    echo $? >"$o.rc"
}

# wait_chunks FILE N: wait (at most 30 s) until a stream written to FILE by
# a curl in the background has N "data:" lines. The file may not exist yet:
# the background shell has not always run by the first look, and a missing
# file counts as no chunks rather than ending the wait.
wait_chunks() {
    i=0
    while [ $i -lt 600 ] && [ "$(cat "$1" 2>/dev/null | grep -c '^data:')" -lt "$2" ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

# records FILE: the trace's records as JSON lines (no header)
records() {
    "$LOADTRACE" cat --no-header "$1"
}

# The memory tests (pending.sh, idle.sh): a process's resident set in kB,
# and a wait until it is the same 5 polls in a row.
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; } # kB
# wait_stable PID: until its RSS is the same 5 polls in a row (at most 30 s)
wait_stable() {
    _last=-1 _same=0 _i=0
    while [ $_same -lt 5 ] && [ $_i -lt 300 ]; do
        _r=$(rss "$1")
        if [ "$_r" = "$_last" ]; then _same=$((_same + 1)); else _same=0; fi
        _last=$_r
        sleep 0.1
        _i=$((_i + 1))
    done
}
