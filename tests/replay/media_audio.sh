#!/bin/sh
# replay with audio (docs/multimodal.md): records with chat input_audio
# shapes are sent as WAVs of the recorded duration, made before the run:
# python's wave module (not loadtrace) reads each sent clip's duration
# from the bodies a stand-in server kept (tests/lib/bodysink.py); against
# the sim, the prompt it counted (text plus audio at 25 tokens a second,
# rounded up, computed here) is the trace's, and its log has the audio
# tokens; an API without audio (Responses) fails those requests alone as
# "media".
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
cd "$T"
cat >a.jsonl <<'J'
{"t":0,"in":175,"out":3,"media":[{"kind":"audio","fmt":"wav","dur":3000000,"tokens":75}]}
{"t":1000,"in":90,"out":3,"media":[{"kind":"audio","fmt":"wav","dur":1500000,"tokens":38}]}
{"t":2000,"in":50,"out":3}
J
"$LOADTRACE" import --from jsonl -q a.jsonl -o a.lt.zst

mkdir -p bodies
server_start sink python3 "$LT_SRC/tests/lib/bodysink.py" "$T/bodies" || exit 1
"$LOADTRACE" replay a.lt.zst --target "$SERVER_URL" --model sink --no-calibrate --no-force-length \
    -o sink.lt.zst >/dev/null 2>sink.err
expect_status 0 $? "replay against the body sink"
server_stop sink
python3 - "$T/bodies" >durs <<'P'
import base64, glob, io, json, sys, wave
out = []
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for m in json.load(open(f)).get("messages", []):
        c = m.get("content")
        for p in c if isinstance(c, list) else []:
            if p.get("type") == "input_audio":
                w = wave.open(io.BytesIO(base64.b64decode(p["input_audio"]["data"])))
                out.append("%s %.3f" % (p["input_audio"]["format"], w.getnframes() / w.getframerate()))
print("\n".join(sorted(out)))
P
expect_eq "$(printf 'wav 1.500\nwav 3.000')" "$(cat durs)" "the clips sent, as python's wave reads them"

sim_start s --profile fast
"$LOADTRACE" replay a.lt.zst --target "$SIM_URL" -o chat.lt.zst >/dev/null 2>chat.err
expect_status 0 $? "replay against the sim"
"$LOADTRACE" replay a.lt.zst --target "$SIM_URL" --api responses -o resp.lt.zst >/dev/null 2>resp.err
expect_status 1 $? "responses: the audio requests fail"
sim_stop
"$LOADTRACE" cat --no-header chat.lt.zst | grep want_in >chat.json
expect_eq "" "$(jq -r 'select(.in != .want_in) | "\(.i): \(.in) != \(.want_in)"' chat.json)" "the sim counted the trace's prompts"
# 3 s and 1.5 s at 25 tokens/s, rounded up
want=$(awk 'BEGIN { a = 3 * 25; b = 1.5 * 25; if (b > int(b)) b = int(b) + 1; print a + b }')
expect_eq "$want" "$(jq -s 'map(.audio_tokens // 0) | add' "$SIM_LOG")" "audio tokens in the sim's log"
"$LOADTRACE" cat --no-header resp.lt.zst | grep want_in >resp.json
expect_eq "0 1" "$(jq -r 'select(.err == "media") | .i' resp.json | sort | xargs)" "responses: media errors"
jq -r 'select(.i == 0) | .err_body' resp.json >e0
expect_grep "audio" e0
finish
