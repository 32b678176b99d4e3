/*
 * The sim's GET /metrics: the true values of its model in vLLM's (v1)
 * Prometheus names, so that replay's scraper and analyze's server table
 * can be tested against a server whose every number is known.
 *
 * The gauges and token counters come from the model's own counts
 * (lt_sim_model_stats); the latency histograms are filled by the HTTP
 * server as tokens are emitted, measured from the request's arrival at the
 * server, as vLLM measures them from the request's arrival at the engine.
 * vllm:num_preemptions_total counts the model's preemptions (profile key
 * preempt; 0 when off).
 */
#ifndef LT_SIM_METRICS_H
#define LT_SIM_METRICS_H

#include "base/lt_buf.h"
#include "sim/sim_model.h"
#include "sim/sim_profile.h"

#include <stdint.h>

#define LT_SIM_METRICS_BUCKETS_MAX 32

/* A histogram with vLLM's bucket bounds (seconds). */
struct lt_sim_mhist {
    const double *le; /* nb bounds, ascending; +Inf is implicit */
    uint32_t nb;
    uint64_t n[LT_SIM_METRICS_BUCKETS_MAX + 1]; /* per bucket (not cumulative); [nb] = +Inf */
    uint64_t count;
    double sum;
};

struct lt_sim_metrics {
    struct lt_sim_mhist ttft, itl, e2e;
    uint64_t success; /* requests whose every token was emitted */
    uint64_t resets;  /* POST /reset_prefix_cache answered */
    uint64_t aborted; /* inference requests whose client closed before the answer ended */
    /* llama.cpp's own timing counters (--dialect llamacpp), in the
     * server's seconds: each request's prompt processing (admitted to
     * first token) and generation (first token to last), its generated
     * tokens */
    double prompt_s, gen_s;
    uint64_t gen_tokens;
};

void lt_sim_metrics_init(struct lt_sim_metrics *m);
/* Add one observation of s seconds. */
void lt_sim_metrics_observe(struct lt_sim_mhist *h, double s);
/* The page: m, the model's counts st and the profile p (for the KV
 * capacity and the model name). Returns 0 or the lt_buf error. */
int lt_sim_metrics_render(struct lt_buf *b, const struct lt_sim_metrics *m,
                          const struct lt_sim_model_stats *st, const struct lt_sim_profile *p);
/* llama-server's counters (its --metrics page, the names it uses), added
 * to the page by --dialect llamacpp. Returns 0 or the lt_buf error. */
int lt_sim_metrics_render_llamacpp(struct lt_buf *b, const struct lt_sim_metrics *m,
                                   const struct lt_sim_model_stats *st);

/* The metrics-html fault's page: what a web UI or a login page in front
 * of the server answers on /metrics. */
extern const char lt_sim_metrics_html[];

/* The metrics-big fault: n bytes of the padding that follows the true page,
 * from byte off of the padding on, into dst: comment lines of 64 bytes,
 * valid Prometheus text that only makes the page long. */
void lt_sim_metrics_pad(char *dst, size_t n, uint64_t off);
/* The padding's length for a page of page_len bytes made at least total
 * bytes long: whole lines, 0 when the page is long enough already. */
uint64_t lt_sim_metrics_pad_len(size_t page_len, uint64_t total);

#endif
