#!/bin/sh
# A virtual run of a llama.cpp twin (slot_runs) writes what llama-server's
# "timings" would say of each request (srv_pf from its admission to its
# first token, srv_dec from its first token to its last, their tokens), and
# compare's twin table sets the server's timings against the twin's on the
# same requests. Ground truth: hand-built profiles whose step costs are
# given here, so that at concurrency 1 a request's prefill is one step of
# step_ms + prefill_step_ms + prefill_ms_per_token x its uncached prompt,
# and its decode one step of step_ms a token; awk computes each from the
# trace's lengths, not from loadtrace's figures. A profile without
# slot_runs (no llama.cpp twin) writes none, and compare shows none.
set -u
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
"$L" synth --arrivals poisson --rate 2 --requests 30 --in uniform:20,300 --out uniform:2,40 \
    --seed 3 -q -o "$T/t.lt.zst" || fail "synth"
prof() { # FILE PREFILL_MS_PER_TOKEN SLOT_RUNS
    cat >"$1" <<EOF
name = hand
step_ms = 2
step_ms_per_seq = 0
prefill_step_ms = 3
prefill_ms_per_seq = 0
prefill_ms_per_token = $2
prefill_ms_per_token_ctx = 0
cached_ms_per_token = 0
decode_ms_per_kv_token = 0
cache_blocks = 0
max_running = 4
slot_runs = $3
EOF
}
prof "$T/server.profile" 0.11 on
prof "$T/twin.profile" 0.1 on
prof "$T/plain.profile" 0.1 off
for p in server twin plain; do
    "$L" replay "$T/t.lt.zst" --target sim --virtual --profile "$T/$p.profile" --concurrency 1 \
        -q --no-summary -o "$T/$p.lt.zst" 2>"$T/$p.err" || fail "replay --virtual --profile $p"
done

# --- each request's timings against the profile's costs ---------------------------
# the trace's asked lengths, by index: the ground truth
"$L" cat --no-header "$T/t.lt.zst" | jq -r 'select(.in) | "\(.in) \(.out)"' |
    awk '{ print NR - 1, $1, $2 }' >"$T/lens"
for p in server twin; do
    pf=0.11
    [ $p = server ] || pf=0.1
    "$L" cat --no-header "$T/$p.lt.zst" |
        jq -r 'select(.i != null) | "\(.i) \(.srv_pf) \(.srv_pf_n) \(.srv_dec) \(.srv_dec_n) \(.srv_cache)"' |
        sort -n >"$T/$p.timings"
    bad=$(awk -v pf="$pf" 'NR == FNR { want_in[$1] = $2; want_out[$1] = $3; next }
        { n++
          in_ = want_in[$1]; out = want_out[$1]
          pf_us = (2 + 3 + pf * in_) * 1000; dec_us = (out - 1) * 2 * 1000
          if ($2 - pf_us > 1 || pf_us - $2 > 1 || $3 != in_ || $6 != 0 ||
              $4 - dec_us > 1 || dec_us - $4 > 1 || $5 != out) {
              print "request " $1 ": srv_pf " $2 " (want " pf_us "), srv_pf_n " $3 " (want " in_ \
                    "), srv_dec " $4 " (want " dec_us "), srv_dec_n " $5 " (want " out "), srv_cache " $6
              b++ } }
        END { if (n != 30) print "timings of " n " requests, not 30"; exit 0 }' "$T/lens" "$T/$p.timings")
    [ -z "$bad" ] || fail "$p: timings off the profile's costs:
$bad"
done
n=$("$L" cat --no-header "$T/plain.lt.zst" | jq -s '[.[] | select(.i != null and .srv_pf != null)] | length')
expect_eq 0 "$n" "a profile without slot_runs: results with srv_pf"

# --- the twin table: the server's timings against the twin's ------------------------
# sums over the 30 requests: prefill (5 + pf n) over n, decode 2 (out - 1) over out
want=$(awk '{ n += $2; o += $3; p5 += 5; a += 0.11 * $2; b += 0.1 * $2; d += 2 * ($3 - 1) }
    END { printf "%.9f %.9f %.9f", (p5 + a) / n, (p5 + b) / n, d / o }' "$T/lens")
set -- $want
"$L" compare --twin --json "$T/server.lt.zst" "$T/twin.lt.zst" >"$T/cmp.json" 2>"$T/cmp.err" ||
    fail "compare --twin --json"
got_a=$(jq -r '.runs[0].twin.server_prefill_ms_per_token.a' "$T/cmp.json")
got_b=$(jq -r '.runs[0].twin.server_prefill_ms_per_token.b' "$T/cmp.json")
got_e=$(jq -r '.runs[0].twin.server_prefill_ms_per_token.error' "$T/cmp.json")
got_d=$(jq -r '.runs[0].twin.server_decode_ms_per_token.a' "$T/cmp.json")
expect_near "$1" "$got_a" 0.00001 "the server's prefill ms a token"
expect_near "$2" "$got_b" 0.00001 "the twin's prefill ms a token"
expect_near "$(awk -v a="$1" -v b="$2" 'BEGIN { printf "%.9f", b / a - 1 }')" "$got_e" 0.00001 \
    "the prefill's error (B - A) / A"
expect_near "$3" "$got_d" 0.00001 "the server's decode ms a token"
"$L" compare --twin "$T/server.lt.zst" "$T/twin.lt.zst" >"$T/cmp.txt" 2>&1
expect_grep "server prefill (ms/tok)" "$T/cmp.txt"
expect_grep "server decode (ms/tok)" "$T/cmp.txt"
# a side without timings: none shown, null in the JSON
"$L" compare --twin --json "$T/server.lt.zst" "$T/plain.lt.zst" >"$T/cmp2.json" 2>/dev/null
expect_eq null "$(jq -r '.runs[0].twin.server_prefill_ms_per_token.b' "$T/cmp2.json")" \
    "the twin's prefill without slot_runs"
"$L" compare --twin "$T/server.lt.zst" "$T/plain.lt.zst" >"$T/cmp2.txt" 2>&1
expect_no_grep "server prefill" "$T/cmp2.txt"
finish
