/*
 * The modality split of a run (analyze_media.h).
 */
#include "analyze/analyze_media.h"

#include "traces/trace_reader.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[LT_ANALYZE_MODS] = {"text", "one_image", "several_images", "audio",
                                                   "video"};

const char *lt_analyze_mod_name(int k)
{
    return k >= 0 && k < LT_ANALYZE_MODS ? names[k] : "";
}

int lt_analyze_media_add(struct lt_analyze_run *r, const struct lt_result *res, bool ok,
                         int hist_bits, struct lt_err *err)
{
    if (!r->mods) {
        r->mods = calloc(1, sizeof *r->mods);
        if (!r->mods)
            return lt_errset(err, LT_ENOMEM, "out of memory for the modality split");
        for (int k = 0; k < LT_ANALYZE_MODS; k++) {
            struct lt_analyze_mod *m = &r->mods->m[k];
            m->first_sent = INT64_MAX;
            m->last_end = INT64_MIN;
            m->ttft = lt_hist_new(UINT64_C(1) << 40, hist_bits, err);
            m->e2e = lt_hist_new(UINT64_C(1) << 40, hist_bits, err);
            if (!m->ttft || !m->e2e)
                return LT_ENOMEM;
        }
        r->mods->in_first = INT64_MAX;
        r->mods->in_last = INT64_MIN;
        if (!(r->mods->in_e2e = lt_hist_new(UINT64_C(1) << 40, hist_bits, err)))
            return LT_ENOMEM;
    }
    int64_t ninputs = 0;
    if (res->extra.n && lt_extra_get_int(&res->extra, "inputs", &ninputs)) {
        struct lt_analyze_mods *x = r->mods;
        x->in_results++;
        if (ok) {
            x->in_ok++;
            x->inputs += (uint64_t)(ninputs > 0 ? ninputs : 0);
            if (res->has & LT_RHAS_IN)
                x->in_prompt += res->in;
            if ((res->has & LT_RHAS_SENT) && (res->has & LT_RHAS_END) && res->end >= res->sent) {
                lt_hist_record(x->in_e2e, (uint64_t)(res->end - res->sent));
                if (res->sent < x->in_first)
                    x->in_first = res->sent;
                if (res->end > x->in_last)
                    x->in_last = res->end;
            }
        }
    }
    int64_t img = 0, tok = 0, aud = 0, vid = 0, avt = 0;
    if (res->extra.n) {
        lt_extra_get_int(&res->extra, "img", &img);
        lt_extra_get_int(&res->extra, "img_tok", &tok);
        lt_extra_get_int(&res->extra, "aud", &aud);
        lt_extra_get_int(&res->extra, "vid", &vid);
        lt_extra_get_int(&res->extra, "av_tok", &avt);
    }
    int k = vid > 0 ? 4 : aud > 0 ? 3 : img <= 0 ? 0 : img == 1 ? 1 : 2;
    struct lt_analyze_mod *m = &r->mods->m[k];
    r->mods->any_media |= k > 0;
    m->results++;
    if (!ok) {
        m->errors++;
        return 0;
    }
    m->ok++;
    m->images += (uint64_t)(img > 0 ? img : 0);
    m->img_tokens += (uint64_t)(tok > 0 ? tok : 0);
    m->av_tokens += (uint64_t)(avt > 0 ? avt : 0);
    if (res->has & LT_RHAS_IN)
        m->in_tokens += res->in;
    if (res->has & LT_RHAS_OUT)
        m->out_tokens += res->out;
    if (res->has & LT_RHAS_SENT) {
        if (res->sent < m->first_sent)
            m->first_sent = res->sent;
        if ((res->has & LT_RHAS_FIRST_TOKEN) && res->first_token >= res->sent)
            lt_hist_record(m->ttft, (uint64_t)(res->first_token - res->sent));
        if ((res->has & LT_RHAS_END) && res->end >= res->sent) {
            lt_hist_record(m->e2e, (uint64_t)(res->end - res->sent));
            if (res->end > m->last_end)
                m->last_end = res->end;
        }
    }
    return 0;
}

void lt_analyze_media_release(struct lt_analyze_run *r)
{
    if (!r->mods)
        return;
    for (int k = 0; k < LT_ANALYZE_MODS; k++) {
        lt_hist_free(r->mods->m[k].ttft);
        lt_hist_free(r->mods->m[k].e2e);
    }
    lt_hist_free(r->mods->in_e2e);
    free(r->mods);
    r->mods = NULL;
}

static double span_s(const struct lt_analyze_mod *m)
{
    return m->last_end > m->first_sent ? (double)(m->last_end - m->first_sent) / 1e6 : 0;
}

static double per_s(uint64_t v, double s)
{
    return s > 0 ? (double)v / s : 0;
}

static double pct_ms(const struct lt_hist *h, double p)
{
    return lt_hist_count(h) ? (double)lt_hist_value_at(h, p) / 1e3 : 0;
}

static double in_span(const struct lt_analyze_mods *x)
{
    return x->in_last > x->in_first ? (double)(x->in_last - x->in_first) / 1e6 : 0;
}

void lt_analyze_media_text(const struct lt_analyze_run *r, FILE *out)
{
    if (r->mods && r->mods->in_results) {
        const struct lt_analyze_mods *x = r->mods;
        double s = in_span(x);
        fprintf(out,
                "  inputs (embeddings, rerank): %" PRIu64 " of %" PRIu64 " requests Ok, %" PRIu64
                " inputs, %.2f inputs/s, %.1f prompt tok/s, E2E p50 %.1f ms p99 %.1f ms\n",
                x->in_ok, x->in_results, x->inputs, per_s(x->inputs, s), per_s(x->in_prompt, s),
                pct_ms(x->in_e2e, 50), pct_ms(x->in_e2e, 99));
    }
    if (!r->mods || !r->mods->any_media)
        return;
    fprintf(out, "  by modality      requests     ok  errors  TTFT p50/p99 ms   E2E p50/p99 ms"
                 "    req/s  in tok/s  img tok/s  out tok/s\n");
    for (int k = 0; k < LT_ANALYZE_MODS; k++) {
        const struct lt_analyze_mod *m = &r->mods->m[k];
        if (!m->results)
            continue;
        double s = span_s(m);
        fprintf(out,
                "    %-14s %8" PRIu64 " %6" PRIu64 " %7" PRIu64 " %8.1f/%-8.1f %8.1f/%-8.1f %8.2f "
                "%9.1f %10.1f %10.1f\n",
                names[k], m->results, m->ok, m->errors, pct_ms(m->ttft, 50), pct_ms(m->ttft, 99),
                pct_ms(m->e2e, 50), pct_ms(m->e2e, 99), per_s(m->ok, s), per_s(m->in_tokens, s),
                per_s(m->img_tokens, s), per_s(m->out_tokens, s));
    }
    uint64_t in = 0, img = 0, av = 0;
    for (int k = 0; k < LT_ANALYZE_MODS; k++) {
        in += r->mods->m[k].in_tokens;
        img += r->mods->m[k].img_tokens;
        av += r->mods->m[k].av_tokens;
    }
    fprintf(out,
            "  prompt tokens (Ok): %" PRIu64 " = text %" PRIu64 " + image %" PRIu64
            " + audio and video %" PRIu64 " (as the trace recorded them)\n",
            in, in > img + av ? in - img - av : 0, img, av);
}

void lt_analyze_media_json(const struct lt_analyze_run *r, FILE *out)
{
    if (r->mods && r->mods->in_results) {
        const struct lt_analyze_mods *x = r->mods;
        double s = in_span(x);
        fprintf(out,
                ", \"inputs\": {\"results\": %" PRIu64 ", \"ok\": %" PRIu64 ", \"inputs\": %" PRIu64
                ", \"prompt_tokens\": %" PRIu64 ", \"span_s\": %.6f, \"inputs_per_s\": %.6f"
                ", \"prompt_tps\": %.6f, \"e2e_p50_ms\": %.3f, \"e2e_p99_ms\": %.3f}",
                x->in_results, x->in_ok, x->inputs, x->in_prompt, s, per_s(x->inputs, s),
                per_s(x->in_prompt, s), pct_ms(x->in_e2e, 50), pct_ms(x->in_e2e, 99));
    }
    if (!r->mods || !r->mods->any_media)
        return;
    fprintf(out, ", \"modality\": {");
    for (int k = 0; k < LT_ANALYZE_MODS; k++) {
        const struct lt_analyze_mod *m = &r->mods->m[k];
        double s = span_s(m);
        fprintf(out,
                "%s\"%s\": {\"results\": %" PRIu64 ", \"ok\": %" PRIu64 ", \"errors\": %" PRIu64
                ", \"images\": %" PRIu64 ", \"in_tokens\": %" PRIu64 ", \"img_tokens\": %" PRIu64
                ", \"av_tokens\": %" PRIu64 ", \"out_tokens\": %" PRIu64
                ", \"span_s\": %.6f, \"req_per_s\": %.6f"
                ", \"in_tps\": %.6f, \"img_tps\": %.6f, \"out_tps\": %.6f"
                ", \"ttft_p50_ms\": %.3f, \"ttft_p99_ms\": %.3f, \"e2e_p50_ms\": %.3f"
                ", \"e2e_p99_ms\": %.3f}",
                k ? ", " : "", names[k], m->results, m->ok, m->errors, m->images, m->in_tokens,
                m->img_tokens, m->av_tokens, m->out_tokens, s, per_s(m->ok, s),
                per_s(m->in_tokens, s), per_s(m->img_tokens, s), per_s(m->out_tokens, s),
                pct_ms(m->ttft, 50), pct_ms(m->ttft, 99), pct_ms(m->e2e, 50), pct_ms(m->e2e, 99));
    }
    fprintf(out, "}");
}
