#!/bin/sh
# replay checks the server's image tokens against the trace's
# (docs/multimodal.md "The image-token check"): where usage says
# prompt_tokens_details.image_tokens (the sim's chat API, vLLM with
# --enable-prompt-tokens-details, SGLang), each request's are compared with
# its record's, and the run's check line and check record say how many
# agree. Two records carry the rule's tokens of their images, one says 300
# for a 640x480 image (the rule: 416); the sim's log is the ground truth of
# what it counted. The sim's Responses usage has no image detail: those
# requests are counted as unreported, never as agreeing.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

rule() { awk -v w="$1" -v h="$2" 'function c(a) { return int((a + 27) / 28) } BEGIN { print 2 + c(w) * c(h) }'; }
t640=$(rule 640 480) t300=$(rule 300 200)
cat >"$T/m.jsonl" <<J
{"t":0,"in":$((t640 + 60)),"out":2,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":100000,"in":$((t300 + t640 + 50)),"out":2,"media":[{"kind":"image","w":300,"h":200,"fmt":"jpeg","tokens":$t300},{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":200000,"in":400,"out":2,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","tokens":300}]}
{"t":300000,"in":100,"out":2}
J
"$L" import --from jsonl -q "$T/m.jsonl" -o "$T/m.lt.zst" || fail "import"
want=$(jq -s 'map(.media // [] | map(.tokens) | add // 0) | add' "$T/m.jsonl")

start_sim chat --profile fast
"$L" replay "$T/m.lt.zst" --target "$SIM_URL" -o "$T/chat.lt.zst" >/dev/null 2>"$T/chat.err"
expect_status 0 $? "replay with images against the sim (chat)"
stop_sim
got=$(grep '"image_tokens"' "$SIM_LOG" | jq -s 'map(.image_tokens) | add')
expect_eq $((3 * t640 + t300)) "$got" "the sim counted the rule's tokens (its log)"
chk=$("$L" cat --no-header "$T/chat.lt.zst" | jq -r 'select(.rec == "check") | "\(.img_checked) \(.img_exact) \(.img_want) \(.img_got) \(.img_unreported // 0)"')
expect_eq "3 2 $want $got 0" "$chk" "check record: 3 compared, 2 exact, the record's and the log's totals"
expect_grep "image tokens vs the server's usage: 2 of 3 requests exact, $got counted of $want recorded" "$T/chat.err"
"$L" analyze "$T/chat.lt.zst" >"$T/chat.txt"
expect_grep "image tokens vs the server's usage: 2 of 3 requests exact" "$T/chat.txt"

start_sim resp --profile fast
"$L" replay "$T/m.lt.zst" --target "$SIM_URL" --api responses -o "$T/resp.lt.zst" >/dev/null 2>"$T/resp.err"
expect_status 0 $? "replay with images against the sim (responses)"
stop_sim
chk=$("$L" cat --no-header "$T/resp.lt.zst" | jq -r 'select(.rec == "check") | "\(.img_checked // 0) \(.img_unreported)"')
expect_eq "0 3" "$chk" "responses: no image detail in usage, 3 unreported, none compared"
expect_grep "3 requests with images whose usage said no image tokens" "$T/resp.err"
finish
