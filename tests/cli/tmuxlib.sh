# The dashboard tests' terminal: a tmux server of the test's own (socket in
# $T), stopped at exit, and reading its pane. Source after
# tests/lib/servers.sh (servers_at_exit, wait_until).
# tmux is a dependency of the tests (scripts/deps.sh): missing, this fails.
command -v tmux >/dev/null || { echo "FAIL: tmux is missing (scripts/deps.sh installs it)" >&2; exit 1; }
TM="tmux -S $T/tmux.sock"
tmux_gone() { ! $TM list-sessions >/dev/null 2>&1; }
# kill-server returns before the server is gone: a new session at once may
# reach the dying one
stop_tmux() { $TM kill-server 2>/dev/null || :; wait_until 10 tmux_gone || :; }
servers_at_exit stop_tmux
pane() { $TM capture-pane -p -J -t d -S -300 2>/dev/null; }
pane_has() { pane | grep -q -- "$1"; }
# after FILE PATTERN WORD: the value after WORD on the last line of FILE
# (a pane dump) matching PATTERN
after() {
    grep -- "$2" "$1" | tail -1 | awk -v w="$3" '{ for (i = 1; i < NF; i++) if ($i == w) { print $(i + 1); exit } }'
}
