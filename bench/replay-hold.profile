# A profile for replay's in-flight benchmark: every running stream gets one
# token every 200 ms (5 tok/s) whatever the batch, with no prefill cost, so
# 10,000 streams of 20 tokens stay open together for about 4 s while the sim
# only has to send 50,000 chunks per second.
name = hold
model = loadtrace-sim-hold
step_ms = 200
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
max_running = 100000
kv_tokens = 1000000000
batch_tokens = 100000000
cache_blocks = 0
