#!/bin/sh
# `cmake --install` into a staging prefix: the binary, the man page, the
# gnuplot templates and the bundled traces land in the usual places, and
# the installed binary finds its data there (not in the source tree).
set -u
. "$LT_SRC/tests/cli/lib.sh"
B=$(dirname "$LOADTRACE")
cmake --install "$B" --prefix "$T/stage" >"$T/install.log" 2>&1
expect_status 0 $? "cmake --install"
S="$T/stage"
[ -x "$S/bin/loadtrace" ] || fail "no $S/bin/loadtrace"
[ -s "$S/share/man/man1/loadtrace.1" ] || fail "no man page"
[ -s "$S/share/loadtrace/plots/throughput.gp" ] || fail "no gnuplot templates"
[ -s "$S/share/loadtrace/samples/AzureLLMInferenceTrace_conv.csv" ] || fail "no samples"
[ -s "$S/share/loadtrace/samples/LICENSE-CC-BY-4.0.txt" ] || fail "no sample licenses"
man -l "$S/share/man/man1/loadtrace.1" 2>/dev/null | grep -q "LOADTRACE REPLAY" ||
    grep -q 'LOADTRACE REPLAY' "$S/share/man/man1/loadtrace.1" || fail "man page lacks replay"
# The shell completions, where bash-completion and zsh look, and what the
# program itself writes; the man page's EXAMPLES are the README's recipes.
[ -s "$S/share/bash-completion/completions/loadtrace" ] || fail "no bash completion"
[ -s "$S/share/zsh/site-functions/_loadtrace" ] || fail "no zsh completion"
"$S/bin/loadtrace" completions bash | cmp -s - "$S/share/bash-completion/completions/loadtrace" ||
    fail "the installed bash completion is not the program's"
"$S/bin/loadtrace" completions zsh | cmp -s - "$S/share/zsh/site-functions/_loadtrace" ||
    fail "the installed zsh completion is not the program's"
grep -q '^\.SH EXAMPLES' "$S/share/man/man1/loadtrace.1" || fail "man page lacks EXAMPLES"
sed -n '/^## Everyday recipes/,/^## How it compares/p' "$LT_SRC/README.md" | grep '^loadtrace ' |
    while IFS= read -r line; do
        grep -qF -- "    $(printf '%s' "$line" | sed 's/\\/\\e/g')" "$S/share/man/man1/loadtrace.1" ||
            echo "$line"
    done >"$T/noexample"
[ -s "$T/noexample" ] && fail "README recipes not in the man page's EXAMPLES: $(cat "$T/noexample")"
# The installed program, run from elsewhere, finds its bundled traces
# beside itself and renders charts from its compiled-in templates.
cd "$T" || exit 1
"$S/bin/loadtrace" demo --out "$T/d" --tokens 16 --slice 2s >out.txt 2>err.txt
expect_status 0 $? "installed demo"
expect_grep "from $S/bin/../share/loadtrace/samples/AzureLLMInferenceTrace_conv.csv" err.txt
[ -s "$T/d/sweep/throughput.gp" ] || fail "installed demo wrote no chart script"
finish
