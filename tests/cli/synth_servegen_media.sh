#!/bin/sh
# synth --servegen on a folder shaped like ServeGen's real
# data/multimodal/mm-image files (every window gives all eight keys:
# text_tokens, image_tokens, audio_tokens, video_tokens, image_count,
# audio_count, video_count, output_tokens, each a Python dict's text; the
# trace rows "start,rate,cv,Gamma|Weibull,shape,scale"). ServeGen's
# generator (servegen/construct.py) draws image_tokens once per image, so a
# request's two images are drawn apart: with image_tokens {300: .5, 900: .5}
# about half the two-image requests hold one of each, and every image
# carries 300 or 900 tokens (302 and 912 by the 28 x 28 rule of its size),
# never a share of their sum.
set -u
. "$LT_SRC/tests/cli/lib.sh"
cd "$T"

d=mm/mm-image
mkdir -p $d
printf '%s\n' '0,3.0,0.5697,Gamma,3.0811,0.3600' '600,3.0,0.7622,Weibull,1.3303,1.1677' >$d/chunk-0-trace.csv
cat >$d/chunk-0-dataset.json <<'JSON'
{
  "0": {
    "text_tokens": "{136: 0.25, 372: 0.75}",
    "image_tokens": "{300: 0.5, 900: 0.5}",
    "audio_tokens": "{0: 1.0}",
    "video_tokens": "{0: 1.0}",
    "image_count": "{2: 1.0}",
    "audio_count": "{0: 1.0}",
    "video_count": "{0: 1.0}",
    "output_tokens": "{21: 0.5, 34: 0.5}"
  }
}
JSON
"$LOADTRACE" synth --servegen $d --window 0 --duration 1200 --seed 3 -o mm.lt.zst 2>err
expect_status 0 $? "synth --servegen on a real-shaped mm-image folder"
"$LOADTRACE" cat --no-header mm.lt.zst >mm.json
n=$(jq -r 1 mm.json | wc -l | tr -d ' ')
expect_near 3600 "$n" 400 "requests (3 req/s for 1200 s)"
expect_eq "" "$(jq -r 'select((.media // []) | length != 2 or any(.[]; .kind != "image")) | .t' mm.json)" "two images each (image_count {2: 1.0}), no audio or video (their counts 0)"
expect_eq "" "$(jq -r '.media[] | select(.tokens != 302 and .tokens != 912) | "\(.w)x\(.h) \(.tokens)"' mm.json | sort -u)" "each image carries 300 or 900 tokens (302 or 912 by its size's rule)"
mixed=$(jq -r 'select(.media[0].tokens != .media[1].tokens) | 1' mm.json | wc -l | tr -d ' ')
expect_near "$(awk -v n="$n" 'BEGIN { print n / 2 }')" "$mixed" "$(awk -v n="$n" 'BEGIN { print n / 12 }')" "half the requests' two images drawn apart (one of 300, one of 900)"
big=$(jq -r '.media[] | select(.tokens == 912) | 1' mm.json | wc -l | tr -d ' ')
expect_near "$n" "$big" "$(awk -v n="$n" 'BEGIN { print n / 8 }')" "half the images of 900 tokens"
expect_eq "" "$(jq -r 'select(.in - (.media | map(.tokens) | add) != 136 and .in - (.media | map(.tokens) | add) != 372) | .t' mm.json)" "prompt = text_tokens + its images' tokens"
finish
