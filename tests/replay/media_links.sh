#!/bin/sh
# replay --media-links (docs/multimodal.md "Links"): the images go as links
# to replay's own server on 127.0.0.1, and the sim fetches them:
#   - against a body sink: every image part is a link
#     http://127.0.0.1:PORT/lt-media/<32 hex>/<i>.<ext>, no data URL;
#   - against the sim, in chat, Responses and Messages: the sim's log says
#     each image was fetched (image_links, image_bytes), its image tokens
#     are the rule's of the recorded sizes (awk here; a link it did not
#     fetch would count as 448 x 448), the prompt it counted is the
#     trace's, and replay's line says how many images it served (the
#     trace's image parts, counted with jq).
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
cd "$T"

rule() { awk -v w="$1" -v h="$2" 'function c(a) { return int((a + 27) / 28) } BEGIN { print 2 + c(w) * c(h) }'; }
t640=$(rule 640 480) t300=$(rule 300 200)
cat >m.jsonl <<J
{"t":0,"in":100,"out":3}
{"t":1000,"in":$((t640 + 60)),"out":3,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":2000,"in":$((t300 + t640 + 80)),"out":3,"media":[{"kind":"image","w":300,"h":200,"fmt":"jpeg","tokens":$t300},{"kind":"image","w":640,"h":480,"fmt":"png","tokens":$t640}]}
{"t":3000,"in":$((t300 + 50)),"out":3,"media":[{"kind":"image","w":300,"h":200,"fmt":"jpeg","tokens":$t300}]}
J
"$LOADTRACE" import --from jsonl -q m.jsonl -o m.lt.zst
parts=$(jq -s 'map(.media // [] | length) | add' m.jsonl)

# 1. the bodies carry links, not data URLs
mkdir -p bodies
server_start sink python3 "$LT_SRC/tests/lib/bodysink.py" "$T/bodies" || exit 1
"$LOADTRACE" replay m.lt.zst --target "$SERVER_URL" --model sink --no-calibrate --no-force-length \
    --media-links -o sink.lt.zst >sink.out 2>sink.err
expect_status 0 $? "replay --media-links against the body sink"
server_stop sink
cat bodies/*.json | jq -r '.messages[].content | arrays | .[] | select(.type == "image_url") | .image_url.url' >urls
expect_eq "$parts" "$(wc -l <urls | tr -d ' ')" "one image part per recorded image"
expect_eq "" "$(grep -v -E '^http://127\.0\.0\.1:[0-9]+/lt-media/[0-9a-f]{32}/[0-9]+\.(png|jpg)$' urls)" "every image a loopback link with a 128-bit path"
expect_eq 1 "$(sed 's|/[0-9]*\.[a-z]*$||' urls | sort -u | wc -l | tr -d ' ')" "one server, one secret per run"
expect_eq "" "$(grep -l 'data:image' bodies/*.json)" "no data URL in any body"

# 2. the sim fetches them
for api in chat responses messages; do
    sim_start "sim-$api" --profile fast
    "$LOADTRACE" replay m.lt.zst --target "$SIM_URL" --api "$api" --media-links -o "$api.lt.zst" >"$api.out" 2>"$api.err"
    expect_status 0 $? "replay --api $api --media-links against the sim"
    sim_stop
    expect_grep "media links: $parts images served from http://127.0.0.1:" "$api.err"
    expect_eq "$parts" "$(grep '"image_links"' "$SIM_LOG" | jq -s 'map(.image_links) | add')" "$api: the sim fetched every link"
    expect_eq "" "$(grep '"images"' "$SIM_LOG" | jq -r 'select(.image_bytes == 0) | .id')" "$api: every image's bytes were read"
    expect_eq $((2 * t640 + 2 * t300)) "$(grep '"image_tokens"' "$SIM_LOG" | jq -s 'map(.image_tokens) | add')" "$api: image tokens of the recorded sizes"
    "$LOADTRACE" cat "$api.lt.zst" | grep '"want_in"' >"$api.res"
    expect_eq "" "$(jq -r 'select(.err != null or .in != .want_in) | "\(.i): \(.in) != \(.want_in) \(.err)"' "$api.res")" "$api: the prompts the sim counted are the trace's"
done

# 3. a link the sim cannot fetch (nothing listens there) is that request's 400
sim_start sim-dead --profile fast
printf '{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"http://127.0.0.1:1/x.png"}}]}],"max_tokens":2}' >dead.json
code=$(curl -s -o dead.out -w '%{http_code}' -H 'Content-Type: application/json' --data @dead.json "$SIM_URL/v1/chat/completions")
expect_eq 400 "$code" "an unreachable loopback link: 400"
expect_grep "image 1: cannot fetch the link" dead.out
sim_stop

# 4. link_fetch = 0: nothing is fetched, a link counts as a 448 x 448 square
printf 'link_fetch = 0\n' >nofetch.profile
sim_start sim-nofetch --profile nofetch.profile
"$LOADTRACE" replay m.lt.zst --target "$SIM_URL" --media-links -o nf.lt.zst >nf.out 2>nf.err
expect_status 0 $? "replay --media-links against a sim that fetches nothing"
sim_stop
expect_grep "media links: 0 images served" nf.err
expect_eq $((parts * $(rule 448 448))) "$(grep '"image_tokens"' "$SIM_LOG" | jq -s 'map(.image_tokens) | add')" "link_fetch = 0: every link a 448 x 448 square"
finish
