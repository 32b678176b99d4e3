#!/bin/sh
# The architecture rules the code must keep:
#  - traces/ is the foundation and includes nothing else of ours;
#  - capture/, replay/, sim/ and analyze/ include traces/ and never each other;
#  - banned functions (docs/CODE_STYLE.md) appear nowhere.
set -u
cd "${LT_SRC:?}" || exit 1
fail=0
for dir in traces capture replay sim analyze; do
    [ -d "$dir" ] || continue
    for other in capture replay sim analyze cli; do
        [ "$other" = "$dir" ] && continue
        hits=$(grep -rn "#include \"$other/" "$dir" --include='*.c' --include='*.h' 2>/dev/null)
        if [ -n "$hits" ]; then
            echo "layout: $dir/ must not include $other/:"
            echo "$hits"
            fail=1
        fi
    done
done
banned='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi)[[:space:]]*\('
hits=$(grep -rnE "$banned" traces capture replay sim analyze cli --include='*.c' --include='*.h' 2>/dev/null)
if [ -n "$hits" ]; then
    echo "layout: banned functions (see docs/CODE_STYLE.md):"
    echo "$hits"
    fail=1
fi
[ $fail = 0 ] && echo "layout: dependency rule and banned functions: ok"
exit $fail
