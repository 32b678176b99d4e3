# Helpers for replay's integration tests (sourced after tests/cli/lib.sh):
# start `loadtrace sim` on a free port with its own --log, stop it, and read
# results and logs as JSON lines with jq. Every wait is bounded.
SIM_PID=
trap 'if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null; fi' EXIT INT TERM

start_sim() { # name [sim options...]; sets SIM_URL and SIM_LOG
    _n=$1
    shift
    rm -f "$T/$_n.port" "$T/$_n.log"
    "$LOADTRACE" sim --listen 127.0.0.1:0 --port-file "$T/$_n.port" --log "$T/$_n.log" -q "$@" &
    SIM_PID=$!
    _i=0
    while [ ! -s "$T/$_n.port" ] && [ $_i -lt 100 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    if [ ! -s "$T/$_n.port" ]; then
        echo "FAIL: the sim did not start" >&2
        exit 1
    fi
    SIM_URL="http://127.0.0.1:$(cat "$T/$_n.port")"
    SIM_LOG="$T/$_n.log"
}

stop_sim() { # the sim flushes its log on SIGTERM
    kill "$SIM_PID" 2>/dev/null
    wait "$SIM_PID" 2>/dev/null
    SIM_PID=
}

results() { # file: the result records as JSON lines
    "$LOADTRACE" cat --no-header "$1" | jq -c 'select(.rec != "run")'
}

runs() { # file: the run records
    "$LOADTRACE" cat --no-header "$1" | jq -c 'select(.rec == "run")'
}

streams() { # sim log: the streamed inference requests (calibration probes are not streamed)
    jq -c 'select(.seq != null and .stream == true)' "$1"
}

# Largest number of intervals [arrival_us, end_us) open at once in a sim log
# (on stdin, JSON lines).
max_overlap() {
    jq -r '"\(.arrival_us) 1\n\(.end_us) -1"' | sort -n -k1,1 -k2,2n |
        awk '{ n += $2; if (n > m) m = n } END { print m + 0 }'
}
