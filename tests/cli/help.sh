#!/bin/sh
# What a user meets first when they get a command wrong: `loadtrace help
# CMD` is CMD's --help; a mistyped option gets one line with the nearest
# option ("did you mean"), not the whole help; a mistyped command gets the
# nearest command. The shell completions offer exactly the options each
# command's --help lists (the same table the command parses with), and
# complete in a real bash (and parse in zsh, when it is installed).
set -u
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
cmds=$("$L" --help | sed -n '/^commands:/,$p' | tail -n +2 | awk '{ print $1 }')
[ -n "$cmds" ] || fail "no commands listed"

# --- help CMD
for c in $cmds; do
    "$L" help "$c" >"$T/help.$c" 2>"$T/help.$c.err"
    expect_status 0 $? "help $c"
    "$L" "$c" --help >"$T/own.$c"
    cmp -s "$T/help.$c" "$T/own.$c" || fail "help $c differs from $c --help"
done
expect_grep "^usage: loadtrace replay" "$T/help.replay"
"$L" help replya >"$T/h.out" 2>"$T/h.err"
expect_status 2 $? "help of an unknown command"
expect_grep "unknown command 'replya': did you mean 'replay'?" "$T/h.err"
"$L" replya >"$T/h.out" 2>"$T/h.err"
expect_status 2 $? "an unknown command"
expect_grep "did you mean 'replay'?" "$T/h.err"

# --- a mistyped option: one line, the nearest option, exit 2
"$L" replay x.lt.zst --target sim --sped 2 -o r.lt.zst >"$T/o.out" 2>"$T/o.err"
expect_status 2 $? "--sped"
expect_eq 1 "$(wc -l <"$T/o.err" | tr -d ' ')" "one line for a mistyped option"
expect_grep "unknown option --sped: did you mean --speed?" "$T/o.err"
expect_eq 0 "$(wc -c <"$T/o.out" | tr -d ' ')" "nothing on stdout"
"$L" analyze --hmtl x.html r.lt.zst 2>"$T/o.err"
expect_status 2 $? "--hmtl"
expect_grep "did you mean --html?" "$T/o.err"
"$L" synth --rtae=2 2>"$T/o.err"
expect_status 2 $? "--rtae=2"
expect_grep "unknown option --rtae: did you mean --rate?" "$T/o.err"
"$L" replay x.lt.zst --speed 2>"$T/o.err"
expect_status 2 $? "--speed without its value"
expect_grep "option --speed needs a value" "$T/o.err"
"$L" replay --s 2 x.lt.zst 2>"$T/o.err"
expect_status 2 $? "an ambiguous abbreviation"
expect_grep "option --s is ambiguous: .*--speed" "$T/o.err"
"$L" replay --zzzzzzzz x.lt.zst 2>"$T/o.err"
expect_status 2 $? "an option far from every other"
expect_grep "unknown option --zzzzzzzz (loadtrace help replay" "$T/o.err"
expect_no_grep "did you mean" "$T/o.err"

# --- completions: every option of each --help, and nothing else
"$L" completions bash >"$T/bash" || fail "completions bash"
"$L" completions zsh >"$T/zsh" || fail "completions zsh"
for c in $cmds; do
    [ "$c" = completions ] && continue
    # the options --help lists: those that begin a line
    "$L" "$c" --help | grep -oE -- '^ +(-[a-zA-Z],? +)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' |
        sort -u >"$T/want.$c"
    # every option the help mentions anywhere (some share a line)
    "$L" "$c" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$T/named.$c"
    # what bash offers after "loadtrace CMD --"
    bash -c '. "$1"; COMP_WORDS=(loadtrace "$2" --); COMP_CWORD=2; _loadtrace
             printf "%s\n" "${COMPREPLY[@]}"' sh "$T/bash" "$c" | sort -u >"$T/got.$c"
    comm -23 "$T/want.$c" "$T/got.$c" >"$T/missing.$c"
    [ -s "$T/missing.$c" ] && fail "bash completion of $c lacks $(tr '\n' ' ' <"$T/missing.$c")"
    comm -13 "$T/named.$c" "$T/got.$c" | grep -v -- '^--$' >"$T/extra.$c"
    [ -s "$T/extra.$c" ] && fail "bash completes $c options its --help does not list: $(tr '\n' ' ' <"$T/extra.$c")"
    for o in $(cat "$T/want.$c"); do
        grep -q -- "'$o[=']" "$T/zsh" || { fail "zsh completion lacks $c $o"; break; }
    done
done
got=$(bash -c '. "$1"; COMP_WORDS=(loadtrace replay --sp); COMP_CWORD=2; _loadtrace
               printf "%s\n" "${COMPREPLY[@]}"' sh "$T/bash")
expect_eq "--speed --spread" "$(echo $got)" "completing replay --sp"
got=$(bash -c '. "$1"; COMP_WORDS=(loadtrace rep); COMP_CWORD=1; _loadtrace
               printf "%s\n" "${COMPREPLY[@]}"' sh "$T/bash")
expect_eq "replay" "$got" "completing a command"
got=$(bash -c '. "$1"; COMP_WORDS=(loadtrace help ana); COMP_CWORD=2; _loadtrace
               printf "%s\n" "${COMPREPLY[@]}"' sh "$T/bash")
expect_eq "analyze" "$got" "completing help's command"
touch "$T/zz-trace.lt.zst"
got=$(cd "$T" && bash -c '. "$1"; COMP_WORDS=(loadtrace replay --target sim -o zz-); COMP_CWORD=5
      _loadtrace; printf "%s\n" "${COMPREPLY[@]}"' sh "$T/bash")
expect_eq "zz-trace.lt.zst" "$got" "an option's value completes as a file"
if command -v zsh >/dev/null 2>&1; then
    zsh -n "$T/zsh" || fail "the zsh script does not parse"
fi
finish
