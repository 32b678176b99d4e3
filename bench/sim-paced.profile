# A paced profile for the sim benchmark: every running stream gets one
# token each 20 ms (50 tok/s), whatever the batch, with no prefill cost, so
# N open streams ask for N x 50 chunks per second (5,000 -> 250,000/s).
name = paced
model = loadtrace-sim-paced
step_ms = 20
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
max_running = 100000
kv_tokens = 1000000000
batch_tokens = 100000000
cache_blocks = 0
