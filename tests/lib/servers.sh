# Start, wait for and stop the servers a test or a bench script runs
# (sourced; POSIX sh). A server binds a free loopback port (127.0.0.1:0) and
# writes it to its --port-file; every wait here is bounded and none is a
# fixed sleep, and every server still running when the script exits is
# stopped: TERM, a bounded wait, then KILL.
#
#   server_start [-e ERR] [-o OUT] [-m] [-t S] NAME CMD [ARG...]
#       runs CMD ARG... --listen 127.0.0.1:0 --port-file DIR/NAME.port in the
#       background (stderr to ERR, default DIR/NAME.err; stdout to OUT,
#       default DIR/NAME.out) and waits at most S seconds (SERVER_START_S,
#       30) for the port, and with -m for GET /v1/models to answer 200.
#       Sets SERVER_PID, SERVER_PORT, SERVER_URL; returns 1, saying why and
#       with the server's stderr, if it ended or did not listen in time.
#   server_start_tty TM SESSION COLSxROWS NAME CMD [ARG...]: CMD ARG...
#       --listen 127.0.0.1:0 --port-file DIR/NAME.port on a terminal: in a
#       new tmux session SESSION (TM: the tmux command, "tmux -S SOCKET") of
#       that size, standard error the terminal; when CMD ends the pane says
#       EXIT=status. Waits as server_start; sets SERVER_PORT, SERVER_URL.
#       Stopped through its terminal (keys) or with the tmux server.
#   sim_start [-e ERR] NAME [sim options...]: `$LOADTRACE sim` so, with its
#       --log in DIR/NAME.log; sets SIM_NAME, SIM_PID, SIM_PORT, SIM_URL and
#       SIM_LOG, and ends the script (status 1) if the sim does not start.
#   sim_stop [SIGNAL]: server_stop of the last sim_start.
#   server_pid NAME, server_port NAME, server_url NAME: print them.
#   server_stop NAME [SIGNAL]: send SIGNAL (TERM), wait at most
#       SERVER_STOP_S (30) seconds, then KILL; returns the server's status.
#   server_stop_pid PID [SIGNAL]: the same by process id.
#   server_track PID...: stop these processes too when the script exits.
#   servers_at_exit COMMAND: run COMMAND at exit, after the servers stopped.
#   wait_until S COMMAND [ARG...]: poll COMMAND every 50 ms until it
#       succeeds (0) or S seconds have passed (1).
#   wait_models URL [S]: wait_until S (default 30) for GET URL/v1/models 200.
#   server_metric URL NAME...: the sum of the Prometheus series NAME... on
#       URL/metrics (0 when absent or when it does not answer).
#   wait_server_metric URL MIN NAME...: wait_until 30 for that sum to reach
#       MIN: a point in a run told by the server's own count.
#
# DIR is SERVERS_DIR, by default the test's scratch directory T. Names may
# hold any character a file name can (the pid is kept in DIR/NAME.pid).
# Safe under set -eu (the bench scripts): what may fail is tested.

SERVERS_DIR=${SERVERS_DIR:-${T:?T (a scratch directory) or SERVERS_DIR must be set}}
SERVER_START_S=${SERVER_START_S:-30}
SERVER_STOP_S=${SERVER_STOP_S:-30}
SERVERS_PIDS=
SERVERS_EXIT_CMDS=:

# Is PID running? A child that has ended but is not yet reaped still
# answers kill -0 (dash reaps only in `wait`), so a zombie counts as ended.
_srv_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    case $(ps -o stat= -p "$1" 2>/dev/null) in
    Z*) return 1 ;;
    esac
    return 0
}

wait_until() { # seconds command [args...]
    _wu_n=$(($1 * 20))
    shift
    while ! "$@"; do
        [ "$_wu_n" -gt 0 ] || return 1
        _wu_n=$((_wu_n - 1))
        sleep 0.05
    done
}

_srv_models_ok() {
    [ "$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' "$1/v1/models" 2>/dev/null)" = 200 ]
}
wait_models() { # url [seconds]
    wait_until "${2:-30}" _srv_models_ok "$1"
}

server_metric() { # url name...
    _sm_url=$1
    shift
    curl -s --max-time 5 "$_sm_url/metrics" 2>/dev/null | awk -v names="$*" '
        BEGIN { n = split(names, a, " "); for (k = 1; k <= n; k++) want[a[k]] = 1 }
        !/^#/ { name = $1; sub(/[{].*/, "", name); if (name in want) s += $NF }
        END { print s + 0 }'
}
_srv_metric_at_least() { # url min name...
    _sa_url=$1
    _sa_min=$2
    shift 2
    [ "$(server_metric "$_sa_url" "$@")" -ge "$_sa_min" ]
}
wait_server_metric() { # url min name...
    wait_until 30 _srv_metric_at_least "$@"
}

_srv_listening() { # port file, pid: done waiting once there is a port, or no server
    [ -s "$1" ] || ! _srv_alive "$2"
}

server_start() {
    _ss_err= _ss_out= _ss_models= _ss_s=$SERVER_START_S
    while :; do
        case $1 in
        -e) _ss_err=$2 && shift 2 ;;
        -o) _ss_out=$2 && shift 2 ;;
        -m) _ss_models=1 && shift ;;
        -t) _ss_s=$2 && shift 2 ;;
        *) break ;;
        esac
    done
    _ss_name=$1
    shift
    _ss_base="$SERVERS_DIR/$_ss_name"
    : "${_ss_err:=$_ss_base.err}" "${_ss_out:=$_ss_base.out}"
    rm -f "$_ss_base.port" "$_ss_base.pid"
    "$@" --listen 127.0.0.1:0 --port-file "$_ss_base.port" >"$_ss_out" 2>"$_ss_err" &
    SERVER_PID=$!
    SERVERS_PIDS="$SERVERS_PIDS $SERVER_PID"
    echo "$SERVER_PID" >"$_ss_base.pid"
    wait_until "$_ss_s" _srv_listening "$_ss_base.port" "$SERVER_PID"
    if [ ! -s "$_ss_base.port" ]; then
        if _srv_alive "$SERVER_PID"; then
            echo "FAIL: $_ss_name did not listen within $_ss_s s: $*" >&2
        else
            echo "FAIL: $_ss_name ended before it listened: $*" >&2
        fi
        sed 's/^/    /' "$_ss_err" >&2
        return 1
    fi
    SERVER_PORT=$(cat "$_ss_base.port")
    SERVER_URL="http://127.0.0.1:$SERVER_PORT"
    if [ -n "$_ss_models" ] && ! wait_models "$SERVER_URL" "$_ss_s"; then
        echo "FAIL: $_ss_name ($SERVER_URL) did not answer GET /v1/models within $_ss_s s" >&2
        return 1
    fi
    return 0
}

server_start_tty() { # tm session colsxrows name cmd...
    _sy_tm=$1 _sy_sess=$2 _sy_x=${3%x*} _sy_y=${3#*x} _sy_name=$4
    shift 4
    _sy_base="$SERVERS_DIR/$_sy_name"
    rm -f "$_sy_base.port"
    _sy_cmd=
    for _sy_a; do _sy_cmd="$_sy_cmd '$(printf '%s' "$_sy_a" | sed "s/'/'\\\\''/g")'"; done
    $_sy_tm new-session -d -s "$_sy_sess" -x "$_sy_x" -y "$_sy_y" \
        "$_sy_cmd --listen 127.0.0.1:0 --port-file '$_sy_base.port'; echo EXIT=\$?; sleep 600" || {
        echo "FAIL: tmux new-session for $_sy_name" >&2
        return 1
    }
    wait_until "$SERVER_START_S" test -s "$_sy_base.port"
    if [ ! -s "$_sy_base.port" ]; then
        echo "FAIL: $_sy_name did not listen within $SERVER_START_S s on its terminal:" >&2
        $_sy_tm capture-pane -p -t "$_sy_sess" 2>/dev/null | sed 's/^/    /' | tail -20 >&2
        return 1
    fi
    SERVER_PORT=$(cat "$_sy_base.port")
    SERVER_URL="http://127.0.0.1:$SERVER_PORT"
}

sim_start() { # [-e ERR] name [sim options...]
    _sm_err=
    if [ "$1" = -e ]; then
        _sm_err=$2
        shift 2
    fi
    SIM_NAME=$1
    shift
    SIM_LOG="$SERVERS_DIR/$SIM_NAME.log"
    rm -f "$SIM_LOG"
    server_start -e "${_sm_err:-$SERVERS_DIR/$SIM_NAME.err}" "$SIM_NAME" \
        "${LOADTRACE:?LOADTRACE not set}" sim --log "$SIM_LOG" "$@" || exit 1
    SIM_PID=$SERVER_PID SIM_PORT=$SERVER_PORT SIM_URL=$SERVER_URL
}
sim_stop() { # [signal]
    server_stop "$SIM_NAME" "${1:-TERM}"
}

server_pid() { cat "$SERVERS_DIR/$1.pid"; }
server_port() { cat "$SERVERS_DIR/$1.port"; }
server_url() { echo "http://127.0.0.1:$(cat "$SERVERS_DIR/$1.port")"; }

server_track() {
    SERVERS_PIDS="$SERVERS_PIDS $*"
}

# Wait for PIDs (children of this shell) to end; a watchdog KILLs those
# still running after SECONDS, so the wait is bounded and `wait` still
# gives the status. Returns the status of the last PID.
_srv_reap() { # seconds pid...
    _sr_n=$(($1 * 20))
    shift
    (
        while [ "$_sr_n" -gt 0 ]; do
            _sr_any=
            for _sr_p; do _srv_alive "$_sr_p" && _sr_any=1; done
            [ -n "$_sr_any" ] || exit 0
            sleep 0.05
            _sr_n=$((_sr_n - 1))
        done
        for _sr_p; do
            if _srv_alive "$_sr_p"; then
                echo "servers.sh: pid $_sr_p still running after SIGTERM; killing it" >&2
                kill -KILL "$_sr_p" 2>/dev/null || :
            fi
        done
    ) </dev/null >/dev/null &
    _sr_dog=$!
    _sr_rc=0
    for _sr_p; do
        wait "$_sr_p" 2>/dev/null && _sr_rc=0 || _sr_rc=$?
    done
    kill "$_sr_dog" 2>/dev/null || :
    wait "$_sr_dog" 2>/dev/null || :
    return $_sr_rc
}

_srv_untrack() {
    _su_keep=
    for _su_p in $SERVERS_PIDS; do [ "$_su_p" = "$1" ] || _su_keep="$_su_keep $_su_p"; done
    SERVERS_PIDS=$_su_keep
}

server_stop_pid() { # pid [signal]
    kill "-${2:-TERM}" "$1" 2>/dev/null || :
    _srv_reap "$SERVER_STOP_S" "$1" && _st_rc=0 || _st_rc=$?
    _srv_untrack "$1"
    return $_st_rc
}
server_stop() { # name [signal]
    server_stop_pid "$(server_pid "$1")" "${2:-TERM}"
}

servers_at_exit() {
    SERVERS_EXIT_CMDS="$SERVERS_EXIT_CMDS; $1"
}

servers_cleanup() {
    _sc_live=
    for _sc_p in $SERVERS_PIDS; do
        if kill -TERM "$_sc_p" 2>/dev/null; then
            kill -CONT "$_sc_p" 2>/dev/null || : # a stopped server cannot act on TERM
            _sc_live="$_sc_live $_sc_p"
        fi
    done
    SERVERS_PIDS=
    # shellcheck disable=SC2086
    [ -z "$_sc_live" ] || _srv_reap "$SERVER_STOP_S" $_sc_live || :
    eval "$SERVERS_EXIT_CMDS"
    SERVERS_EXIT_CMDS=:
}
trap servers_cleanup EXIT
trap 'exit 1' INT TERM
