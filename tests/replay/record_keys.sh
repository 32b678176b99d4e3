#!/bin/sh
# One recorder (traces/trace_results.h) for the live and the virtual
# engine (docs/trace-format.md §2.4-2.5):
#  1. a virtual replay of a trace with images, audio and video writes each
#     result's media keys with the hand-built trace's figures (img, img_tok,
#     aud, vid, av_tok; the record's tokens, not the sim's rule: the 640x480
#     image says 300, the rule counts 416), and analyze splits it by
#     modality as it does a live run;
#  2. a live replay of the same trace against the sim writes results with
#     the same keys as the virtual one, request by request, and run records
#     whose keys differ only by the live engine's own (written out below:
#     the calibration's and what the target said about itself,
#     docs/trace-format.md "Keys only one engine writes").
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

cat >"$T/m.jsonl" <<'J'
{"t":0,"in":100,"out":3}
{"t":100000,"in":400,"out":3,"media":[{"kind":"image","w":640,"h":480,"fmt":"png","tokens":300}]}
{"t":200000,"in":500,"out":3,"media":[{"kind":"image","w":64,"h":64,"fmt":"png","tokens":7},{"kind":"image","w":300,"h":200,"fmt":"jpeg","tokens":90}]}
{"t":300000,"in":150,"out":3,"media":[{"kind":"audio","fmt":"wav","dur":2000000,"tokens":50}]}
{"t":400000,"in":900,"out":3,"media":[{"kind":"image","w":28,"h":28,"fmt":"png","tokens":3},{"kind":"video","w":448,"h":448,"fmt":"mp4","frames":4,"dur":2000000,"tokens":514}]}
J
"$L" import --from jsonl -q "$T/m.jsonl" -o "$T/m.lt.zst" || fail "import"

# ---- 1. virtual: the media keys, and analyze's modality split ----
"$L" replay "$T/m.lt.zst" --target sim --virtual --profile fast -o "$T/v.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay of the media trace"
got=$(results "$T/v.lt.zst" | jq -s -r 'sort_by(.i)[] | "\(.i) \(.img) \(.img_tok) \(.aud) \(.vid) \(.av_tok)"')
want="0 null null null null null
1 1 300 null null null
2 2 97 null null null
3 0 0 1 0 50
4 1 3 0 1 514"
expect_eq "$want" "$got" "virtual results: i img img_tok aud vid av_tok, as the trace says"
got=$("$L" analyze --json "$T/v.lt.zst" | jq -r '.runs[0].modality | to_entries[] | "\(.key) \(.value.results) \(.value.images) \(.value.img_tokens) \(.value.av_tokens)"')
want="text 1 0 0 0
one_image 1 1 300 0
several_images 1 2 97 0
audio 1 0 0 50
video 1 1 3 514"
expect_eq "$want" "$got" "analyze of the virtual run: class results images img_tokens av_tokens"

# ---- 2. live against the sim: the same result keys, the run's engine-specific ones apart ----
start_sim live --profile fast
timeout 60 "$L" replay "$T/m.lt.zst" --target "$SIM_URL" -o "$T/l.lt.zst" -q --no-summary
expect_status 0 $? "live replay of the media trace"
stop_sim
keys() { results "$1" | jq -s -r 'sort_by(.i)[] | "\(.i) \(keys | join(","))"'; }
expect_eq "$(keys "$T/l.lt.zst")" "$(keys "$T/v.lt.zst")" "each result's keys: live and virtual"
common="mode,model,rec,run,speed,start,target,version"
live_only="cache_state,calib,calib_err,calib_err_rel,client_rtt_us,server_ctx,server_model"
expect_eq "$common" "$(runs "$T/v.lt.zst" | jq -r 'keys | join(",")')" "the virtual run record's keys"
expect_eq "$(printf '%s,%s' "$common" "$live_only" | tr ',' '\n' | sort | paste -sd,)" \
    "$(runs "$T/l.lt.zst" | jq -r 'keys | join(",")')" "the live run record's keys: the same and the live engine's own"
finish
