#!/bin/sh
# Embeddings and rerank end to end (docs/multimodal.md "Embeddings and
# rerank"): the sim's /v1/embeddings, /v1/rerank and /rerank (vectors of
# embed_dim, ranked results, usage by its counting rule computed here);
# replay --api embeddings and --api rerank of a hand-built trace (each
# record's messages its inputs; rerank: the query read with each
# document): the prompts the sim's log counted are the ones replay asked
# for, and analyze gives the inputs and inputs/s from the trace's own
# counts; a 500 fault is an error classed as any request's (http).
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
cd "$T"
post() { curl -sS --max-time 20 -H 'Content-Type: application/json' -d "$2" "$SIM_URL$1"; }

sim_start e --profile fast --set embed_dim=5
post /v1/embeddings '{"model":"m","input":["hello there","a b c"]}' >e.json
expect_eq 2 "$(jq '.data | length' e.json)" "two embeddings"
expect_eq "5 5" "$(jq -r '[.data[].embedding | length] | join(" ")' e.json)" "of embed_dim values"
# "hello" 2 + "there" 2 + 3 one-piece words = 7 (4-byte pieces, no template)
expect_eq 7 "$(jq .usage.prompt_tokens e.json)" "embeddings usage"
post /v1/embeddings '{"model":"m","input":[1,2,3,4]}' >e.json
expect_eq 4 "$(jq .usage.prompt_tokens e.json)" "embeddings of token ids"
post /rerank '{"model":"m","query":"what","documents":["a b","c d e","f"],"top_n":2}' >r.json
# the query read with each document: (1+2) + (1+3) + (1+1)
expect_eq 9 "$(jq .usage.prompt_tokens r.json)" "rerank usage"
expect_eq 2 "$(jq '.results | length' r.json)" "rerank top_n"
expect_eq true "$(jq '.results[0].relevance_score >= .results[1].relevance_score' r.json)" "ranked by score"
post /v1/rerank '{"model":"m","query":"q","documents":[]}' >bad.json
expect_grep "documents" bad.json
sim_stop

cat >e.jsonl <<'J'
{"t":0,"in":30,"api":"embeddings","msgs":[["input",10],["input",20]]}
{"t":1000,"in":8,"api":"embeddings"}
{"t":2000,"in":60,"api":"embeddings","msgs":[["input",25],["input",25],["input",10]]}
{"t":3000,"in":12,"api":"embeddings","msgs":[["input",12]]}
J
cat >r.jsonl <<'J'
{"t":0,"in":50,"api":"rerank","msgs":[["query",5],["document",10],["document",20]]}
{"t":1000,"in":40,"api":"rerank"}
{"t":2000,"in":90,"api":"rerank","msgs":[["query",3],["document",30],["document",30],["document",21]]}
J
"$LOADTRACE" import --from jsonl -q e.jsonl -o e.lt.zst
"$LOADTRACE" import --from jsonl -q r.jsonl -o r.lt.zst
for api in embeddings rerank; do
    f=$(printf %s "$api" | cut -c1)
    sim_start "s$api" --profile fast --set embed_dim=16
    "$LOADTRACE" replay $f.lt.zst --target "$SIM_URL" --api "$api" -o "$api.lt.zst" >/dev/null 2>"$api.err"
    expect_status 0 $? "replay --api $api"
    sim_stop
    "$LOADTRACE" cat --no-header "$api.lt.zst" | grep '"want_in"' | jq -s -c 'sort_by(.sent)[] | [.in, .want_in, .inputs]' >got
    jq -c 'select(.api == "'"$api"'" and .status == 200) | [.prompt_tokens, .prompt_tokens, .inputs]' "$SIM_LOG" >want
    expect_eq "$(cat want)" "$(cat got)" "$api: prompts and inputs, as the sim's log counted them"
    "$LOADTRACE" analyze --json "$api.lt.zst" >a.json
    # inputs from the trace: its messages (rerank: but the query), or 1
    want_inputs=$(jq -s 'map(if .msgs then (.msgs | map(select(.[0] != "query")) | length) else 1 end) | add' $f.jsonl)
    expect_eq "$want_inputs" "$(jq .runs[0].inputs.inputs a.json)" "$api: inputs analyze counted"
    expect_eq "$(wc -l <$f.jsonl | tr -d ' ')" "$(jq .runs[0].inputs.ok a.json)" "$api: Ok requests"
    expect_eq "$(jq -s 'map(.[0]) | add' want)" "$(jq .runs[0].inputs.prompt_tokens a.json)" "$api: prompt tokens"
    "$LOADTRACE" analyze "$api.lt.zst" >a.txt
    expect_grep "inputs/s" a.txt
done
# their errors are classed as any request's
sim_start f --profile fast --faults 500=1
"$LOADTRACE" replay e.lt.zst --target "$SIM_URL" --api embeddings -o f.lt.zst >/dev/null 2>f.err
expect_status 3 $? "replay of embeddings that all fail"
sim_stop
expect_eq "http http http http" "$("$LOADTRACE" cat --no-header f.lt.zst | grep want_in | jq -r .err | xargs)" "a 500 is an http error"
finish
