#!/bin/sh
# replay with images (docs/multimodal.md): a hand-built trace whose records
# carry image shapes is replayed
#   - against a stand-in server that keeps every body (tests/lib/bodysink.py):
#     each image sent is decoded by libpng's or libjpeg's own reader
#     (tests/replay/imgdecode.c) to the recorded format and size (a webp,
#     for which there is no codec, as a png of its size);
#   - against the sim, in chat, Responses and Messages: the prompt the sim
#     counted (text plus images, by its rule) is the trace's `in`, and its
#     log holds the image tokens of the rule computed here in awk;
# and the records whose media cannot be sent (a malformed media key, a
# 100 MB image) fail alone as "media", saying why, while the run goes on.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
: "${IMGDECODE:?}"
cd "$T"

# 2 + ceil(w/28) * ceil(h/28): the sim's default rule (docs/sim.md "Images")
rule() { awk -v w="$1" -v h="$2" 'function c(a) { return int((a + 27) / 28) } BEGIN { print 2 + c(w) * c(h) }'; }
t640=$(rule 640 480) t300=$(rule 300 200) t120=$(rule 120 90)
cat >m.jsonl <<J
{"t":0,"in":100,"out":3}
{"t":1000,"in":$((t640 + 60)),"out":3,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":2000,"in":$((t300 + t640 + 80)),"out":3,"media":[{"kind":"image","w":300,"h":200,"fmt":"jpeg","tokens":$t300},{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":3000,"in":300,"out":3,"media":[{"kind":"image","w":64,"h":64,"fmt":"png","bytes":104857600}]}
{"t":4000,"in":300,"out":3,"media":[{"kind":"hologram","w":3}]}
{"t":5000,"in":$((t120 + 40)),"out":3,"media":[{"kind":"image","w":120,"h":90,"fmt":"webp","tokens":$t120}]}
{"t":6000,"in":120,"out":3}
J
"$LOADTRACE" import --from jsonl -q m.jsonl -o m.lt.zst

# 1. the bodies, decoded by the libraries
mkdir -p bodies
server_start sink python3 "$LT_SRC/tests/lib/bodysink.py" "$T/bodies" || exit 1
"$LOADTRACE" replay m.lt.zst --target "$SERVER_URL" --model sink --no-calibrate --no-force-length \
    -o sink.lt.zst >sink.out 2>sink.err
expect_status 1 $? "replay against the body sink (2 media errors)"
expect_grep "images: 3 shapes made" sink.err
server_stop sink
n=0
for b in bodies/*.json; do
    jq -r '.messages[].content | arrays | .[] | select(.type == "image_url") | .image_url.url' "$b"
done >urls
while read -r u; do
    n=$((n + 1))
    printf '%s' "${u#*base64,}" | base64 -d >"img$n" || fail "image $n: not base64"
    case $u in data:image/png\;base64,* | data:image/jpeg\;base64,*) ;; *) fail "image $n: not a png or jpeg data URL: $(printf '%s' "$u" | cut -c1-40)" ;; esac
    "$IMGDECODE" "img$n" || fail "image $n does not decode"
done <urls >got
sort got >got.sorted
printf 'jpeg 300 200\npng 120 90\npng 640 480\npng 640 480\n' >want
expect_eq "$(cat want)" "$(cat got.sorted)" "images sent, as the libraries decode them"
# the same shape, the same bytes (made once)
expect_eq 1 "$(sort urls | uniq -c | awk '$1 == 2' | wc -l | tr -d ' ')" "the two 640x480 images are the same bytes"

# 2. the sim, each API: the counted prompt is the recorded one
for api in chat responses messages; do
    sim_start "sim-$api" --profile fast
    "$LOADTRACE" replay m.lt.zst --target "$SIM_URL" --api "$api" -o "$api.lt.zst" >"$api.out" 2>"$api.err"
    expect_status 1 $? "replay --api $api against the sim (2 media errors)"
    sim_stop
    "$LOADTRACE" cat "$api.lt.zst" | grep '"want_in"' >"$api.res"
    expect_eq 5 "$(jq -r 'select(.err == null) | .i' "$api.res" | wc -l | tr -d ' ')" "$api: requests answered"
    bad=$(jq -r 'select(.err == null and .in != .want_in) | "\(.i): \(.in) != \(.want_in)"' "$api.res")
    expect_eq "" "$bad" "$api: prompt tokens the sim counted are the trace's"
    expect_eq "3 4" "$(jq -r 'select(.err == "media") | .i' "$api.res" | sort | xargs)" "$api: the media errors"
    jq -r 'select(.i == 3) | .err_body' "$api.res" >e3
    expect_grep "104857600-byte image, over --max-image-bytes" e3
    jq -r 'select(.i == 4) | .err_body' "$api.res" >e4
    expect_grep "media key is malformed" e4
    # the sim's log: the image tokens of the rule
    sum=$(grep '"image_tokens"' "$SIM_LOG" | jq -s 'map(.image_tokens) | add')
    expect_eq $((2 * t640 + t300 + t120)) "$sum" "$api: image tokens the sim counted"    # analyze's split by modality: classes by the trace's records (text: 0,
    # 4 (malformed media: not sent), 6; one image: 1, 3 (100 MB: not sent),
    # 5; several: 2), prompt tokens of the Ok ones as the sim's log counted
    "$LOADTRACE" analyze --json "$api.lt.zst" >"$api.json"
    q() { jq -r ".runs[0].modality.$1" "$api.json"; }
    expect_eq "3 1 3 1 1 0" "$(q 'text.results') $(q 'text.errors') $(q 'one_image.results') $(q 'one_image.errors') $(q 'several_images.results') $(q 'several_images.errors')" "$api: modality classes"
    one=$(grep '"images":1,' "$SIM_LOG" | jq -s 'map(.prompt_tokens) | add')
    expect_eq "$one" "$(q one_image.in_tokens)" "$api: one-image prompt tokens, as the sim counted"
    expect_eq $((t640 + t120)) "$(q one_image.img_tokens)" "$api: one-image image tokens"
    expect_eq $((t640 + t300)) "$(q several_images.img_tokens)" "$api: several-images image tokens"
    "$LOADTRACE" analyze "$api.lt.zst" >"$api.txt"
    expect_grep "by modality" "$api.txt"
done
finish
