#!/bin/sh
# The vision encoder's cost in virtual time (replay --target sim --virtual):
# a virtual run charges each request's image (and audio) tokens as the live
# sim does (docs/multimodal.md "Virtual time").
#  1. exact, by hand: steps of 10 ms, prefill free, one request at a time,
#     image_ms_per_token 0.5. Alone, a text request's first token comes
#     10 ms after its send; one with a 640x480 image (416 tokens by the
#     rule) 10 + 208 ms; one with a 300x200 image whose record says 50
#     tokens (the rule counts 90) 10 + 45 ms, and its prompt is its text
#     (90 - 50) plus the rule's 90, as the live sim counts it;
#  2. the same trace live against `loadtrace sim` with the same profile:
#     the prompt tokens and image tokens in the sim's log are the virtual
#     run's, request by request, and the first token's time in the log,
#     from when the model got the request (model_us: after the sim read
#     the image, which a loaded machine slows) to tokens_us[0], is the
#     virtual one within 5 %.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

cat >"$T/p.profile" <<'EOF2'
name = vision
step_ms = 10
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
image_ms_per_token = 0.5
max_running = 1
EOF2
rule() { awk -v w="$1" -v h="$2" 'function c(a) { return int((a + 27) / 28) } BEGIN { print 2 + c(w) * c(h) }'; }
t640=$(rule 640 480) t300=$(rule 300 200)
cat >"$T/m.jsonl" <<J
{"t":0,"in":100,"out":2}
{"t":1000000,"in":$((t640 + 60)),"out":2,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":2000000,"in":90,"out":2,"media":[{"kind":"image","w":300,"h":200,"fmt":"jpeg","tokens":50}]}
J
"$L" import --from jsonl -q "$T/m.jsonl" -o "$T/m.lt.zst" || fail "import"

# ---- 1. exact ----
"$L" replay "$T/m.lt.zst" --target sim --virtual --profile "$T/p.profile" -o "$T/v.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay with images"
got=$(results "$T/v.lt.zst" | jq -s -r 'sort_by(.i)[] | "\(.i) \(.ft - .sent) \(.in)"')
want="0 10000 100
1 $((10000 + t640 * 500)) $((t640 + 60))
2 $((10000 + t300 * 500)) $((40 + t300))"
expect_eq "$want" "$got" "first token after the send (us), and the prompt counted"

# ---- 2. against the live sim ----
start_sim live --profile "$T/p.profile"
timeout 60 "$L" replay "$T/m.lt.zst" --target "$SIM_URL" -o "$T/live.lt.zst" -q --no-summary
expect_status 0 $? "live replay with images"
stop_sim
live=$(streams "$SIM_LOG" | jq -s -r 'sort_by(.arrival_us)[] | "\(.prompt_tokens) \(.image_tokens // 0)"')
printf '0\n%s\n%s\n' "$t640" "$t300" >"$T/img"
virt=$(results "$T/v.lt.zst" | jq -s -r 'sort_by(.i)[] | .in' | paste -d' ' - "$T/img")
expect_eq "$live" "$virt" "prompt and image tokens: the live sim's log and the virtual run"
streams "$SIM_LOG" | jq -s -r 'sort_by(.arrival_us)[] | .tokens_us[0] - .model_us' >"$T/ft-live"
results "$T/v.lt.zst" | jq -s -r 'sort_by(.i)[] | .ft - .sent' >"$T/ft-virt"
paste "$T/ft-virt" "$T/ft-live" | awk '{ printf "  virtual %d us, live sim log %d us\n", $1, $2; r = $2 / $1; if (r < 0.95 || r > 1.05) bad = 1 } END { exit bad }' >"$T/cmp"
rc=$?
cat "$T/cmp"
expect_eq 0 $rc "first token times: virtual within 5 % of the live sim's log"
finish
