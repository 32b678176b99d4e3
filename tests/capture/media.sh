#!/bin/sh
# Capture records media parts as shapes (docs/capture.md "Media"): requests
# through capture (with --keep-content, the hardest case) in front of the
# sim carry PNGs made here by tests/lib/mkpng.py in chat (image_url, data
# URL and a signed link), Responses (input_image) and Messages (a base64
# image block), and a WAV clip (python's wave module) in chat's
# input_audio. Each record's media are exactly the shapes sent (sizes from
# the PNG headers written here, bytes from the files), the image tokens are
# the sim's (its --log), and the trace holds no pixel (no run of the
# base64 data, in the file's bytes or in cat) and no secret of the link.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"
MK="python3 $LT_SRC/tests/lib/mkpng.py"
cd "$T"

$MK 640 480 >a.png
$MK 33 70 >b.png
$MK 640 480 --url >a.url
$MK 33 70 --url >b.url
python3 -c '
import wave
w = wave.open("c.wav", "wb")
w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
w.writeframes(b"\x01\x00" * 24000)
w.close()'
WAV=$(base64 -w0 c.wav)
A=$(cat a.url) B=$(cat b.url)
B64B=${B#*base64,}
SECRET=s3cr3t-sig-value

start_sim up --profile fast
start_capture cap "$SIM_URL" --keep-content
req "$CAP_URL" /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"$A\"}},{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://img.example.invalid/x/cat.jpg?X-Amz-Signature=$SECRET&token=$SECRET\"}}]}]}" r1
expect_eq 200 "$(cat r1.status)" "chat with an image and a link"
req "$CAP_URL" /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":2,\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"$B\"}}]}]}" r2
expect_eq 200 "$(cat r2.status)" "chat streamed with an image"
req "$CAP_URL" /v1/responses "{\"model\":\"m\",\"max_output_tokens\":2,\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"look\"},{\"type\":\"input_image\",\"image_url\":\"$B\"}]}]}" r3
expect_eq 200 "$(cat r3.status)" "responses with input_image"
req "$CAP_URL" /v1/messages "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"$B64B\"}}]}]}" r4
expect_eq 200 "$(cat r4.status)" "messages with an image block"
req "$CAP_URL" /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hear\"},{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"$WAV\",\"format\":\"wav\"}}]}]}" r5
expect_eq 200 "$(cat r5.status)" "chat with input_audio"
# malformed: a broken data URL and a PNG whose header lies; the sim says
# 400, capture records the image (the lying one with its header's size,
# the broken one with none) and goes on
$MK 20 10 --url --lie-height 4000 >lie.url
req "$CAP_URL" /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBOR*broken\"}}]}]}" r6
expect_eq 400 "$(cat r6.status)" "a broken data URL: the sim's 400"
req "$CAP_URL" /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"$(cat lie.url)\"}}]}]}" r7
expect_eq 400 "$(cat r7.status)" "a lying header: the sim's 400"
req "$CAP_URL" /v1/chat/completions '{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"after"}]}' r8
expect_eq 200 "$(cat r8.status)" "capture goes on"
stop $CAP_PID capture
stop $SIM_PID sim
records cap.lt.zst | jq -c -s 'sort_by(.t)[5:8][] | [.media, .orig.status]' >bad
cat >badwant <<W
[[{"kind":"image","fmt":"png","bytes":9}],400]
[[{"kind":"image","fmt":"png","w":20,"h":4000,"bytes":$(python3 "$LT_SRC/tests/lib/mkpng.py" 20 10 --lie-height 4000 | wc -c | tr -d ' ')}],400]
[null,200]
W
expect_eq "$(cat badwant)" "$(cat bad)" "malformed images recorded as far as they can be read"
records cap.lt.zst | jq -c -s 'sort_by(.t)[0:5][] | .media' >got
# what was sent: sizes as mkpng wrote them, bytes of the files
sa=$(wc -c <a.png | tr -d ' ') sb=$(wc -c <b.png | tr -d ' ') sc=$(wc -c <c.wav | tr -d ' ')
# the sim's image tokens, in the order it answered (the same as sent here)
jq -r 'select(.image_tokens) | .image_tokens' up.log >toks
t1=$(sed -n 1p toks) t2=$(sed -n 2p toks)
# 640x480 and the link (of unknown size: 512 x 512, as replay makes it)
# share t1 by pixels: 640*480 of 640*480 + 512*512
ta=$(awk -v t="$t1" 'BEGIN { printf "%d", int(t * 307200 / (307200 + 262144)) }')
cat >want <<W
[{"kind":"image","fmt":"png","w":640,"h":480,"bytes":$sa,"tokens":$ta},{"kind":"image","fmt":"jpeg","link":true,"tokens":$((t1 - ta))}]
[{"kind":"image","fmt":"png","w":33,"h":70,"bytes":$sb,"tokens":$t2}]
[{"kind":"image","fmt":"png","w":33,"h":70,"bytes":$sb}]
[{"kind":"image","fmt":"png","w":33,"h":70,"bytes":$sb}]
[{"kind":"audio","fmt":"wav","bytes":$sc,"dur":1500000}]
W
expect_eq "$(cat want)" "$(cat got)" "media shapes as sent"
# no pixel, no secret: not in cat's text nor in the file's bytes
records cap.lt.zst >all.json
zstd -dc cap.lt.zst >raw.bin
for f in all.json raw.bin; do
    for probe in "$(printf '%s' "$B64B" | cut -c100-140)" "$(printf '%s' "${A#*base64,}" | cut -c2000-2040)" \
        "$(printf '%s' "$WAV" | cut -c200-240)" "$SECRET" "X-Amz-Signature"; do
        if grep -aqF -- "$probe" "$f"; then fail "$f holds '$probe'"; fi
    done
done
grep -q 'bytes not kept by loadtrace capture' all.json || fail "the kept text does not say where the data was"
grep -q 'https://img.example.invalid/x/cat.jpg\\"' all.json || fail "the link without its query is not in the kept text"
finish
