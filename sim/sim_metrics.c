/*
 * The sim's /metrics page (see sim_metrics.h): vLLM v1's names, HELP and
 * TYPE lines and bucket bounds, so that the page parses and maps exactly
 * as a vLLM server's page does (tests/metrics/fixtures/vllm-v1.prom).
 */
#include "sim/sim_metrics.h"

#include <string.h>

/* vLLM's bounds (vllm/v1/metrics/loggers.py). */
static const double ttft_le[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                 0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                 20.0,  40.0,  80.0, 160., 640., 2560.};
static const double itl_le[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double e2e_le[] = {0.3,  0.5,  0.8,   1.0,   1.5,   2.0,   2.5,
                                5.0,  10.0, 15.0,  20.0,  30.0,  40.0,  50.0,
                                60.0, 120., 240.0, 480.0, 960.0, 1920., 7680.};

#define NB(a) ((uint32_t)(sizeof(a) / sizeof(a)[0]))
_Static_assert(NB(ttft_le) <= LT_SIM_METRICS_BUCKETS_MAX, "bucket room");
_Static_assert(NB(e2e_le) <= LT_SIM_METRICS_BUCKETS_MAX, "bucket room");

void lt_sim_metrics_init(struct lt_sim_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->ttft = (struct lt_sim_mhist){.le = ttft_le, .nb = NB(ttft_le)};
    m->itl = (struct lt_sim_mhist){.le = itl_le, .nb = NB(itl_le)};
    m->e2e = (struct lt_sim_mhist){.le = e2e_le, .nb = NB(e2e_le)};
}

void lt_sim_metrics_observe(struct lt_sim_mhist *h, double s)
{
    uint32_t i = 0;
    while (i < h->nb && s > h->le[i])
        i++;
    h->n[i]++;
    h->count++;
    h->sum += s;
}

static int hist(struct lt_buf *b, const char *name, const char *help, const char *model,
                const struct lt_sim_mhist *h)
{
    int rc = lt_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (uint32_t i = 0; i <= h->nb && rc == 0; i++) {
        cum += h->n[i];
        if (i < h->nb)
            rc = lt_buf_printf(b, "%s_bucket{le=\"%g\",model_name=\"%s\"} %llu\n", name, h->le[i],
                               model, (unsigned long long)cum);
        else
            rc = lt_buf_printf(b, "%s_bucket{le=\"+Inf\",model_name=\"%s\"} %llu\n", name, model,
                               (unsigned long long)cum);
    }
    if (rc == 0)
        rc = lt_buf_printf(b, "%s_sum{model_name=\"%s\"} %.9g\n%s_count{model_name=\"%s\"} %llu\n",
                           name, model, h->sum, name, model, (unsigned long long)h->count);
    return rc;
}

static int one(struct lt_buf *b, const char *name, const char *type, const char *help,
               const char *model, double v)
{
    return lt_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s{model_name=\"%s\"} %.17g\n", name, help,
                         name, type, name, model, v);
}

int lt_sim_metrics_render(struct lt_buf *b, const struct lt_sim_metrics *m,
                          const struct lt_sim_model_stats *st, const struct lt_sim_profile *p)
{
    const char *mod = p->model;
    double kv = p->kv_tokens ? (double)st->kv_used / (double)p->kv_tokens : 0;
    double prompt = (double)(st->prefill_tokens + st->cached_tokens);
    int rc = 0;
#define ONE(n, t, h, v)                                                                            \
    if (rc == 0)                                                                                   \
    rc = one(b, n, t, h, mod, v)
    ONE("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
        st->running);
    ONE("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
        st->queued);
    ONE("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", kv);
    ONE("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
        (double)st->preemptions);
    ONE("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", prompt);
    ONE("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
        (double)st->tokens);
    ONE("vllm:prefix_cache_queries_total", "counter",
        "Prefix cache queries, in terms of number of queried tokens.", prompt);
    ONE("vllm:prefix_cache_hits_total", "counter",
        "Prefix cache hits, in terms of number of cached tokens.", (double)st->cached_tokens);
    /* The sim's own ground truth for replay's cancellations (no vLLM name:
     * vLLM folds aborts into request_success_total's finished_reason). */
    ONE("loadtrace_sim_requests_aborted_total", "counter",
        "Requests whose client closed the connection before the answer ended.", (double)m->aborted);
#undef ONE
    if (rc == 0)
        rc = lt_buf_printf(b,
                           "# HELP vllm:request_success_total Count of successfully processed "
                           "requests.\n# TYPE vllm:request_success_total counter\n"
                           "vllm:request_success_total{finished_reason=\"stop\",model_name=\"%s\"} "
                           "%llu\n",
                           mod, (unsigned long long)m->success);
    if (rc == 0)
        rc = hist(b, "vllm:time_to_first_token_seconds",
                  "Histogram of time to first token in seconds.", mod, &m->ttft);
    if (rc == 0)
        rc = hist(b, "vllm:inter_token_latency_seconds",
                  "Histogram of inter-token latency in seconds.", mod, &m->itl);
    if (rc == 0)
        rc = hist(b, "vllm:e2e_request_latency_seconds",
                  "Histogram of e2e request latency in seconds.", mod, &m->e2e);
    return rc;
}

int lt_sim_metrics_render_llamacpp(struct lt_buf *b, const struct lt_sim_metrics *m,
                                   const struct lt_sim_model_stats *st)
{
    /* llama-server counts the prompt tokens it processed (not those its
     * slot's cache held), each request's prompt and generation time, its
     * decode calls (steps), and the mean number of busy slots per call
     * (here: the tokens each step emitted). */
    double busy = st->steps ? (double)st->tokens / (double)st->steps : 0;
    return lt_buf_printf(
        b,
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %llu\n"
        "# HELP llamacpp:prompt_seconds_total Prompt process time\n"
        "# TYPE llamacpp:prompt_seconds_total counter\nllamacpp:prompt_seconds_total %.6f\n"
        "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n"
        "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %llu\n"
        "# HELP llamacpp:tokens_predicted_seconds_total Predict process time\n"
        "# TYPE llamacpp:tokens_predicted_seconds_total counter\n"
        "llamacpp:tokens_predicted_seconds_total %.6f\n"
        "# HELP llamacpp:n_decode_total Total number of llama_decode() calls\n"
        "# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total %llu\n"
        "# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per "
        "llama_decode() call\n"
        "# TYPE llamacpp:n_busy_slots_per_decode counter\nllamacpp:n_busy_slots_per_decode %.6f\n"
        "# HELP llamacpp:requests_processing Number of requests processing.\n"
        "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %u\n"
        "# HELP llamacpp:requests_deferred Number of requests deferred.\n"
        "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred %u\n",
        (unsigned long long)st->prefill_tokens, m->prompt_s, (unsigned long long)m->gen_tokens,
        m->gen_s, (unsigned long long)st->steps, busy, st->running, st->queued);
}

const char lt_sim_metrics_html[] =
    "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n"
    "<body><h1>Sign in</h1><p>This page is not Prometheus metrics.</p></body></html>\n";

static const char pad_line[] = "# loadtrace sim: metrics-big fault padding, not a metric ......\n";
#define PAD_LINE (sizeof pad_line - 1)
_Static_assert(sizeof pad_line - 1 == 64, "64-byte padding lines");

void lt_sim_metrics_pad(char *dst, size_t n, uint64_t off)
{
    for (size_t i = 0; i < n;) {
        size_t at = (size_t)((off + i) % PAD_LINE), k = PAD_LINE - at;
        if (k > n - i)
            k = n - i;
        memcpy(dst + i, pad_line + at, k);
        i += k;
    }
}

uint64_t lt_sim_metrics_pad_len(size_t page_len, uint64_t total)
{
    if (total <= page_len)
        return 0;
    return (total - page_len + PAD_LINE - 1) / PAD_LINE * PAD_LINE;
}
