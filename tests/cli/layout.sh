#!/bin/sh
# The architecture rules the code must keep (ARCHITECTURE.md). The build
# enforces the layering (each target sees only the folders it may use, see
# lt_sees in CMakeLists.txt); this test says the same rule as a table, so a
# header no target compiles is held to it too, and bans the functions of
# docs/CODE_STYLE.md; no two source files share a name, each folder's
# README maps its files, and only the test harness (tests/lib/servers.sh)
# starts servers on a --port-file.
set -u
cd "${LT_SRC:?}" || exit 1
fail=0
# folder: the folders it may include besides itself
rules='base:
traces:base
workload:base traces
wire:base traces
plan:base traces
metrics:base traces
capture:base traces wire
replay:base traces wire plan metrics
sim:base traces wire plan metrics
analyze:base traces workload metrics
experiments:base traces workload wire plan metrics replay sim analyze'
all="base traces workload wire plan metrics capture replay sim analyze experiments cli"
echo "$rules" | while IFS=: read -r dir allowed; do
    [ -d "$dir" ] || continue
    for other in $all; do
        [ "$other" = "$dir" ] && continue
        case " $allowed " in *" $other "*) continue ;; esac
        hits=$(grep -rn "#include \"$other/" "$dir" --include='*.c' --include='*.h' 2>/dev/null)
        if [ -n "$hits" ]; then
            echo "layout: $dir/ must not include $other/:"
            echo "$hits"
            exit 1
        fi
    done
done || fail=1
# A folder's *_internal.h headers are for that folder (and its tests) only.
for dir in $all; do
    [ -d "$dir" ] || continue
    hits=$(grep -rn "#include \"[a-z]*/[a-z_]*_internal\.h\"" $all --include='*.c' --include='*.h' 2>/dev/null |
        grep -v "^$dir/[^:]*:[0-9]*:#include \"$dir/")
    hits=$(echo "$hits" | grep "#include \"$dir/" || true)
    if [ -n "$hits" ]; then
        echo "layout: $dir/'s internal headers are included from outside $dir/:"
        echo "$hits"
        fail=1
    fi
done
# Names show their tier (docs/CODE_STYLE.md "Names come in two tiers"):
# every function and variable a folder's *_internal.h declares (or defines
# inline) starts with lt__, and no other header declares an lt__ name.
# Types are not held to it (struct lt_replay is public, and defined in
# replay_internal.h).
names_of='undef $/; $_ = <>; s{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{^#.*?(?<!\\)$}{}gms;
while (/^(?!\s)(?!typedef)(?!extern)[^;{}()]*?\b([A-Za-z_]\w*)\s*\(/mg) { print "$1\n" }
while (/^extern\b([^;]*);/mg) { my $d = $1; $d =~ s/\[[^\]]*\]//g;
    print "$_\n" for map { /([A-Za-z_]\w*)\s*$/ ? $1 : () } split /,/, $d }'
hits=$(find $all -name '*_internal.h' | sort | while read -r h; do
    perl -e "$names_of" "$h" | grep -v '^lt__' | sed "s|^|$h: |"
done)
if [ -n "$hits" ]; then
    echo "layout: names declared in *_internal.h that do not start with lt__:"
    echo "$hits"
    fail=1
fi
hits=$(find $all -name '*.h' ! -name '*_internal.h' | sort | while read -r h; do
    perl -e "$names_of" "$h" | grep '^lt__' | sed "s|^|$h: |"
done)
if [ -n "$hits" ]; then
    echo "layout: lt__ names (folder-internal) declared in a public header:"
    echo "$hits"
    fail=1
fi
# Lifecycle pairs match (docs/CODE_STYLE.md "Lifecycle words"): in the
# public headers, every lt_S_open has its lt_S_close and every lt_S_new its
# lt_S_free, and the other way round.
hits=$(find $all -name '*.h' ! -name '*_internal.h' | sort | while read -r h; do
    perl -e "$names_of" "$h"
done | sort -u | awk '
    { have[$0] = 1; name[NR] = $0 }
    END {
        n = split("open:close new:free close:open free:new", pair, " ")
        for (i = 1; i <= NR; i++)
            for (k = 1; k <= n; k++) {
                split(pair[k], w, ":")
                suf = "_" w[1]
                if (length(name[i]) <= length(suf) ||
                    substr(name[i], length(name[i]) - length(suf) + 1) != suf)
                    continue
                stem = substr(name[i], 1, length(name[i]) - length(suf))
                if (!((stem "_" w[2]) in have))
                    print name[i] " has no " stem "_" w[2]
            }
    }')
if [ -n "$hits" ]; then
    echo "layout: lifecycle words that do not pair:"
    echo "$hits"
    fail=1
fi
banned='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi)[[:space:]]*\('
hits=$(grep -rnE "$banned" $all --include='*.c' --include='*.h' 2>/dev/null)
if [ -n "$hits" ]; then
    echo "layout: banned functions (see docs/CODE_STYLE.md):"
    echo "$hits"
    fail=1
fi
# No two source files share a name, anywhere in the tree (tests and bench
# too), so that a name says which file is meant (in messages, docs and a
# debugger's backtrace). In a checkout: the files git has or would add.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    srcs=$(git ls-files -co --exclude-standard -- '*.c' '*.h')
else
    srcs=$(find $all tests bench -name '*.[ch]' 2>/dev/null)
fi
dups=$(echo "$srcs" | sed 's|.*/||' | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "layout: source files that share a name:"
    for d in $dups; do echo "$srcs" | grep "/$d\$\|^$d\$"; done
    fail=1
fi
# Every code folder has a README.md whose file table (its rows' first
# column: `a.c`, or `a.h/.c` for both) names each .c and .h of the folder,
# and no file the folder does not have, so the map cannot drift from the
# tree.
for dir in $all; do
    [ -d "$dir" ] || continue
    files=$(ls "$dir" | grep -E '\.(c|h)$')
    [ -n "$files" ] || continue
    if [ ! -f "$dir/README.md" ]; then
        echo "layout: $dir/ has no README.md"
        fail=1
        continue
    fi
    named=$(grep '^|' "$dir/README.md" | awk -F'|' '{ print $2 }' | grep -oE '`[^`]+`' |
        tr -d '`' | sed -E 's#^(.*)\.([ch])/\.([ch])$#\1.\2 \1.\3#' | tr ' ' '\n' | grep .)
    for f in $files; do
        echo "$named" | grep -qxF "$f" ||
            { echo "layout: $dir/README.md's file table does not name $f"; fail=1; }
    done
    for f in $(echo "$named" | grep -E '\.(c|h)$'); do
        [ -f "$dir/$f" ] ||
            { echo "layout: $dir/README.md's file table names $f, which $dir/ has not"; fail=1; }
    done
done
# Tests and bench scripts start servers through one harness,
# tests/lib/servers.sh, which alone hands a server its --port-file.
hits=$(grep -rnE -- '--port-file +["$]' tests bench --include='*.sh' 2>/dev/null |
    grep -v '^tests/lib/servers\.sh:')
if [ -n "$hits" ]; then
    echo "layout: servers started outside tests/lib/servers.sh:"
    echo "$hits"
    fail=1
fi
# replay on the command line parses and prints: the capacity search, the
# virtual engine and the fleets are experiments/'s (ARCHITECTURE.md), so
# cli/ includes neither the search's rules nor the virtual engine, and no
# function in cli/ is over 100 lines.
hits=$(grep -nE '#include "(plan/plan_search|sim/sim_virtual)\.h"' cli/*.c cli/*.h 2>/dev/null)
if [ -n "$hits" ]; then
    echo "layout: cli/ composes what experiments/ should (the search, the virtual engine):"
    echo "$hits"
    fail=1
fi
hits=$(awk '/^\{$/ { s = FNR } /^\}/ && s { if (FNR - s + 1 > 100) print FILENAME ":" s ": " \
    FNR - s + 1 " lines"; s = 0 }' cli/*.c)
if [ -n "$hits" ]; then
    echo "layout: functions over 100 lines in cli/:"
    echo "$hits"
    fail=1
fi
[ $fail = 0 ] &&
    echo "layout: dependency rule, internal names, lifecycle pairs, banned functions," \
        "file names, folder READMEs, one server harness and a thin cli/: ok"
exit $fail
