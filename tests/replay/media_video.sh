#!/bin/sh
# Video in replay (docs/multimodal.md "Video"): a record's video is made
# as Motion-JPEG frames in an AVI of its frames, duration and frame size,
# once per shape, and sent in chat as a video_url data URL:
#   - against a body sink: each video decodes (tests/replay/avicheck.py
#     walks the RIFF chunks; every frame is a whole JPEG of the recorded
#     size by libjpeg's reader, imgdecode) to the recorded frames and frame
#     time; two records of one shape carry the same bytes; a second replay
#     sends the same bytes (deterministic);
#   - against the sim: its log's video_tokens are the rule's (awk: 2 + 256
#     per pair of 448 x 448 frames, by image_tile 28), usage says them, and
#     the prompt it counted is the trace's;
#   - Responses carries no video: that request fails alone as "media";
#   - the sim answers a video it cannot read (an mp4's bytes) with a 400.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
: "${IMGDECODE:?}"
cd "$T"

vrule() { awk -v w="$1" -v h="$2" -v f="$3" 'function c(a) { return int((a + 27) / 28) } BEGIN { print 2 + int((f + 1) / 2) * c(w) * c(h) }'; }
v1=$(vrule 448 448 4) v2=$(vrule 320 240 5)
cat >m.jsonl <<J
{"t":0,"in":$((v1 + 50)),"out":2,"media":[{"kind":"video","w":448,"h":448,"fmt":"mp4","frames":4,"dur":2000000,"tokens":$v1}]}
{"t":100000,"in":$((v2 + 40)),"out":2,"media":[{"kind":"video","w":320,"h":240,"fmt":"mp4","frames":5,"dur":1000000,"tokens":$v2}]}
{"t":200000,"in":$((v1 + 60)),"out":2,"media":[{"kind":"video","w":448,"h":448,"fmt":"mp4","frames":4,"dur":2000000,"tokens":$v1}]}
{"t":300000,"in":100,"out":2}
J
"$LOADTRACE" import --from jsonl -q m.jsonl -o m.lt.zst

# 1. the bodies
for k in 1 2; do
    mkdir -p "b$k"
    server_start "sink$k" python3 "$LT_SRC/tests/lib/bodysink.py" "$T/b$k" || exit 1
    "$LOADTRACE" replay m.lt.zst --target "$SERVER_URL" --model sink --no-calibrate --no-force-length \
        -o "sink$k.lt.zst" >/dev/null 2>"sink$k.err"
    expect_status 0 $? "replay $k with videos against the body sink"
    server_stop "sink$k"
    for b in "b$k"/*.json; do
        jq -r '.messages[].content | arrays | .[] | select(.type == "video_url") | .video_url.url' "$b"
    done >"urls$k"
done
expect_grep "2 shapes made" sink1.err
expect_eq 3 "$(wc -l <urls1 | tr -d ' ')" "three video parts sent"
expect_eq "" "$(grep -v '^data:video/x-msvideo;base64,' urls1)" "each an AVI data URL"
expect_eq "$(cat urls1)" "$(cat urls2)" "the same bytes from a second replay"
expect_eq 2 "$(sort -u urls1 | wc -l | tr -d ' ')" "the two 448x448 videos are the same bytes"
n=0
while read -r u; do
    n=$((n + 1))
    printf '%s' "${u#*base64,}" | base64 -d >"v$n.avi" || fail "video $n: not base64"
    python3 "$LT_SRC/tests/replay/avicheck.py" "v$n.avi" "f$n" || fail "video $n: not a whole AVI"
done <urls1 >got
printf '4 448 448 500000\n5 320 240 200000\n4 448 448 500000\n' >want
expect_eq "$(cat want)" "$(cat got)" "frames, size and frame time, as the AVI's chunks say"
for f in f*.jpg; do "$IMGDECODE" "$f"; done | sort | uniq -c | awk '{ print $1, $2, $3, $4 }' >frames
expect_eq "8 jpeg 448 448
5 jpeg 320 240" "$(sort -r frames)" "every frame a whole JPEG of the recorded size"

# 2. the sim counts them
sim_start sim --profile fast
"$LOADTRACE" replay m.lt.zst --target "$SIM_URL" -o sim.lt.zst >/dev/null 2>sim.err
expect_status 0 $? "replay with videos against the sim"
sim_stop # its log is whole once it stopped
expect_eq $((2 * v1 + v2)) "$(grep '"video_tokens"' "$SIM_LOG" | jq -s 'map(.video_tokens) | add')" "the sim's video tokens, by the rule"
"$LOADTRACE" cat --no-header sim.lt.zst | grep '"want_in"' >sim.res
expect_eq "" "$(jq -r 'select(.err != null or .in != .want_in) | "\(.i): \(.in) != \(.want_in) \(.err)"' sim.res)" "the prompts the sim counted are the trace's"
expect_eq "3 3 $((2 * v1 + v2)) $((2 * v1 + v2))" "$("$LOADTRACE" cat --no-header sim.lt.zst | jq -r 'select(.rec == "check") | "\(.vid_checked) \(.vid_exact) \(.vid_want) \(.vid_got)"')" "check record: the video tokens of usage against the records'"
expect_grep "video tokens vs the server's usage: 3 of 3 requests exact" sim.err
# analyze's modality split: the three video requests are "video", not "text"
"$LOADTRACE" analyze sim.lt.zst --json >an.json || fail "analyze --json"
expect_eq "3 1 0" "$(jq -r '.runs[0].modality | "\(.video.results) \(.text.results) \(.audio.results)"' an.json)" "modality classes: video, text, audio"
sim_start sim2 --profile fast
"$LOADTRACE" replay m.lt.zst --target "$SIM_URL" --api responses -o resp.lt.zst >/dev/null 2>resp.err
expect_status 1 $? "responses: the video requests fail (media), the run goes on"
"$LOADTRACE" cat --no-header resp.lt.zst | grep '"want_in"' >resp.res
expect_eq "0 1 2" "$(jq -r 'select(.err == "media") | .i' resp.res | sort | xargs)" "responses: three media errors"
expect_eq 1 "$(jq -r 'select(.err == null) | .i' resp.res | wc -l | tr -d ' ')" "responses: the text request answered"
# an mp4's first bytes (ftyp box): no AVI, a 400 naming the video
b64=$(printf '\000\000\000\030ftypisom\000\000\002\000isomiso2' | base64 | tr -d '\n')
printf '{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"video_url","video_url":{"url":"data:video/mp4;base64,%s"}}]}],"max_tokens":2}' "$b64" >bad.json
code=$(curl -s -o bad.out -w '%{http_code}' -H 'Content-Type: application/json' --data @bad.json "$SIM_URL/v1/chat/completions")
expect_eq 400 "$code" "an mp4 the sim cannot read: 400"
expect_grep "video 1: cannot read the video" bad.out
sim_stop
finish
