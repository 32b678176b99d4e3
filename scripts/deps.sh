#!/bin/sh
# Make sure the Debian packages loadtrace builds and tests with are present.
# As root with apt, installs what is missing; otherwise prints the exact
# apt-get line and fails, so `make` stops before a confusing build error.
set -eu

PKGS="build-essential cmake pkg-config libzstd-dev libmsgpack-dev libcurl4-openssl-dev \
libmicrohttpd-dev libjansson-dev libyaml-dev libcmocka-dev gnuplot-nox zstd curl gawk jq python3 python3-jsonschema \
libopenmpi-dev openmpi-bin libncurses-dev tmux strace libpng-dev libjpeg62-turbo-dev"
if [ "${1:-}" = "--ci" ]; then
    # What the sanitizer and fuzz runs of .ci/run need on top, and the
    # browser the HTML reports are opened in (tests/analyze/browser.sh,
    # driven by node; skipped, and said so, where they are missing).
    PKGS="$PKGS clang libclang-rt-14-dev chromium nodejs"
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    exit 0
fi
echo "loadtrace needs these Debian packages; install them with:" >&2
echo "    sudo apt-get install$missing" >&2
exit 1
