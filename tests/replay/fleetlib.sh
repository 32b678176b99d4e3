# The fleet tests' common parts (fleet.sh, fleet_virtual.sh, fleet_failover.sh,
# fleet_mpi.sh). Sourced after tests/cli/lib.sh (T, fail) with L set.

# fleet_profile FILE NAME STEP_MS MAX_RUNNING [KEY=VALUE...]: a sim profile
# whose steps cost nothing but STEP_MS each, with room for every request
# (kv and batch tokens unbounded), and the extra keys given.
fleet_profile() {
    _fp=$1 _fname=$2 _fstep=$3 _fmax=$4
    shift 4
    {
        printf 'name = %s\nmodel = loadtrace-sim-fleet\nstep_ms = %s\n' "$_fname" "$_fstep"
        for _k in step_ms_per_seq prefill_step_ms prefill_ms_per_seq prefill_ms_per_token \
            cached_ms_per_token; do
            printf '%s = 0\n' "$_k"
        done
        printf 'max_running = %s\nkv_tokens = 1000000000\nbatch_tokens = 100000000\n' "$_fmax"
        for _kv in "$@"; do
            printf '%s = %s\n' "${_kv%%=*}" "${_kv#*=}"
        done
    } >"$_fp"
}

# fleet_sessions OUT.jsonl blocks|plain: the hand-built trace of 10
# sessions of 3 turns, 60 ms apart; record n asks for 10 + n tokens, which
# is how a sim's log names the record. With blocks, session s starts with
# one of two system blocks (1000 + s % 2), then blocks of its own that
# each turn extends (64-token blocks, prompts of 64 x (turn + 2) tokens);
# plain: prompts of 32 tokens and no blocks.
fleet_sessions() {
    awk -v blocks="$([ "$2" = blocks ] && echo 1 || echo 0)" 'BEGIN { n = 0
      for (t = 0; t < 3; t++) for (s = 1; s <= 10; s++) {
        printf "{\"t\":%d,\"session\":%d,\"turn\":%d,\"in\":%d,\"out\":%d", \
            (t * 10 + s - 1) * 60000, s, t, blocks ? 64 * (t + 2) : 32, 10 + n
        if (blocks) {
            printf ",\"blocks\":[%d", 1000 + s % 2
            for (k = 0; k <= t; k++) printf ",%d", s * 100 + k
            printf "]"
        }
        printf "}\n"; n++ } }' >"$1"
}

# fleet_setup: $T/cache.profile (free steps, a prefix cache of 64-token
# blocks) and the trace with blocks ($T/h.jsonl, imported as $T/h.lt.zst).
fleet_setup() {
    fleet_profile "$T/cache.profile" fleetcache 0 100000 block_tokens=64 cache_blocks=100000
    fleet_sessions "$T/h.jsonl" blocks
    "$L" import --from jsonl --block-tokens 64 "$T/h.jsonl" -o "$T/h.lt.zst" -q ||
        fail "import the hand-built trace"
}
