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

# The sum of the sim's /metrics series named NAME... (0 if it does not answer).
sim_metric() { # name...
    curl -s --max-time 5 "$SIM_URL/metrics" 2>/dev/null | awk -v names="$*" '
        BEGIN { n = split(names, a, " "); for (k = 1; k <= n; k++) want[a[k]] = 1 }
        !/^#/ { name = $1; sub(/[{].*/, "", name); if (name in want) s += $NF }
        END { print s + 0 }'
}

# Wait (at most 30 s) until sim_metric NAME... reaches MIN: a point in a run
# told by the server's own count, where a fixed sleep would guess how fast
# a loaded machine starts the client.
wait_sim_metric() { # min name...
    _min=$1
    shift
    _i=0
    while [ $_i -lt 300 ] && [ "$(sim_metric "$@")" -lt "$_min" ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
}

results() { # file: the result records as JSON lines
    "$LOADTRACE" cat --no-header "$1" | jq -c 'select(.rec == null)'
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

# Do the sim's arrivals (its log) follow a results file's send times? No
# request was sent before its sched; and, both sorted, each arrival - send
# less the smallest is that request's extra delivery time: under 250 ms,
# which a loaded machine stays within (the sends themselves may be late:
# that is recorded as lag, sent - sched).
follows_sends() { # results, sim log
    _early=$(results "$1" | jq -s '[.[] | select(.sent != null and .sent < .sched - 1000)] | length')
    [ "$_early" = 0 ] || { echo "$_early requests sent before their sched" >&2; return 1; }
    results "$1" | jq -r 'select(.sent != null) | .sent' | sort -n >"$T/fs-sent.txt"
    streams "$2" | jq -r .arrival_us | sort -n >"$T/fs-arr.txt"
    paste "$T/fs-sent.txt" "$T/fs-arr.txt" |
        awk '{ d[NR] = $2 - $1; if (NR == 1 || d[NR] < m) m = d[NR]; s[NR] = $0 }
             END { for (k = 1; k <= NR; k++) if (d[k] - m > 250000) { print "off: " s[k]; bad = 1 }
                   exit bad || NR == 0 }'
}
