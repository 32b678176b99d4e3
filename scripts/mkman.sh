#!/bin/sh
# Generate loadtrace(1) from the program's own --help texts, so the man page
# and --help can never disagree. usage: mkman.sh LOADTRACE VERSION > loadtrace.1
set -eu
LT="$1"; VERSION="$2"
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
