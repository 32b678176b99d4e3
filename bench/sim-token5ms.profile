# One token per stream every 5 ms (200 tok/s), whatever the batch, no
# prefill cost: every SSE event carries one token, as real servers send
# them (bench/run-floor.sh, "CPU per streamed token").
name = token5ms
model = loadtrace-sim-token5ms
step_ms = 5
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
max_running = 100000
kv_tokens = 1000000000
batch_tokens = 100000000
cache_blocks = 0
