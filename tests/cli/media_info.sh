#!/bin/sh
# Media parts in a trace (docs/trace-format.md "media"): a hand-built
# JSON-lines trace with images, audio and video is imported, read back by
# cat unchanged, and described by info; the expected figures are counted
# here from the hand-built lines, not from loadtrace. A malformed media key
# is counted as such and the other records are still described.
set -eu
. "$LT_SRC/tests/cli/lib.sh"
cd "$T"

cat > m.jsonl <<'J'
{"t":0,"in":100,"out":10}
{"t":1000,"in":300,"out":10,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","bytes":12000,"tokens":200}]}
{"t":2000,"in":500,"out":10,"media":[{"kind":"image","w":1024,"h":768,"fmt":"jpeg","bytes":50000,"tokens":300},{"kind":"image","w":64,"h":64,"fmt":"png","link":true}]}
{"t":3000,"in":50,"out":10,"media":[{"kind":"audio","dur":2500000,"fmt":"wav","bytes":80000}]}
{"t":4000,"in":80,"out":10,"media":[{"kind":"video","frames":32,"dur":4000000,"w":320,"h":240,"fmt":"mp4"}]}
J
"$LOADTRACE" import --from jsonl -q m.jsonl -o m.lt.zst
"$LOADTRACE" cat m.lt.zst | grep -v '"format"' > back.jsonl
# cat prints the same media arrays as were written (key order kept)
grep -o '"media":\[[^]]*\]' m.jsonl > want.media
grep -o '"media":\[[^]]*\]' back.jsonl > got.media
cmp -s want.media got.media || fail "media parts changed through import and cat: $(diff want.media got.media)"

"$LOADTRACE" info --json m.lt.zst > info.json
q() { jq -r "$1" info.json; }
# counted by hand from the five lines above
expect_eq 1 "$(q .media.text_only)" "text-only requests"
expect_eq 1 "$(q .media.one_image)" "requests with one image"
expect_eq 1 "$(q .media.several_images)" "requests with several images"
expect_eq 1 "$(q .media.with_audio)" "requests with audio"
expect_eq 1 "$(q .media.with_video)" "requests with video"
expect_eq 3 "$(q .media.images)" "images"
expect_eq 1 "$(q .media.image_links)" "images sent as links"
expect_eq 2 "$(q .media.images_counted)" "images with server token counts"
expect_eq 500 "$(q .media.image_tokens)" "image tokens"
expect_eq 1024 "$(q .media.image_width_max)" "widest image"
expect_eq 2 "$(q .media.image_formats.png)" "png images"
expect_eq 1 "$(q .media.image_formats.jpeg)" "jpeg images"
expect_eq 2.5 "$(q .media.audio_s)" "audio seconds"
expect_eq 32 "$(q .media.video_frames)" "video frames"
expect_eq 0 "$(q .media.malformed)" "malformed media keys"
"$LOADTRACE" info m.lt.zst > info.txt
expect_grep "20.00% text only, 20.00% with one image, 20.00% with several" info.txt
expect_grep "3 images (1 as links)" info.txt

# a malformed part: the record is still counted, its media is not
cat > bad.jsonl <<'J'
{"t":0,"in":100,"out":10,"media":[{"kind":"hologram","w":1}]}
{"t":10,"in":100,"out":10,"media":[{"kind":"image","w":99999999,"h":4}]}
{"t":20,"in":100,"out":10,"media":[{"kind":"image","w":8,"h":8,"fmt":"png"}]}
J
"$LOADTRACE" import --from jsonl -q bad.jsonl -o bad.lt.zst
"$LOADTRACE" info --json bad.lt.zst > bad.json
expect_eq 3 "$(jq -r .records bad.json)" "records of the malformed trace"
expect_eq 2 "$(jq -r .media.malformed bad.json)" "malformed media keys"
expect_eq 1 "$(jq -r .media.images bad.json)" "images of the well-formed record"

# a trace without media: no media lines in the text
"$LOADTRACE" import --from jsonl -q - -o plain.lt.zst <<'J'
{"t":0,"in":100,"out":10}
J
"$LOADTRACE" info plain.lt.zst > plain.txt
expect_no_grep "modality" plain.txt
"$LOADTRACE" info --json plain.lt.zst > plain.json
expect_eq 1 "$(jq -r .media.text_only plain.json)" "text only, plain trace"
finish
