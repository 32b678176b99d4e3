# Helpers for replay's integration tests (sourced after tests/cli/lib.sh):
# start `loadtrace sim` on a free port with its own --log, stop it, and read
# results and logs as JSON lines with jq. Every wait is bounded.
. "$LT_SRC/tests/lib/servers.sh"

start_sim() { # name [sim options...]; sets SIM_PID, SIM_URL and SIM_LOG
    # its stderr apart from $T/NAME.err, which tests use for replay's
    _simlib_name=$1
    shift
    sim_start -e "$T/$_simlib_name.sim.err" "$_simlib_name" -q "$@"
}
stop_sim() { # the last started sim; it flushes its log on SIGTERM
    sim_stop
    SIM_PID=
}

# The sum of the sim's /metrics series named NAME... (0 if it does not answer).
sim_metric() { # name...
    server_metric "$SIM_URL" "$@"
}

# Wait (at most 30 s) until sim_metric NAME... reaches MIN: a point in a run
# told by the server's own count, where a fixed sleep would guess how fast
# a loaded machine starts the client.
wait_sim_metric() { # min name...
    wait_server_metric "$SIM_URL" "$@"
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
