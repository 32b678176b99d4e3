# Helpers for the sim's integration tests (sourced after tests/cli/lib.sh):
# start the real binary on a free port and stop it with a signal
# (tests/lib/servers.sh), post requests and read streams. Every curl has a
# time limit, so no test can hang.
. "$LT_SRC/tests/lib/servers.sh"

# start_sim NAME [sim options...]: sets SIM_PID, PORT, URL; log in $T/NAME.log,
# stderr in $T/NAME.err. SIM_THREADS=N in the environment runs every sim with
# a pool of N threads.
start_sim() {
    sim_name=$1
    shift
    sim_start "$sim_name" ${SIM_THREADS:+--threads "$SIM_THREADS"} "$@"
    PORT=$SIM_PORT URL=$SIM_URL
}

# stop_sim [SIGNAL]: stop the last started sim, expect exit status 0.
stop_sim() {
    sim_stop "${1:-TERM}"
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
