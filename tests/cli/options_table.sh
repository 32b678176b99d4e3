#!/bin/sh
# A command written as one options table (cli/cli_opts.h) has one list of
# options: what getopt accepts, what `help CMD` lists (in its order, with
# a value word exactly where the option takes a value, with the short
# aliases it has) and what the bash and zsh completions offer are the
# same, in the same order. Checked from outside, by running the binary:
# getopt's options are found by probing every first letter (unknown,
# ambiguous with its candidates named, or one option) and every short
# letter, so an option that getopt takes and the help leaves out fails.
# Every command that is a table is here: a command converted is added.
set -u
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
export LOADTRACE_DRY_RUN=1 # nothing is read or written: options only
cd "$T" || exit 1
"$L" completions bash >bash || fail "completions bash"
"$L" completions zsh >zsh || fail "completions zsh"

for c in cat export import info compare analyze capture synth sim sweep demo replay; do
    "$L" help "$c" >help.$c || fail "help $c"
    # the options the help lists, in its order: those that begin a line
    # (a second form of one, as export's "--to jsonl", counted once)
    grep -oE -- '^  (-[a-zA-Z], )?--[a-z][a-z0-9-]*' help.$c | grep -oE -- '--[a-z0-9-]+' |
        awk '!seen[$0]++' >order.$c
    [ -s order.$c ] || { fail "$c: help lists no options"; continue; }
    # ... those shown with a value word after them, and those whose value
    # may be left out (--opt[=V])
    grep -oE -- '^  (-[a-zA-Z], )?--[a-z][a-z0-9-]* [^ ]' help.$c |
        grep -oE -- '--[a-z0-9-]+' | awk '!seen[$0]++' | sort >valued.$c
    grep -oE -- '^  (-[a-zA-Z], )?--[a-z][a-z0-9-]*\[=' help.$c |
        grep -oE -- '--[a-z0-9-]+' | sort -u >optional.$c
    # ... and the short aliases, of a long option or alone (sim's -o)
    grep -oE -- '^  -[a-zA-Z](, --| )' help.$c | cut -c4 | sort >short.$c

    # bash: the opts of "CMD)" in its order, and its valued list
    awk -v c="    $c)" '$0 == c { on = 1; next } on && /opts=/ { sub(/.*opts=./, ""); sub(/.$/, "");
        print; exit }' bash | tr ' ' '\n' | grep -v '^--$' | awk '!seen[$0]++' >bash.$c
    cmp -s order.$c bash.$c ||
        fail "$c: bash completes $(tr '\n' ' ' <bash.$c), help lists $(tr '\n' ' ' <order.$c)"
    awk -v c="    $c)" '$0 == c { on = 1; next } on && /valued=/ { sub(/.*valued=./, "");
        sub(/.$/, ""); print; exit }' bash | tr ' ' '\n' | grep . | sort >bvalued.$c
    cmp -s valued.$c bvalued.$c ||
        fail "$c: bash's valued options $(tr '\n' ' ' <bvalued.$c), help's $(tr '\n' ' ' <valued.$c)"
    # zsh: the same options in the same order
    awk -v c="    $c)" '$0 == c { on = 1; next } on && /;;/ { exit } on' zsh |
        grep -oE -- "'--[a-z0-9-]+" | cut -c2- | awk '!seen[$0]++' >zsh.$c
    cmp -s order.$c zsh.$c ||
        fail "$c: zsh completes $(tr '\n' ' ' <zsh.$c), help lists $(tr '\n' ' ' <order.$c)"

    # getopt takes every listed option by its full name, wants a value
    # exactly for those the help shows with one
    for o in $(cat order.$c); do
        [ "$o" = --help ] && continue
        "$L" "$c" "$o" >out 2>err
        if grep -qx -- "$o" optional.$c; then
            expect_no_grep "option $o needs a value" err
            "$L" "$c" "$o=x" >out 2>err
            expect_no_grep "option $o takes no value" err
        elif grep -qx -- "$o" valued.$c; then
            expect_grep "option $o needs a value" err
        else
            "$L" "$c" "$o=x" >out 2>err
            expect_grep "option $o takes no value" err
        fi
        expect_no_grep "unknown option" err
    done
    # getopt's options by first letter: none, one, or the ambiguous ones
    for l in a b c d e f g h i j k l m n o p q r s t u v w x y z; do
        want=$(grep -c -- "^--$l" order.$c)
        "$L" "$c" "--$l" v >out 2>err
        if grep -q "unknown option --$l " err; then
            got=0
        elif grep -q "option --$l is ambiguous" err; then
            grep -oE -- '--[a-z][a-z0-9-]+' err | grep -v -- "^--$l\$" | sort >amb
            grep -- "^--$l" order.$c | sort | cmp -s - amb ||
                fail "$c: getopt's options beginning with $l: $(tr '\n' ' ' <amb)"
            got=$want
        else
            got=1
        fi
        expect_eq "$want" "$got" "$c: options beginning with --$l that getopt takes"
    done
    # getopt's short options: the ones the help gives, and -h
    : >gshort.$c
    for l in a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O \
        P Q R S T U V W X Y Z; do
        "$L" "$c" "-$l" v >out 2>err
        grep -q "option -$l is unknown" err || echo "$l" >>gshort.$c
    done
    sort gshort.$c | cmp -s short.$c - ||
        fail "$c: getopt's short options $(sort gshort.$c | tr '\n' ' '), help's $(tr '\n' ' ' <short.$c)"
done
finish
