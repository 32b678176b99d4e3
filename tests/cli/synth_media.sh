#!/bin/sh
# Images in synthesized traces (docs/synth.md "Images"):
#   - synth --images P:N:WxH[:FMT]: the share of requests with images, their
#     count, size and format, and their tokens (2 + one per 28 x 28 pixels)
#     in the prompt, checked with jq and awk over cat;
#   - synth --servegen on a multimodal folder in ServeGen's layout that this
#     test writes (text, image and audio tokens and counts): every prompt is
#     its text plus its parts' tokens, the counts follow the folder's shares;
#   - that trace replayed against the sim: the prompts the sim counted are
#     the trace's (its images, made by replay, carry the recorded tokens by
#     the sim's rule), and analyze splits the run by modality as the trace's
#     records say.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
cd "$T"

"$LOADTRACE" synth --in fixed:100 --out fixed:4 --rate 100 --requests 2000 --seed 5 \
    --images 0.3:1-3:640x480:png -o mix.lt.zst 2>/dev/null
expect_status 0 $? "synth --images"
"$LOADTRACE" cat --no-header mix.lt.zst >mix.json
with=$(jq -r 'select(.media) | 1' mix.json | wc -l | tr -d ' ')
expect_near 600 "$with" 60 "requests with images (30 % of 2000)"
expect_eq "" "$(jq -r 'select(.media) | .media[] | select(.w != 640 or .h != 480 or .fmt != "png" or .tokens != 416) | 1' mix.json)" "every image 640x480 png of 416 tokens"
expect_eq "" "$(jq -r 'select(.media) | select(.in != 100 + (.media | map(.tokens) | add)) | .t' mix.json)" "prompt = text + image tokens"
for k in 1 2 3; do
    c=$(jq -r "select(.media) | select((.media | length) == $k) | 1" mix.json | wc -l | tr -d ' ')
    expect_near 200 "$c" 45 "requests with $k images (a third of those with images)"
done
"$LOADTRACE" synth --in fixed:100 --out fixed:4 --rate 1 --requests 5 --images 2:1:10x10 -o x.lt.zst 2>err
expect_status 2 $? "a share over 1"
expect_grep "expected SHARE:COUNT:WxH" err
"$LOADTRACE" synth --in fixed:100 --out fixed:4 --rate 1 --requests 5 --images 0.5:1:0x10 -o x.lt.zst 2>/dev/null
expect_status 2 $? "a side of 0"

# compare describes the image shapes: the same mix with another seed is
# representative, twice the share and larger images are not
"$LOADTRACE" synth --in fixed:100 --out fixed:4 --rate 100 --requests 2000 --seed 6 \
    --images 0.3:1-3:640x480:png -o mix2.lt.zst 2>/dev/null
"$LOADTRACE" synth --in fixed:100 --out fixed:4 --rate 100 --requests 2000 --seed 7 \
    --images 0.6:1-3:1024x768:png -o mix3.lt.zst 2>/dev/null
"$LOADTRACE" compare --json mix.lt.zst mix2.lt.zst >c2.json
"$LOADTRACE" compare --json mix.lt.zst mix3.lt.zst >c3.json
v() { jq -r --arg n "$2" '[.. | objects | select(.name? == $n)][0].verdict' "$1"; }
expect_eq representative "$(v c2.json 'image share')" "compare: the same image share"
expect_eq representative "$(v c2.json 'image size (pixels)')" "compare: the same image size"
expect_eq different "$(v c3.json 'image share')" "compare: twice the image share"
expect_eq different "$(v c3.json 'image size (pixels)')" "compare: larger images"

# a ServeGen multimodal folder: client 0 sends images, client 1 audio
d=sg/mm-image
mkdir -p $d
printf '%s\n' '0,4.0,1,,0,0' '600,4.0,1,,0,0' >$d/chunk-0-trace.csv
printf '%s\n' '0,1.0,1,,0,0' '600,1.0,1,,0,0' >$d/chunk-1-trace.csv
cat >$d/chunk-0-dataset.json <<'JSON'
{"0": {"input_tokens": "{9999: 1.0}", "text_tokens": "{100: 0.5, 300: 0.5}", "output_tokens": "{3: 1.0}",
       "image_count": "{0: 0.25, 1: 0.5, 2: 0.25}", "image_tokens": "{770: 1.0}"}}
JSON
cat >$d/chunk-1-dataset.json <<'JSON'
{"0": {"text_tokens": "{50: 1.0}", "output_tokens": "{3: 1.0}", "audio_tokens": "{75: 1.0}"}}
JSON
"$LOADTRACE" synth --servegen $d --window 0 --duration 120 --seed 2 -o sg.lt.zst 2>sg.err
expect_status 0 $? "synth --servegen on a multimodal folder"
"$LOADTRACE" cat --no-header sg.lt.zst >sg.json
expect_eq "" "$(jq -r 'select(.in != ([.media // [] | .[].tokens] | add // 0) + (if .client == 0 then (if (.in - ([.media // [] | .[].tokens] | add // 0)) == 100 then 100 else 300 end) else 50 end)) | .t' sg.json)" "prompt = text + parts' tokens"
n0=$(jq -r 'select(.client == 0) | 1' sg.json | wc -l | tr -d ' ')
for k in 0 1 2; do
    c=$(jq -r "select(.client == 0 and ((.media // []) | length) == $k) | 1" sg.json | wc -l | tr -d ' ')
    want=$(awk -v n="$n0" -v k="$k" 'BEGIN { print (k == 1 ? 0.5 : 0.25) * n }')
    expect_near "$want" "$c" "$(awk -v w="$want" 'BEGIN { print 0.25 * w + 10 }')" "client 0: requests with $k images"
done
# 770 image tokens: one image of them, or two of 385, by the rule
expect_eq "" "$(jq -r 'select(.client == 0 and .media) | .media[] | select(.kind != "image" or .fmt != "jpeg" or .tokens != 2 + (((.w + 27) / 28 | floor) * ((.h + 27) / 28 | floor))) | 1' sg.json)" "images: jpeg, tokens by the rule"
expect_eq "" "$(jq -r 'select(.client == 1) | select((.media | length) != 1 or .media[0].kind != "audio" or .media[0].dur != 3000000) | .t' sg.json)" "client 1: one 3 s audio clip (75 tokens) each"

# the images only (audio is not replayed: docs/multimodal.md), against the sim
"$LOADTRACE" synth --servegen $d --window 0 --duration 20 --seed 2 -o sg20.lt.zst 2>/dev/null
"$LOADTRACE" cat sg20.lt.zst | jq -c 'if .client == 1 then del(.media) | .in = 50 else . end' >img.jsonl
"$LOADTRACE" import --from jsonl -q img.jsonl -o img.lt.zst
sim_start up --profile fast
"$LOADTRACE" replay img.lt.zst --target "$SIM_URL" -o res.lt.zst -q >/dev/null 2>rep.err
expect_status 0 $? "replay of the ServeGen images"
sim_stop
"$LOADTRACE" cat --no-header res.lt.zst | grep '"want_in"' >res.json
expect_eq "" "$(jq -r 'select(.in != .want_in) | "\(.i): \(.in) != \(.want_in)"' res.json)" "the sim counted the trace's prompts"
"$LOADTRACE" analyze --json res.lt.zst >a.json
"$LOADTRACE" cat --no-header img.lt.zst >img.json
for c in "text 0" "one_image 1" "several_images 2"; do
    set -- $c
    want=$(jq -r "select(((.media // []) | length) == $2 or ($2 == 2 and ((.media // []) | length) > 2)) | 1" img.json | wc -l | tr -d ' ')
    expect_eq "$want" "$(jq -r ".runs[0].modality.$1.results" a.json)" "analyze: $1 requests"
done
finish
