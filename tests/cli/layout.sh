#!/bin/sh
# The architecture rules the code must keep (ARCHITECTURE.md). The build
# enforces the layering (each target sees only the folders it may use, see
# lt_sees in CMakeLists.txt); this test says the same rule as a table, so a
# header no target compiles is held to it too, and bans the functions of
# docs/CODE_STYLE.md; no two source files share a name, and only the test
# harness (tests/lib/servers.sh) starts servers on a --port-file.
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
banned='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi)[[:space:]]*\('
hits=$(grep -rnE "$banned" $all --include='*.c' --include='*.h' 2>/dev/null)
if [ -n "$hits" ]; then
    echo "layout: banned functions (see docs/CODE_STYLE.md):"
    echo "$hits"
    fail=1
fi
# No two source files share a name, so that a name says which file is meant
# (in messages, docs and a debugger's backtrace).
dups=$(find $all -name '*.[ch]' 2>/dev/null | sed 's|.*/||' | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "layout: source files that share a name:"
    for d in $dups; do find $all -name "$d"; done
    fail=1
fi
# Tests and bench scripts start servers through one harness,
# tests/lib/servers.sh, which alone hands a server its --port-file.
hits=$(grep -rnE -- '--port-file +["$]' tests bench --include='*.sh' 2>/dev/null |
    grep -v '^tests/lib/servers\.sh:')
if [ -n "$hits" ]; then
    echo "layout: servers started outside tests/lib/servers.sh:"
    echo "$hits"
    fail=1
fi
[ $fail = 0 ] && echo "layout: dependency rule, banned functions, file names and one server harness: ok"
exit $fail
