#!/bin/sh
# Generate loadtrace(1) from the program's own --help texts, so the man page
# and --help can never disagree; its EXAMPLES are the README's recipes, so
# the two cannot drift apart either.
# usage: mkman.sh LOADTRACE VERSION README.md > loadtrace.1
set -eu
LT="$1"; VERSION="$2"; README="${3:-}"
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }

cat <<EOF2
.TH LOADTRACE 1 "" "loadtrace $VERSION" "User Commands"
.SH NAME
loadtrace \- record, replay and analyze LLM inference traffic
.SH SYNOPSIS
.B loadtrace
.I command
[\fIoptions\fR]
.SH DESCRIPTION
loadtrace records real LLM inference traffic (capture), imports public traces,
synthesizes workloads, replays them against any OpenAI-compatible server or its
built-in simulator, and analyzes the results with one honest set of metric
definitions. Every command answers \fB\-\-help\fR; the sections below are
those texts.
.SH COMMANDS
.nf
EOF2
"$LT" --help | sed -n '/^commands:/,$p' | tail -n +2 | esc
echo ".fi"
for cmd in $("$LT" --help | sed -n '/^commands:/,$p' | tail -n +2 | awk '{print $1}'); do
    echo ".SH \"LOADTRACE $(echo "$cmd" | tr a-z A-Z)\""
    echo ".nf"
    "$LT" "$cmd" --help | esc
    echo ".fi"
done
if [ -n "$README" ]; then
    echo ".SH EXAMPLES"
    # Each recipe of the README's "Everyday recipes": the paragraph that
    # says what it answers, then its command lines. Markdown links and
    # backquotes are dropped; lines are escaped as above.
    awk '
        /^## Everyday recipes/ { on = 1; next }
        on && /^## / { exit }
        !on { next }
        END { if (!code) flush() }
        /^```/ { if (code) { print ".fi"; code = 0 } else { flush(); print ".nf"; code = 1 }; next }
        code { print "    " e($0); next }
        /^$/ { next }
        { para = para (para == "" ? "" : " ") $0 }
        function flush() {
            if (para == "") return
            while (match(para, /\[[^]]*\]\([^)]*\)/)) {
                t = substr(para, RSTART + 1, RLENGTH - 1); sub(/\].*/, "", t)
                para = substr(para, 1, RSTART - 1) t substr(para, RSTART + RLENGTH)
            }
            gsub(/`/, "", para)
            print ".PP"; print e(para); para = ""
        }
        function e(t) { gsub(/\\/, "\\e", t); if (t ~ /^[.\047]/) t = "\\&" t; return t }
    ' "$README"
fi
cat <<'EOF2'
.SH FILES
Trace and results files are zstd-compressed msgpack (.lt.zst); see
docs/trace-format.md in the source tree.
.SH EXIT STATUS
0 success, 1 the work failed (bad input, unreachable server, ...), 2 bad usage.
.SH SEE ALSO
.BR zstd (1),
.BR gnuplot (1)
EOF2
