# Helpers for the command tests (sourced). Each expect_* prints what was
# wrong and counts a failure; `finish` exits non-zero if anything failed.
# T is a fresh scratch directory for the test.
T="${LT_TMP:?LT_TMP not set}"
rm -rf "$T" && mkdir -p "$T"
: "${LOADTRACE:?LOADTRACE not set}" "${LT_SRC:?LT_SRC not set}"
LT_FAILS=0

fail() {
    echo "FAIL: $*" >&2
    LT_FAILS=$((LT_FAILS + 1))
}
expect_status() { # want got what
    [ "$1" = "$2" ] || fail "$3: exit status $2, expected $1"
}
expect_eq() { # want got what
    [ "$1" = "$2" ] || fail "$3: got '$2', expected '$1'"
}
expect_grep() { # pattern file
    grep -q -- "$1" "$2" || { fail "'$1' not found in $2:"; sed 's/^/    /' "$2" >&2; }
}
expect_no_grep() { # pattern file
    if grep -q -- "$1" "$2"; then fail "'$1' unexpectedly found in $2"; fi
}
# Compare two numbers: |a-b| <= tol (absolute)
expect_near() { # want got tol what
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }' ||
        fail "$4: got $2, expected $1 +- $3"
}
need_sample() { # file: samples must be shipped; never skip silently
    [ -f "$LT_SAMPLES/$1" ] || { echo "FAIL: sample trace $LT_SAMPLES/$1 is missing" >&2; exit 1; }
}
finish() {
    if [ "$LT_FAILS" -ne 0 ]; then
        echo "$LT_FAILS check(s) failed" >&2
        exit 1
    fi
    echo "ok"
    exit 0
}

# asan_build BIN: BIN was built with AddressSanitizer, whose shadow memory,
# quarantine and slower transport some tests must not judge.
asan_build() { ldd "$1" 2>/dev/null | grep -q libasan; }
