#!/bin/sh
# analyze's speed and memory (bench/bench_analyze): results files of 1M and
# 10M records (and 1M with 8 chunks per record), analyzed on one core; the
# same 1M results with the runs one after another, each in the order its
# requests ended (as replay writes a sweep: "seq"), and written one map per
# result (format version 1), for comparison; the reader alone and the
# summarizing pass alone, to show where the time goes.
# Usage: sh bench/run-analyze.sh BUILD_DIR OUT_DIR
set -eu
B="$1"
OUT="$2"
BA="$B/bench/bench_analyze"
"$BA" gen "$OUT/analyze-1m.lt.zst" 1000000 0
"$BA" gen "$OUT/analyze-1m-seq.lt.zst" 1000000 0 seq
"$BA" gen "$OUT/analyze-1m-c8.lt.zst" 1000000 8
"$BA" gen "$OUT/analyze-10m.lt.zst" 10000000 0
"$BA" gen "$OUT/analyze-1m-v1.lt.zst" 1000000 0 v1
ls -l "$OUT"/analyze-1m.lt.zst "$OUT"/analyze-1m-seq.lt.zst "$OUT"/analyze-1m-v1.lt.zst \
    "$OUT"/analyze-1m-c8.lt.zst
for i in 1 2 3 4 5; do
    taskset -c 0 "$BA" run "$OUT/analyze-1m.lt.zst"
    taskset -c 0 "$BA" run "$OUT/analyze-1m-seq.lt.zst"
done
taskset -c 0 "$BA" run "$OUT/analyze-1m-v1.lt.zst"
taskset -c 0 "$BA" run "$OUT/analyze-1m-c8.lt.zst"
taskset -c 0 "$BA" run "$OUT/analyze-10m.lt.zst"
taskset -c 0 "$BA" read "$OUT/analyze-1m.lt.zst"
taskset -c 0 "$BA" read "$OUT/analyze-1m-v1.lt.zst"
taskset -c 0 "$BA" read "$OUT/analyze-1m-c8.lt.zst"
for c in 0 8; do taskset -c 0 "$BA" mem 5000000 $c; done
rm -f "$OUT"/analyze-1m.lt.zst "$OUT"/analyze-1m-seq.lt.zst "$OUT"/analyze-1m-c8.lt.zst \
    "$OUT"/analyze-10m.lt.zst "$OUT"/analyze-1m-v1.lt.zst
