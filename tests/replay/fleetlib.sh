# The fleet tests' common parts (fleet.sh, fleet_virtual.sh): a sim
# profile with free steps and a prefix cache of 64-token blocks
# ($T/cache.profile), and the hand-built trace of 10 sessions of 3 turns,
# 60 ms apart ($T/h.jsonl, imported as $T/h.lt.zst): session s starts with
# one of two system blocks (1000 + s % 2), then blocks of its own that each
# turn extends; record n asks for 10 + n tokens, which is how a sim's log
# names the record. Sourced after tests/cli/lib.sh (T, fail) with L set.
fleet_setup() {
    cat >"$T/cache.profile" <<'P'
name = fleetcache
model = loadtrace-sim-fleet
step_ms = 0
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
max_running = 100000
kv_tokens = 1000000000
batch_tokens = 100000000
block_tokens = 64
cache_blocks = 100000
P
    awk 'BEGIN { n = 0
      for (t = 0; t < 3; t++) for (s = 1; s <= 10; s++) {
        printf "{\"t\":%d,\"session\":%d,\"turn\":%d,\"in\":%d,\"out\":%d,\"blocks\":[%d", \
            (t * 10 + s - 1) * 60000, s, t, 64 * (t + 2), 10 + n, 1000 + s % 2
        for (k = 0; k <= t; k++) printf ",%d", s * 100 + k
        printf "]}\n"; n++ } }' >"$T/h.jsonl"
    "$L" import --from jsonl --block-tokens 64 "$T/h.jsonl" -o "$T/h.lt.zst" -q ||
        fail "import the hand-built trace"
}
