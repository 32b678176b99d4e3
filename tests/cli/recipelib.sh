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
#   true_checks RESULTS FILE...: every CHECK of a rate the FILEs print is
#       true of RESULTS: that run's sends, (n - 1) over their span, are
#       more than 5 % off its scheds' (jq), as a client a loaded machine
#       starves can be; any other CHECK, or a rate one the file does not
#       bear out, is a failure naming $what.
#   no_false_alarm RESULTS [FILE...]: no OVERLOADED line in out.txt, err.txt
#       or FILE, and each CHECK there true of RESULTS (true_checks).
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
true_checks() { # results file...
    _tc_res=$1
    shift
    # a line of text or of HTML (its tags dropped)
    for _tc_run in $(grep -h -o "CHECK run [0-9]* .*" "$@" 2>/dev/null | sed 's/^CHECK run \([0-9]*\) .*/\1/' | sort -u); do
        _tc_line=$(grep -h -o "CHECK run $_tc_run .*" "$@" | sed 's/<[^>]*>//g' | head -1)
        case $_tc_line in
        *"req/s sent of"*) ;;
        *" in flight of "* | *" in flight on average of "*)
            # closed loop: the mean in flight from the send that reached the
            # level to the last send, from the results' [sent, end)
            _tc_c=$(printf '%s\n' "$_tc_line" | sed -n 's/.* in flight \(on average \)*of \([0-9.]*\) asked.*/\2/p')
            "$LOADTRACE" cat --no-header "$_tc_res" | jq -s -e --argjson r "$_tc_run" --argjson c "${_tc_c:-0}" '
                [.[] | select(.rec == null and .run == $r and .sent != null)] as $q |
                ($q | map(.sent) | sort) as $s | ($s | length) as $n |
                $n > $c and $c > 0 and ($s[($c | floor) - 1]) as $a | ($s[-1]) as $b | $b > $a and
                (([$q[] | ([.end // $b, $b] | min) - ([.sent, $a] | max) | select(. > 0)] | add // 0) / ($b - $a)) as $m |
                (($m / $c) - 1 | fabs) > 0.05' >/dev/null ||
                fail "$what: a false CHECK (the file holds the level): $_tc_line"
            continue ;;
        *) fail "$what: a CHECK of neither rate nor level: $_tc_line"; continue ;;
        esac
        "$LOADTRACE" cat --no-header "$_tc_res" | jq -s -e --argjson r "$_tc_run" '
            [.[] | select(.rec == null and .run == $r and .sent != null)] | length as $n |
            (map(.sent) | (max - min)) as $ss | (map(.sched) | (max - min)) as $qs |
            $n > 2 and $ss > 0 and $qs > 0 and ((($n - 1) / $ss) / (($n - 1) / $qs) - 1 | fabs) > 0.05' \
            >/dev/null || fail "$what: a false CHECK (the file's sends keep their schedule): $_tc_line"
    done
}
no_false_alarm() { # results [file...]
    _nf_res=$1
    shift
    if grep -h "OVERLOADED" out.txt err.txt "$@" 2>/dev/null; then fail "$what: a false OVERLOADED"; fi
    true_checks "$_nf_res" out.txt err.txt "$@"
}
