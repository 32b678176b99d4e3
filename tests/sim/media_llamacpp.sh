#!/bin/sh
# The sim's llama-server dialect answers media as the real llama-server
# does (measured with llama-server and stories260K.gguf, a text-only model
# without --mmproj: docs/multimodal.md "A text-only llama-server"):
#   image  -> 500 "image input is not supported - hint: ... mmproj"
#   audio  -> 500 "audio input is not supported - hint: ... mmproj"
#   video  -> 400 "unsupported content[].type" (llama-server reads no video
#             part at all, with or without text-only)
# and replay classes each as an "http" error with the server's words, the
# text request answered.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
cat >"$T/a.jsonl" <<'J'
{"t":0,"in":60,"out":2,"media":[{"kind":"image","w":64,"h":64,"fmt":"png","tokens":11}]}
{"t":100000,"in":40,"out":2}
{"t":200000,"in":60,"out":2,"media":[{"kind":"audio","fmt":"wav","dur":1000000,"tokens":25}]}
{"t":300000,"in":60,"out":2,"media":[{"kind":"video","w":64,"h":64,"frames":2,"dur":1000000,"tokens":11}]}
J
"$L" import --from jsonl -q "$T/a.jsonl" -o "$T/a.lt.zst" || fail "import"
hint=" - hint: if this is unexpected, you may need to provide the mmproj"
want="0 500 http image input is not supported$hint
1 200 null null
2 500 http audio input is not supported$hint
3 400 http unsupported content[].type"
start_sim tl --profile fast --dialect llamacpp,text-only
"$L" replay "$T/a.lt.zst" --target "$SIM_URL" -o "$T/r.lt.zst" -q --no-summary
expect_status 1 $? "replay: three errors, the run goes on"
stop_sim
got=$(results "$T/r.lt.zst" | jq -r '"\(.i) \(.status) \(.err) \(.err_body | if . then fromjson.error.message else null end)"' | sort)
expect_eq "$want" "$got" "status, class and words per request, as llama-server's"
# without text-only (a model with a projector) video is still refused
start_sim l --profile fast --dialect llamacpp
"$L" replay "$T/a.lt.zst" --target "$SIM_URL" -o "$T/r2.lt.zst" -q --no-summary
stop_sim
expect_eq "0 200
1 200
2 200
3 400" "$(results "$T/r2.lt.zst" | jq -r '"\(.i) \(.status)"' | sort)" "llamacpp with a projector: images and audio served, video refused"
finish
