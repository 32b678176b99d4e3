#!/bin/sh
# loadtrace sim with another tokenizer, as real servers have them: a small
# vocabulary (512 ids, like the llama.cpp test model that refused replay's
# ids) and pieces of one byte (several tokens per word). Counts are by hand:
# a word of L bytes is L tokens; ids are below 512; an id outside is a 400
# in llama.cpp's words; ids the server produced are accepted.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"

printf 'vocab = 512\npiece_bytes = 1\n' >"$T/small.profile"
start_sim tok --profile "$T/small.profile"

post /tokenize '{"prompt":"hello wide world"}' >"$T/t"
expect_eq 200 "$(status)" "/tokenize"
expect_eq 14 "$(jq .count "$T/t")" "5 + 4 + 5 one-byte pieces"
expect_eq 0 "$(jq '[.tokens[] | select(. >= 512 or . < 0)] | length' "$T/t")" "ids below 512"

# chat: 4 per message + content, + 3: 4 + 2 + 3 = 9; template ids below 512 too
post /tokenize '{"messages":[{"role":"user","content":"hi"}]}' >"$T/c"
expect_eq 9 "$(jq .count "$T/c")" "chat count with one-byte pieces"
expect_eq 0 "$(jq '[.tokens[] | select(. >= 512)] | length' "$T/c")" "chat ids below 512"

post /v1/completions '{"prompt":[1,2,600],"max_tokens":1}' >"$T/b"
expect_eq 400 "$(status)" "an id outside the vocabulary"
jq -r .error.message "$T/b" | grep -q "Prompt contains invalid tokens" || fail "message: $(cat "$T/b")"
jq -r .error.message "$T/b" | grep -q "prompt\[2\]" || fail "message names the id: $(cat "$T/b")"

ids=$(jq -c .tokens "$T/t")
post /v1/completions "{\"prompt\":$ids,\"max_tokens\":1}" >"$T/ok"
expect_eq 200 "$(status)" "ids the server produced"
expect_eq 14 "$(jq .usage.prompt_tokens "$T/ok")" "usage of the id prompt"
post /v1/completions '{"prompt":"hello wide world","max_tokens":1}' >"$T/ok"
expect_eq 14 "$(jq .usage.prompt_tokens "$T/ok")" "usage of the text prompt"

# A profile outside the ranges is refused at start.
printf 'piece_bytes = 5\n' >"$T/bad.profile"
timeout 10 "$LOADTRACE" sim --listen 127.0.0.1:0 --profile "$T/bad.profile" 2>"$T/bad.err" &&
    fail "piece_bytes = 5 accepted"
grep -q "piece_bytes must be 1 to 4" "$T/bad.err" || fail "bad profile: $(cat "$T/bad.err")"
stop_sim
finish
