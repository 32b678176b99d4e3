#!/bin/sh
# A damaged results file goes back into one that analyze reads whole:
# `cat --salvage -o` of a results file written by a real replay against the
# sim, with one byte flipped, keeps exactly the values of the intact frames
# (which zstd itself, frame by frame, says are intact), its header counts
# what was skipped, and analyze of the copy gives the figures of those
# frames. The input is never overwritten. Then the same with the frame
# that holds the run record damaged: the copy is still analyzed.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
command -v zstd >/dev/null || fail "zstd (the command) is needed"

# about 3 s of replay: the results writer closes a frame every second
"$L" synth --arrivals constant --rate 100 --requests 300 --in fixed:16 --out fixed:4 -q \
    -o "$T/t.lt.zst" || fail "synth"
start_sim s --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/ok.lt.zst" -q --no-summary
expect_status 0 $? "replay"
stop_sim

# The frames of a file: one piece per zstd frame (cut at the magic number).
split_frames() { # file dir
    mkdir -p "$2"
    LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$1" | cut -d: -f1 >"$2/offs"
    _size=$(wc -c <"$1")
    echo "$_size" >>"$2/offs"
    _k=0
    _prev=
    while read -r _o; do
        if [ -n "$_prev" ]; then
            tail -c +$((_prev + 1)) "$1" | head -c $((_o - _prev)) >"$2/$(printf %04d $_k)"
            _k=$((_k + 1))
        fi
        _prev=$_o
    done <"$2/offs"
}

# The intact frames of file, by zstd's own check, joined: what salvage must
# keep, read by the strict reader.
intact_frames() { # file dir out
    split_frames "$1" "$2"
    : >"$3"
    for f in "$2"/0*; do
        zstd -q -t "$f" 2>/dev/null && cat "$f" >>"$3"
    done
}

check_repair() { # name byte-offset-in-frame frame-index
    cp "$T/ok.lt.zst" "$T/$1.lt.zst"
    off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$T/$1.lt.zst" | sed -n "$3p" | cut -d: -f1)
    [ -n "$off" ] || fail "$1: no frame $3"
    printf 'Z' | dd of="$T/$1.lt.zst" bs=1 seek=$((off + $2)) conv=notrunc 2>/dev/null
    cmp -s "$T/ok.lt.zst" "$T/$1.lt.zst" && fail "$1: not damaged"
    cp "$T/$1.lt.zst" "$T/$1.before"
    intact_frames "$T/$1.lt.zst" "$T/$1.frames" "$T/$1.hand.lt.zst"
    n_frames=$(($(wc -l <"$T/$1.frames/offs") - 1))
    n_intact=$(for f in "$T/$1.frames"/0*; do zstd -q -t "$f" 2>/dev/null && echo ok; done | wc -l)
    expect_eq $((n_frames - 1)) "$n_intact" "$1: zstd finds exactly one damaged frame"
    "$L" cat --no-header "$T/$1.hand.lt.zst" >"$T/$1.want.jsonl" || fail "$1: the intact frames joined are not readable"

    "$L" cat --salvage -o "$T/$1.fixed.lt.zst" "$T/$1.lt.zst" 2>"$T/$1.err"
    expect_status 1 $? "$1: cat --salvage -o (something was skipped)"
    expect_grep "skipped 1 damaged frames" "$T/$1.err"
    cmp -s "$T/$1.lt.zst" "$T/$1.before" || fail "$1: the damaged input was changed"
    # the copy reads whole, strictly, and holds exactly the intact values
    "$L" cat --no-header "$T/$1.fixed.lt.zst" >"$T/$1.got.jsonl"
    expect_status 0 $? "$1: cat of the repaired copy"
    cmp -s "$T/$1.want.jsonl" "$T/$1.got.jsonl" || fail "$1: the copy does not hold the intact frames' values"
    expect_eq 1 "$("$L" cat "$T/$1.fixed.lt.zst" | head -1 | jq .salvaged_frames)" "$1: the header counts the damaged frame"
    "$L" analyze --json "$T/$1.fixed.lt.zst" >"$T/$1.a.json" 2>"$T/$1.aerr"
    expect_status 0 $? "$1: analyze of the repaired copy"
    # figures against the intact frames, counted with jq
    want=$(jq -s -c '[.[] | select(.rec == null)] | {results: length, ok: ([.[] | select(.err == null)] | length), tokens: ([.[] | select(.err == null) | .out // 0] | add)}' "$T/$1.want.jsonl")
    got=$(jq -c '{results: ([.runs[].results] | add), ok: ([.runs[].ok] | add), tokens: ([.runs[].tokens] | add)}' "$T/$1.a.json")
    expect_eq "$want" "$got" "$1: analyze's figures against the intact frames"
    # and analyze --salvage of the damaged file says the same
    "$L" analyze --json --salvage "$T/$1.lt.zst" 2>/dev/null | jq -S 'del(.. | .file?)' >"$T/$1.s.json"
    jq -S 'del(.. | .file?)' "$T/$1.a.json" >"$T/$1.a2.json"
    cmp -s "$T/$1.s.json" "$T/$1.a2.json" || fail "$1: analyze of the copy differs from analyze --salvage"
}

# a frame of results in the middle
n=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$T/ok.lt.zst" | wc -l)
[ "$n" -ge 4 ] || fail "only $n frames: the test needs a file of several"
check_repair mid 60 $((n / 2 + 1))
[ "$(jq -s '[.[] | select(.rec == null)] | length' "$T/mid.want.jsonl")" -lt 300 ] || fail "mid: no result was lost"
# the frame after the header, which holds the run record
check_repair run 20 2
expect_eq 0 "$(jq -s '[.[] | select(.rec == "run")] | length' "$T/run.want.jsonl")" "run: the run record was lost"

# a repaired copy damaged and repaired again: the header's counts add up,
# each key once
n2=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$T/mid.fixed.lt.zst" | wc -l)
off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$T/mid.fixed.lt.zst" | sed -n "$((n2 / 2 + 1))p" | cut -d: -f1)
cp "$T/mid.fixed.lt.zst" "$T/again.lt.zst"
printf 'Z' | dd of="$T/again.lt.zst" bs=1 seek=$((off + 60)) conv=notrunc 2>/dev/null
"$L" cat --salvage -o "$T/again.fixed.lt.zst" "$T/again.lt.zst" 2>/dev/null
expect_status 1 $? "repairing a repaired copy"
"$L" cat "$T/again.fixed.lt.zst" | head -1 >"$T/again.hdr"
expect_eq 2 "$(jq .salvaged_frames "$T/again.hdr")" "salvaged frames over two repairs"
expect_eq 1 "$(grep -o '"salvaged_frames"' "$T/again.hdr" | wc -l)" "the key once"

# never over the input, whatever its name; -o takes the header too
cp "$T/mid.lt.zst" "$T/mid.keep"
ln -s "$T/mid.lt.zst" "$T/link.lt.zst"
"$L" cat --salvage -o "$T/link.lt.zst" "$T/mid.lt.zst" 2>"$T/err"
expect_status 2 $? "cat -o onto the input"
expect_grep "the output is the input file" "$T/err"
cmp -s "$T/mid.lt.zst" "$T/mid.keep" || fail "the input was overwritten"
"$L" cat --no-header -o "$T/x.lt.zst" "$T/ok.lt.zst" 2>/dev/null
expect_status 2 $? "cat -o --no-header"
# an intact file copies to the same values, and exit 0, with no salvaged_ keys
"$L" cat --salvage -o "$T/copy.lt.zst" "$T/ok.lt.zst"
expect_status 0 $? "cat --salvage -o of an intact file"
"$L" cat "$T/ok.lt.zst" >"$T/ok.jsonl"
"$L" cat "$T/copy.lt.zst" >"$T/copy.jsonl"
cmp -s "$T/ok.jsonl" "$T/copy.jsonl" || fail "the copy of an intact file differs"
finish
