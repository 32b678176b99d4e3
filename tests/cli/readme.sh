#!/bin/sh
# Every `loadtrace ...` command line in README.md's code blocks must parse:
# each runs with LOADTRACE_DRY_RUN=1 (options parsed and checked, no work
# done) and must exit 0. So the README cannot rot as options change.
set -u
. "$LT_SRC/tests/cli/lib.sh"
n=0
awk '/^```/ { inblock = !inblock; next } inblock && /^(mpirun .*)?loadtrace / { print }' \
    "$LT_SRC/README.md" >"$T/lines"
while IFS= read -r line; do
    n=$((n + 1))
    # Drop a trailing comment and any pipe after the command.
    cmd=$(printf '%s\n' "$line" | sed -e 's/[[:space:]]*#.*$//' -e 's/[[:space:]]*|.*$//' \
        -e 's/^mpirun .*loadtrace /loadtrace /' -e 's/^loadtrace //')
    # shellcheck disable=SC2086
    (cd "$T" && LOADTRACE_DRY_RUN=1 OPENAI_API_KEY=dry-run "$LOADTRACE" $cmd >"$T/out" 2>&1)
    rc=$?
    [ $rc = 0 ] || { fail "README line does not parse (exit $rc): $line"; sed 's/^/    /' "$T/out" >&2; }
done <"$T/lines"
[ $n -ge 5 ] || fail "only $n command lines found in README.md"
echo "$n README command lines parse"
finish
