# Helpers for the recipe tests (sourced after tests/cli/lib.sh): a
# command line is taken from a document's code blocks (README.md or a
# docs/ page), never copied into the test, so a recipe that changes in the
# text is the recipe that runs.
#
#   doc_recipe DOC PATTERN: the one command line of DOC's code blocks that
#       matches PATTERN (a `$ ` prompt dropped, lines continued with `\`
#       joined); a failure, and status 1, unless exactly one matches.
#   recipe PATTERN: doc_recipe README.md PATTERN.
#   run LINE [extra options]: LINE with loadtrace as the binary under test,
#       http://127.0.0.1:8000 and :8001 as the sims SIM_A and SIM_B, and
#       RUN_SED (a sed script, if set) applied; a trailing `# comment`
#       dropped; its output in out.txt and err.txt, its status returned.
#   no_alarm [FILE...]: no CHECK or OVERLOADED line in out.txt, err.txt or
#       FILE (a failure naming $what); no_check: no CHECK line only.
doc_blocks() { # doc
    awk '/^```/ { b = !b; next }
         b { sub(/^\$ /, ""); if (c != "") { $0 = c " " $0; c = "" }
             if (sub(/[[:space:]]*\\$/, "")) { c = $0; next } print }' "$LT_SRC/$1"
}
doc_recipe() { # doc pattern
    _r=$(doc_blocks "$1" | grep -E -- "$2")
    [ "$(printf '%s\n' "$_r" | grep -c .)" = 1 ] ||
        { fail "not one line of $1 matches '$2': $_r"; return 1; }
    printf '%s\n' "$_r"
}
recipe() { doc_recipe README.md "$1"; }
stamp() { [ -n "${LT_RECIPES_TIMES:-}" ] && echo "$(date +%s) $*" >&2; return 0; }
run() { # line [extra options]
    [ -n "$1" ] || { fail "${what:-run}: no command line"; return 1; }
    _line=$(printf '%s\n' "$1" | sed -e 's/[[:space:]]#.*$//' -e "s|^loadtrace |\"\$L\" |" \
        -e "s/| loadtrace /| \"\$L\" /g" \
        -e "s|http://127.0.0.1:8000|${SIM_A:-}|g" -e "s|http://127.0.0.1:8001|${SIM_B:-}|g" \
        -e "s/| head$/| head -n 10/" -e "${RUN_SED:-}")
    shift
    stamp "$_line $*"
    [ -n "$_line" ] || { fail "${what:-run}: the line did not read: $1"; return 1; }
    eval "$_line $*" >out.txt 2>err.txt
}
no_alarm() { # [file...]: what
    if grep -h "CHECK\|OVERLOADED" out.txt err.txt "$@" 2>/dev/null; then fail "$what: a false alarm"; fi
}
no_check() { # [file...]: what
    if grep -h "CHECK" out.txt err.txt "$@" 2>/dev/null; then fail "$what: a false CHECK"; fi
}
