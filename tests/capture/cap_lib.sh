# Helpers for capture's integration tests (sourced after tests/cli/lib.sh):
# start sim and capture on free ports (each binds port 0 and writes its port
# to a file), stop them with a signal, kill whatever is left on exit. Every
# wait loop and every curl has a limit, so no test can hang.
CAP_PIDS=""
cap_cleanup() {
    for p in $CAP_PIDS; do kill -9 "$p" 2>/dev/null; done
    return 0
}
trap cap_cleanup EXIT
trap 'cap_cleanup; exit 1' INT TERM

# wait_port FILE PID: the port written to FILE, once it is there.
wait_port() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$2" 2>/dev/null; then
            return 1
        fi
        sleep 0.05
    done
    cat "$1"
}

# start_sim NAME [sim options...]: sets SIM_PID, SIM_URL; log in $T/NAME.log
start_sim() {
    sname=$1
    shift
    rm -f "$T/$sname.port"
    "$LOADTRACE" sim --listen 127.0.0.1:0 --port-file "$T/$sname.port" --seed 1 \
        --log "$T/$sname.log" -q "$@" 2>"$T/$sname.err" &
    SIM_PID=$!
    CAP_PIDS="$CAP_PIDS $SIM_PID"
    p=$(wait_port "$T/$sname.port" $SIM_PID) || {
        echo "FAIL: sim $sname did not start:" >&2
        cat "$T/$sname.err" >&2
        exit 1
    }
    SIM_URL="http://127.0.0.1:$p"
}

# start_capture NAME UPSTREAM [capture options...]: sets CAP_PID, CAP_URL;
# trace in $T/NAME.lt.zst, stderr in $T/NAME.err
start_capture() {
    cname=$1
    up=$2
    shift 2
    rm -f "$T/$cname.port"
    "$LOADTRACE" capture --listen 127.0.0.1:0 --port-file "$T/$cname.port" --upstream "$up" \
        -o "$T/$cname.lt.zst" "$@" 2>"$T/$cname.err" &
    CAP_PID=$!
    CAP_PIDS="$CAP_PIDS $CAP_PID"
    p=$(wait_port "$T/$cname.port" $CAP_PID) || {
        echo "FAIL: capture $cname did not start:" >&2
        cat "$T/$cname.err" >&2
        exit 1
    }
    CAP_URL="http://127.0.0.1:$p"
}

# stop PID NAME [SIGNAL]: stop a server, expect exit status 0.
stop() {
    kill "-${3:-TERM}" "$1"
    wait "$1"
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
