#!/bin/sh
# A fleet: replay --target URL1,URL2,URL3 --route POLICY against three
# `loadtrace sim` processes, each on its own port with its own --log, and
# every answer checked against the sims' own records:
# - session routing is sticky: every turn of a session is in one sim's log
#   (and the result's "replica" names that sim);
# - prefix routing keeps prompts together: each sim's prefix-cache hits on
#   its /metrics are what the trace's prefix blocks predict for the records
#   that sim's log says it served (awk over the trace), and the fleet hits
#   more than under round-robin, which scatters a session's turns;
# - the load bound: a hot prefix sent at once is spread, no sim ever holding
#   more requests at once (its log's arrival..end) than ceil(c * N_req / 3);
# - weighted routing (--targets FILE with weights) gives each its share.
# The hand-built trace: 10 sessions of 3 turns, 60 ms apart; session s
# starts with one of two system blocks (1000 + s % 2), then blocks of its
# own that each turn extends; each record asks for its own output length
# (10 + its record number), which is how a sim's log names the record.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
. "$LT_SRC/tests/replay/fleetlib.sh"
L=$LOADTRACE

fleet_setup
# record number, session, blocks... (the ground truth, from the input)
awk '{ match($0, /"session":[0-9]+/); s = substr($0, RSTART + 10, RLENGTH - 10)
       match($0, /"blocks":\[[0-9,]+/); b = substr($0, RSTART + 10, RLENGTH - 10); gsub(",", " ", b)
       print NR - 1, s, b }' "$T/h.jsonl" >"$T/truth.txt"

SIMS="a b c"
start_fleet() { # profile
    URLS=
    for s in $SIMS; do
        start_sim "$s" --profile "$1"
        URLS="$URLS${URLS:+,}$SIM_URL"
    done
}
stop_fleet() {
    for s in $SIMS; do server_stop "$s"; done
}
# The records a sim's log says it served, in arrival order: "record prompt cached"
served() { # sim name
    streams "$T/$1.log" | jq -r '"\(.arrival_us) \(.max_tokens - 10) \(.prompt_tokens) \(.cached_tokens)"' |
        sort -n | cut -d' ' -f2-
}
# The prefix-cache hit tokens the trace predicts for the records a sim served,
# in its order: each record's longest chain of blocks the sim saw before.
predicted_hits() { # sim name
    served "$1" | awk 'NR == FNR { r = $1; $1 = ""; $2 = ""; blk[r] = $0; next }
        { n = split(blk[$1], b, " "); key = ""; miss = 0
          for (j = 1; j <= n; j++) {
              key = key "," b[j]
              if (!miss && (key in seen)) hit++; else miss = 1
              seen[key] = 1 } }
        END { print hit * 64 + 0 }' "$T/truth.txt" -
}

# --- session routing: sticky
start_fleet "$T/cache.profile"
"$L" replay "$T/h.lt.zst" --api completions --target "$URLS" --route session \
    -o "$T/sess.lt.zst" --no-summary -q 2>"$T/sess.err"
expect_status 0 $? "replay --route session"
expect_grep "fleet of 3, route session" "$T/sess.err"
stop_fleet
: >"$T/where.txt"
for s in $SIMS; do served "$s" | awk -v sim="$s" '{ print $1, sim }' >>"$T/where.txt"; done
expect_eq 30 "$(wc -l <"$T/where.txt" | tr -d ' ')" "requests the sims served"
# sessions found in more than one sim's log
split=$(awk 'NR == FNR { sess[$1] = $2; next } { k = sess[$1] " " $2; if (!(k in seen)) { seen[k] = 1; n[sess[$1]]++ } }
    END { for (s in n) if (n[s] > 1) m++; print m + 0 }' "$T/truth.txt" "$T/where.txt")
expect_eq 0 "$split" "sessions split across sims under --route session"
used=$(cut -d' ' -f2 "$T/where.txt" | sort -u | wc -l | tr -d ' ')
[ "$used" -ge 2 ] || fail "session routing used $used of 3 sims"
# each result names the sim that served it (replica i = the i-th URL)
results "$T/sess.lt.zst" | jq -r '"\(.i) \(.replica)"' | sort -n >"$T/rep.txt"
awk '{ print $1, ($2 == "a" ? 0 : $2 == "b" ? 1 : 2) }' "$T/where.txt" | sort -n >"$T/rep-want.txt"
expect_eq "$(cat "$T/rep-want.txt")" "$(cat "$T/rep.txt")" "results' replica against the sims' logs"
runs "$T/sess.lt.zst" | jq -e '.route == "session" and (.replicas | length) == 3' >/dev/null ||
    fail "the run record names the route and the replicas"

# --- prefix routing: each sim's hits are what the trace predicts for what it served
fleet_hits() { # policy -> "hits queries" over the fleet, and per-sim checks
    start_fleet "$T/cache.profile"
    "$L" replay "$T/h.lt.zst" --api completions --target "$URLS" --route "$1" \
        -o "$T/$1.lt.zst" --no-summary -q 2>"$T/$1.err"
    expect_status 0 $? "replay --route $1"
    _h=0 _q=0
    for s in $SIMS; do
        _url=$(server_url "$s")
        _mh=$(server_metric "$_url" vllm:prefix_cache_hits_total)
        _mq=$(server_metric "$_url" vllm:prefix_cache_queries_total)
        _h=$((_h + _mh)) _q=$((_q + _mq))
        eval "_m_$s=$_mh _q_$s=$_mq"
    done
    stop_fleet
    for s in $SIMS; do
        eval "_got=\$_m_$s"
        expect_eq "$(predicted_hits "$s")" "$_got" "$1: sim $s's prefix-cache hits against the trace"
    done
    echo "$_h $_q"
    for s in $SIMS; do eval "echo \$_m_$s \$_q_$s"; done >"$T/$1.metrics"
}
fleet_hits prefix >"$T/pfx.txt"
fleet_hits round-robin >"$T/rr.txt"
pfx=$(cat "$T/pfx.txt")
rr=$(cat "$T/rr.txt")
awk -v p="$pfx" -v r="$rr" 'BEGIN { split(p, a); split(r, b); exit !(a[1] / a[2] > b[1] / b[2]) }' ||
    fail "prefix routing's fleet hit rate ($pfx) is not above round-robin's ($rr)"

# --- analyze's fleet table against the sims: requests per replica from
# each log, the balance (max over mean) from them, the hit rate of replicas
# 1 and 2 from their /metrics (replica 0 also answered the calibration
# before the run, which its counters hold and the run's scrapes do not)
"$L" analyze --json "$T/round-robin.lt.zst" >"$T/rr.json" || fail "analyze --json a fleet's run"
i=0
for s in $SIMS; do
    expect_eq "$(streams "$T/$s.log" | wc -l | tr -d ' ')" \
        "$(jq ".runs[0].fleet.replicas[$i].requests" "$T/rr.json")" "analyze: requests of replica $i"
    i=$((i + 1))
done
for i in 1 2; do
    want=$(sed -n "$((i + 1))p" "$T/round-robin.metrics" | awk '{ printf "%.6f", $1 / $2 }')
    expect_near "$want" "$(jq ".runs[0].fleet.replicas[$i].hit_rate" "$T/rr.json")" 0.000001 \
        "analyze: replica $i's hit rate against its /metrics"
done
expect_eq metrics "$(jq -r '.runs[0].fleet.replicas[1].hit_rate_from' "$T/rr.json")" "hit rate's source"
want=$(for s in $SIMS; do streams "$T/$s.log" | wc -l; done |
    awk '{ n++; s += $1; if ($1 > m) m = $1 } END { printf "%.6f", m / (s / n) }')
expect_near "$want" "$(jq '.runs[0].fleet.balance' "$T/rr.json")" 0.000001 "analyze: load balance"
"$L" analyze "$T/round-robin.lt.zst" >"$T/rr.txt.out" || fail "analyze a fleet's run"
expect_grep "fleet: 3 replicas, route round-robin" "$T/rr.txt.out"
"$L" analyze --html "$T/rr.html" "$T/round-robin.lt.zst" >/dev/null 2>&1 || fail "analyze --html"
expect_grep "load balance (max/mean requests)" "$T/rr.html"

# --- the load bound: 24 requests of one hot prefix at once, each ~0.6 s long
fleet_profile "$T/slow.profile" fleetslow 15 100000 block_tokens=64
awk 'BEGIN { for (i = 0; i < 24; i++)
    printf "{\"t\":%d,\"in\":128,\"out\":40,\"blocks\":[7,%d]}\n", i * 5000, 100 + i }' >"$T/hot.jsonl"
"$L" import --from jsonl --block-tokens 64 "$T/hot.jsonl" -o "$T/hot.lt.zst" -q || fail "import hot"
start_fleet "$T/slow.profile"
"$L" replay "$T/hot.lt.zst" --api completions --target "$URLS" --route prefix \
    -o "$T/hot.lt.zst.out" --no-summary -q 2>"$T/hot.err"
expect_status 0 $? "replay --route prefix (hot prefix)"
stop_fleet
# ceil(1.25 * 24 / 3) = 10: no sim may ever hold more at once
n_used=0
for s in $SIMS; do
    m=$(streams "$T/$s.log" | max_overlap)
    [ "$m" -le 10 ] || fail "sim $s held $m requests at once, past the bound of 10"
    [ "$(streams "$T/$s.log" | wc -l)" -gt 0 ] && n_used=$((n_used + 1))
done
expect_eq 3 "$n_used" "sims the hot prefix spilled over to"
expect_grep "went past their first replica" "$T/hot.err"

# --- weighted: --targets FILE, weights 3 and 1, 40 requests
SIMS="a b"
start_fleet "$T/cache.profile"
printf '# two replicas, one three times the other\n%s 3\n\n%s=1\n' \
    "$(server_url a)" "$(server_url b)" >"$T/targets.txt"
awk 'BEGIN { for (i = 0; i < 40; i++) printf "{\"t\":%d,\"in\":64,\"out\":4}\n", i * 2000 }' >"$T/w.jsonl"
"$L" import --from jsonl "$T/w.jsonl" -o "$T/w.lt.zst" -q || fail "import w"
"$L" replay "$T/w.lt.zst" --targets "$T/targets.txt" -o "$T/w.out.lt.zst" --no-summary -q \
    2>"$T/w.err"
expect_status 0 $? "replay --targets (weighted)"
expect_grep "route weighted" "$T/w.err"
stop_fleet
expect_eq "30 10" "$(streams "$T/a.log" | wc -l | tr -d ' ') $(streams "$T/b.log" | wc -l | tr -d ' ')" \
    "requests per sim, weights 3:1"

# --- bad input
"$L" replay "$T/w.lt.zst" --target "http://127.0.0.1:1,http://127.0.0.1:2=x" -o "$T/x.lt.zst" \
    2>"$T/bad.err"
expect_status 2 $? "a bad weight"
expect_grep "weight must be an integer" "$T/bad.err"
"$L" replay "$T/w.lt.zst" --target "http://127.0.0.1:1" --route session -o "$T/x.lt.zst" \
    2>"$T/bad.err"
expect_status 2 $? "--route with one target"
"$L" replay "$T/w.lt.zst" --target "http://127.0.0.1:1,http://127.0.0.1:2" --route random \
    -o "$T/x.lt.zst" 2>"$T/bad.err"
expect_status 2 $? "an unknown --route"
[ ! -e "$T/x.lt.zst" ] || fail "a refused replay wrote its output"
finish
