#!/bin/sh
# loadtrace sim with images (docs/sim.md "Images"): chat image_url, Responses
# input_image and Messages image blocks, as data URLs (PNGs made here with
# zlib by tests/lib/mkpng.py, not by loadtrace) and as links; the image
# tokens follow the profile's rule (computed here in awk), join the prompt
# tokens and are said in usage and in the --log; the vision encoder's cost
# lengthens the prefill step by exactly image_ms_per_token per image token
# (in model time, which the log gives); a text-only dialect refuses images
# with vLLM's or llama-server's words; a broken data URL, a cut image and a
# header that lies are per-request 400s and the sim goes on.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"
MK="python3 $LT_SRC/tests/lib/mkpng.py"

# the tile rule of the default profile: 2 + ceil(w/28) * ceil(h/28)
rule() { awk -v w="$1" -v h="$2" 'function c(a) { return int((a + 27) / 28) } BEGIN { print 2 + c(w) * c(h) }'; }

cat >"$T/vis.profile" <<'P'
step_ms = 1
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
image_ms_per_token = 0.5
cache_blocks = 0
P
start_sim m --profile "$T/vis.profile"

chat_img() { # URL [TEXT]: a chat body with one text part and one image
    printf '{"messages":[{"role":"user","content":[{"type":"text","text":"%s"},{"type":"image_url","image_url":{"url":"%s"}}]}],"max_tokens":2,"ignore_eos":true}' "${2:-what is this}" "$1"
}
TEXT='{"messages":[{"role":"user","content":[{"type":"text","text":"what is this"}]}],"max_tokens":2,"ignore_eos":true}'
post /v1/chat/completions "$TEXT" >"$T/t.json"
base=$(jq .usage.prompt_tokens "$T/t.json")

for wh in "640 480" "28 28" "1 1" "1000 30" "29 57"; do
    set -- $wh
    $MK "$1" "$2" --url >"$T/img.url"
    chat_img "$(cat "$T/img.url")" >"$T/body.json"
    post /v1/chat/completions "@$T/body.json" >"$T/r.json"
    expect_eq 200 "$(status)" "chat with a ${1}x$2 PNG"
    want=$(rule "$1" "$2")
    expect_eq "$want" "$(jq .usage.prompt_tokens_details.image_tokens "$T/r.json")" "image tokens of ${1}x$2"
    expect_eq $((base + want)) "$(jq .usage.prompt_tokens "$T/r.json")" "prompt tokens with a ${1}x$2 image"
done
# two images, one a link (not fetched: a 448 x 448 square)
$MK 100 100 --url >"$T/a.url"
printf '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"%s"}},{"type":"text","text":"what is this"},{"type":"image_url","image_url":"https://example.invalid/cat.png?sig=x"}]}],"max_tokens":2}' "$(cat "$T/a.url")" >"$T/body.json"
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 200 "$(status)" "chat with two images"
expect_eq $(($(rule 100 100) + $(rule 448 448))) "$(jq .usage.prompt_tokens_details.image_tokens "$T/r.json")" "tokens of a data URL and a link"

# Responses input_image and Messages image block: the same count
$MK 300 200 --url >"$T/b.url"
printf '{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"%s"}]}],"max_output_tokens":2}' "$(cat "$T/b.url")" >"$T/body.json"
post /v1/responses "@$T/body.json" >"$T/r.json"
expect_eq 200 "$(status)" "responses with input_image"
printf '{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"max_output_tokens":2}' >"$T/body.json"
post /v1/responses "@$T/body.json" >"$T/t.json"
expect_eq "$(rule 300 200)" "$(($(jq .usage.input_tokens "$T/r.json") - $(jq .usage.input_tokens "$T/t.json")))" "responses: image tokens"
b64=$(sed 's/^data:image\/png;base64,//' "$T/b.url")
printf '{"max_tokens":2,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%s"}}]}]}' "$b64" >"$T/body.json"
post /v1/messages "@$T/body.json" >"$T/r.json"
expect_eq 200 "$(status)" "messages with an image block"
post /v1/messages '{"max_tokens":2,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}' >"$T/t.json"
expect_eq "$(rule 300 200)" "$(($(jq .usage.input_tokens "$T/r.json") - $(jq .usage.input_tokens "$T/t.json")))" "messages: image tokens"

# malformed: each a 400 that says what, and the sim goes on
chat_img "data:image/png;base64,iVBORw0KGgo*AAA" >"$T/body.json"
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 400 "$(status)" "broken data URL"
expect_grep "image 1: cannot read the image" "$T/r.json"
$MK 64 48 --url --lie-height 4096 >"$T/lie.url"
chat_img "$(cat "$T/lie.url")" >"$T/body.json"
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 400 "$(status)" "a header that lies about its size"
expect_grep "header says 64x4096" "$T/r.json"
url=$(cat "$T/a.url")
chat_img "$(printf '%s' "$url" | cut -c1-200)" >"$T/body.json"
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 400 "$(status)" "a cut image"
post /v1/chat/completions "$TEXT" >/dev/null
expect_eq 200 "$(status)" "a text request after the bad images"
stop_sim
# the log (whole once the sim stopped): images, their tokens and decoded bytes; the first token's model
# time (tokens_us[0] - model_us: the model was idle) is step_ms + 0.5 ms
# per image token (the 29x57 image: 2 + 2*3 = 8)
grep '"status":200' "$SIM_LOG" | grep '"api":"chat"' | grep '"images":1,' >"$T/ok.log"
expect_eq 5 "$(wc -l <"$T/ok.log" | tr -d ' ')" "answered one-image chat requests in the log"
last=$(sed -n 5p "$T/ok.log")
expect_eq 8 "$(echo "$last" | jq .image_tokens)" "log: image tokens"
expect_eq "$($MK 29 57 | wc -c | tr -d ' ')" "$(echo "$last" | jq .image_bytes)" "log: decoded image bytes"
expect_near 5000 "$(echo "$last" | jq '.tokens_us[0] - .model_us')" 2 "first token after step_ms + 8 * 0.5 ms of vision encoding"


# fixed rule: 64 tokens whatever the size
printf 'image_tile = 0\nimage_tokens = 64\n' >"$T/fixed.profile"
start_sim f --profile "$T/fixed.profile"
$MK 640 480 --url >"$T/img.url"
chat_img "$(cat "$T/img.url")" >"$T/body.json"
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 64 "$(jq .usage.prompt_tokens_details.image_tokens "$T/r.json")" "fixed rule"
stop_sim

# text-only: vLLM's 400 and llama-server's 500
start_sim to --profile fast --dialect text-only
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 400 "$(status)" "text-only refuses an image"
expect_grep "is not a multimodal model" "$T/r.json"
post /v1/chat/completions "$TEXT" >/dev/null
expect_eq 200 "$(status)" "text-only serves text"
stop_sim
start_sim tl --profile fast --dialect llamacpp,text-only
post /v1/chat/completions "@$T/body.json" >"$T/r.json"
expect_eq 500 "$(status)" "llamacpp text-only refuses an image"
expect_grep "image input is not supported" "$T/r.json"
stop_sim
finish
