# Helpers for the sim's integration tests (sourced after tests/cli/lib.sh):
# start the real binary on a free port (it binds port 0 and writes the port
# to a file), stop it with a signal, and kill anything left on exit. Every
# curl has a time limit, so no test can hang.
SIM_PIDS=""
sim_cleanup() {
    for p in $SIM_PIDS; do kill -9 "$p" 2>/dev/null; done
    return 0
}
trap sim_cleanup EXIT
trap 'sim_cleanup; exit 1' INT TERM

# start_sim NAME [sim options...]: sets SIM_PID, PORT, URL; log in $T/NAME.log.
# SIM_THREADS=N in the environment runs every sim with a pool of N threads.
start_sim() {
    sim_name=$1
    shift
    rm -f "$T/$sim_name.port"
    "$LOADTRACE" sim --listen 127.0.0.1:0 --port-file "$T/$sim_name.port" \
        --log "$T/$sim_name.log" ${SIM_THREADS:+--threads "$SIM_THREADS"} "$@" \
        2>"$T/$sim_name.err" &
    SIM_PID=$!
    SIM_PIDS="$SIM_PIDS $SIM_PID"
    i=0
    while [ ! -s "$T/$sim_name.port" ]; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$SIM_PID" 2>/dev/null; then
            echo "FAIL: sim $sim_name did not start:" >&2
            cat "$T/$sim_name.err" >&2
            exit 1
        fi
        sleep 0.05
    done
    PORT=$(cat "$T/$sim_name.port")
    URL="http://127.0.0.1:$PORT"
}

# stop_sim [SIGNAL]: stop the last started sim, expect exit status 0.
stop_sim() {
    kill "-${1:-TERM}" "$SIM_PID"
    wait "$SIM_PID"
    expect_status 0 $? "sim $sim_name exit status after SIG${1:-TERM}"
}

# post PATH JSON [curl options...]: body on stdout, HTTP status in $T/status
post() {
    p=$1
    d=$2
    shift 2
    curl -sS -N --max-time 20 -o - -w '%{stderr}%{http_code}' -H 'Content-Type: application/json' \
        -d "$d" "$@" "$URL$p" 2>"$T/status"
}
status() {
    tail -c 3 "$T/status"
}
# data JSON lines of an SSE stream (without "data: " and without [DONE])
sse_json() {
    sed -n 's/^data: //p' | grep -v '^\[DONE\]$'
}
