/*
 * The report of `loadtrace info` (info_render.h): workload/trace_info.c's
 * figures laid out for a person (aligned text with units) or a program
 * (one JSON object, schema in docs/info.md).
 */
#include "analyze/info_render.h"
#include "base/lt_buf.h"
#include "base/lt_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

/* "1,234,567" */
static const char *grouped(uint64_t v, char buf[32])
{
    char raw[24];
    int n = snprintf(raw, sizeof raw, "%" PRIu64, v), o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

/* A duration in the unit that reads best: "850 us", "12.3 ms", "4.56 s",
 * "58m 33s", "26h 03m 10s", "120.5 h". */
static const char *human_us(double us, char buf[32])
{
    if (us < 1000)
        snprintf(buf, 32, "%.0f us", us);
    else if (us < 1e6)
        snprintf(buf, 32, "%.3g ms", us / 1e3);
    else if (us < 600e6)
        snprintf(buf, 32, "%.3g s", us / 1e6);
    else if (us < 3600e6) {
        long s = lround(us / 1e6);
        snprintf(buf, 32, "%ldm %02lds", s / 60, s % 60);
    } else if (us < 360000e6) {
        long s = lround(us / 1e6);
        snprintf(buf, 32, "%ldh %02ldm %02lds", s / 3600, s / 60 % 60, s % 60);
    } else
        snprintf(buf, 32, "%.1f h", us / 3600e6);
    return buf;
}

static void text_len_row(FILE *out, const char *name, const struct lt_info_len *l)
{
    uint64_t n = lt_hist_count(l->h);
    char b[32];
    if (!n) {
        fprintf(out, "  %-12s %10s   (not in this trace)\n", name, "0");
        return;
    }
    fprintf(out, "  %-12s %10s %9.1f %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 "\n", name,
            grouped(n, b), lt_hist_mean(l->h), lt_hist_value_at(l->h, 50),
            lt_hist_value_at(l->h, 90), lt_hist_value_at(l->h, 99), lt_hist_max(l->h));
}

static void text_names(FILE *out, const char *label, const struct lt_info_name *tab, uint32_t n,
                       uint64_t other, uint64_t records)
{
    fprintf(out, "%-15s", label);
    if (!n) {
        fprintf(out, "(not in this trace)\n");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        fprintf(out, "%s%s (%.1f%%)", i ? ", " : "", tab[i].name,
                100 * share(tab[i].count, records));
    if (other)
        fprintf(out, ", others (%.1f%%)", 100 * share(other, records));
    fprintf(out, "\n");
}

static void json_names(struct lt_buf *j, const char *key, const struct lt_info_name *tab,
                       uint32_t n, uint64_t other);

/* The media shapes (docs/info.md "media"): only for a trace that has any. */
static void text_media(FILE *out, const struct lt_info *in)
{
    char a[32], b[32];
    uint64_t n = in->records;
    if (!in->with_media && !in->bad_media)
        return;
    fprintf(out,
            "\n%-15s%.2f%% text only, %.2f%% with one image, %.2f%% with several; "
            "%.2f%% with audio, %.2f%% with video\n",
            "modality", 100 * share(n - in->with_media, n), 100 * share(in->with_one_image, n),
            100 * share(in->with_many_images, n), 100 * share(in->with_audio, n),
            100 * share(in->with_video, n));
    if (in->images) {
        fprintf(out, "%-15s%s images (%s as links); per request mean %.2f, max %" PRIu64 "\n",
                "images", grouped(in->images, a), grouped(in->image_links, b),
                lt_hist_mean(in->images_per), lt_hist_max(in->images_per));
        if (lt_hist_count(in->image_w))
            fprintf(out,
                    "%-15swidth p50 %" PRIu64 " p90 %" PRIu64 " max %" PRIu64
                    "; height p50 %" PRIu64 " p90 %" PRIu64 " max %" PRIu64 "\n",
                    "image size", lt_hist_value_at(in->image_w, 50),
                    lt_hist_value_at(in->image_w, 90), lt_hist_max(in->image_w),
                    lt_hist_value_at(in->image_h, 50), lt_hist_value_at(in->image_h, 90),
                    lt_hist_max(in->image_h));
        if (lt_hist_count(in->image_bytes))
            fprintf(out, "%-15sp50 %" PRIu64 " bytes, max %" PRIu64 "\n", "image bytes",
                    lt_hist_value_at(in->image_bytes, 50), lt_hist_max(in->image_bytes));
        if (in->images_counted)
            fprintf(out, "%-15s%s over %s images (mean %.1f per image)\n", "image tokens",
                    grouped(in->image_tokens, a), grouped(in->images_counted, b),
                    (double)in->image_tokens / (double)in->images_counted);
        text_names(out, "image formats", in->image_fmts, in->n_image_fmts, in->image_fmts_other,
                   in->images);
    }
    if (in->audio)
        fprintf(out, "%-15s%s clips, %.1f s in all\n", "audio", grouped(in->audio, a), in->audio_s);
    if (in->videos)
        fprintf(out, "%-15s%s videos, %s frames, %.1f s in all\n", "video", grouped(in->videos, a),
                grouped(in->video_frames, b), in->video_s);
    if (in->bad_media)
        fprintf(out, "%-15s%s records have a malformed media key (left out)\n", "warning",
                grouped(in->bad_media, a));
}

static void json_media(struct lt_buf *j, const struct lt_info *in)
{
    uint64_t n = in->records;
    lt_buf_printf(j,
                  ",\"media\":{\"text_only\":%" PRIu64 ",\"one_image\":%" PRIu64
                  ",\"several_images\":%" PRIu64 ",\"with_audio\":%" PRIu64
                  ",\"with_video\":%" PRIu64 ",\"images\":%" PRIu64 ",\"image_links\":%" PRIu64
                  ",\"images_per_request_mean\":%.6g,\"images_per_request_max\":%" PRIu64
                  ",\"image_width_p50\":%" PRIu64 ",\"image_width_max\":%" PRIu64
                  ",\"image_height_p50\":%" PRIu64 ",\"image_height_max\":%" PRIu64
                  ",\"image_bytes_p50\":%" PRIu64 ",\"images_counted\":%" PRIu64
                  ",\"image_tokens\":%" PRIu64 ",\"audio\":%" PRIu64 ",\"audio_s\":%.6g"
                  ",\"videos\":%" PRIu64 ",\"video_frames\":%" PRIu64 ",\"video_s\":%.6g"
                  ",\"malformed\":%" PRIu64,
                  n - in->with_media, in->with_one_image, in->with_many_images, in->with_audio,
                  in->with_video, in->images, in->image_links, lt_hist_mean(in->images_per),
                  lt_hist_max(in->images_per), lt_hist_value_at(in->image_w, 50),
                  lt_hist_max(in->image_w), lt_hist_value_at(in->image_h, 50),
                  lt_hist_max(in->image_h), lt_hist_value_at(in->image_bytes, 50),
                  in->images_counted, in->image_tokens, in->audio, in->audio_s, in->videos,
                  in->video_frames, in->video_s, in->bad_media);
    json_names(j, "image_formats", in->image_fmts, in->n_image_fmts, in->image_fmts_other);
    lt_buf_puts(j, "}");
}

void lt_info_render_text(FILE *out, const struct lt_info *in, const char *path, const char *source)
{
    char a[32], b[32], c[32];
    uint64_t n = in->records;
    fprintf(out, "%-15s%s (source %s", "file", path, *source ? source : "unknown");
    if (in->block_tokens)
        fprintf(out, ", prefix blocks of %u tokens", in->block_tokens);
    fprintf(out, ")\n");
    fprintf(out, "%-15s%s\n", "requests", grouped(n, a));
    if (!n)
        return;
    fprintf(out, "%-15s%s (%.3f s)\n", "span", human_us(in->span_s * 1e6, a), in->span_s);
    fprintf(out, "%-15s%.3f req/s mean  ((requests - 1) / span)\n", "rate", in->rate);
    fprintf(out, "%-15smean %s, sd %s, CV %.2f  (0 = even, 1 = Poisson, >1 = bursty)\n",
            "inter-arrival", human_us(in->gap_mean_us, a), human_us(in->gap_sd_us, b), in->gap_cv);
    if (lt_hist_count(in->gaps))
        fprintf(out, "%-15sp50 %s, p99 %s, max %s\n", "",
                human_us((double)lt_hist_value_at(in->gaps, 50), a),
                human_us((double)lt_hist_value_at(in->gaps, 99), b),
                human_us((double)lt_hist_max(in->gaps), c));
    if (in->out_of_order)
        fprintf(out,
                "%-15s%" PRIu64 " records arrive before their predecessor (left out of the gaps)\n",
                "warning", in->out_of_order);
    /* A minute's peak over a shorter trace would be its whole count over
     * 60 s: a rate it never had. */
    if (in->span_s >= 60)
        fprintf(out,
                "%-15s%" PRIu64 " req in one second (at %.0f s), %" PRIu64
                " req in one minute (%.2f req/s, at %.0f s)\n",
                "peak", in->peak_sec, in->peak_sec_at_s, in->peak_min, (double)in->peak_min / 60.0,
                in->peak_min_at_s);
    else
        fprintf(out,
                "%-15s%" PRIu64 " req in one second (at %.0f s); no peak minute: the trace "
                "spans %.1f s\n",
                "peak", in->peak_sec, in->peak_sec_at_s, in->span_s);
    if (in->granularity_us)
        fprintf(out,
                "%-15s%s%s; %.1f%% of requests share their timestamp (at most %" PRIu64
                " at one), %s distinct\n",
                "timestamps", in->granularity_us > 1 ? "rounded to " : "resolution ",
                human_us((double)in->granularity_us, a), 100 * share(in->shared_t, n),
                in->max_same_t, grouped(in->distinct_t, b));
    fprintf(out, "\n%-14s %10s %9s %9s %9s %9s %9s\n", "tokens", "requests", "mean", "p50", "p90",
            "p99", "max");
    text_len_row(out, "input", &in->in);
    text_len_row(out, "output", &in->out);
    text_len_row(out, "reasoning", &in->reasoning);
    if (lt_hist_count(in->cached.h))
        text_len_row(out, "cached", &in->cached);
    fprintf(out, "\n");
    fprintf(out, "%-15s%s (%.2f%%)\n", "failed", grouped(in->failed, a),
            100 * share(in->failed, n));
    if (in->cancelled)
        fprintf(out, "%-15s%s (%.2f%%) clients left mid-stream; replay leaves there too\n",
                "cancelled", grouped(in->cancelled, a), 100 * share(in->cancelled, n));
    if (in->estimated)
        fprintf(out, "%-15s%s (%.1f%%) have estimated token counts\n", "estimated",
                grouped(in->estimated, a), 100 * share(in->estimated, n));
    fprintf(out, "%-15s%.2f%% of requests have reasoning tokens\n", "reasoning",
            100 * share(in->with_reasoning, n));
    fprintf(out, "%-15s%.2f%% of responses call tools (%s calls); tools offered in %.2f%%\n",
            "tool calls", 100 * share(in->with_calls, n), grouped(in->calls, a),
            100 * share(in->with_tools, n));
    if (in->with_msgs)
        fprintf(out, "%-15smean %.2f messages per prompt, p99 %" PRIu64 "\n", "messages",
                lt_hist_mean(in->msgs), lt_hist_value_at(in->msgs, 99));
    if (in->sessions)
        fprintf(out,
                "%-15s%s sessions over %s requests; turns per session mean %.2f, p50 %" PRIu64
                ", p90 %" PRIu64 ", max %" PRIu64 "\n",
                "sessions", grouped(in->sessions, a), grouped(in->with_session, b),
                lt_hist_mean(in->turns), lt_hist_value_at(in->turns, 50),
                lt_hist_value_at(in->turns, 90), lt_hist_max(in->turns));
    else
        fprintf(out, "%-15snone\n", "sessions");
    if (in->with_blocks)
        fprintf(out,
                "%-15s%.2f%% of prompt blocks seen before (unlimited cache), %.2f%% as prefix "
                "hits;\n%-15s%s blocks, %s distinct; %.1f%% of prompts start with a seen block\n",
                "prefix reuse", 100 * share(in->blocks_reused, in->blocks),
                100 * share(in->blocks_prefix_hit, in->blocks), "", grouped(in->blocks, a),
                grouped(in->distinct_blocks, b), 100 * share(in->records_reusing, in->with_blocks));
    else
        fprintf(out, "%-15s(no prefix blocks in this trace)\n", "prefix reuse");
    text_names(out, "models", in->models, in->n_models, in->models_other, n);
    text_names(out, "apis", in->apis, in->n_apis, in->apis_other, n);
    text_media(out, in);
}

static void json_len(struct lt_buf *j, const char *name, const struct lt_info_len *l)
{
    const struct lt_hist *h = l->h;
    lt_buf_printf(j,
                  "\"%s\":{\"count\":%" PRIu64 ",\"sum\":%" PRIu64
                  ",\"mean\":%.6g,\"sd\":%.6g,\"min\":%" PRIu64 ",\"p50\":%" PRIu64
                  ",\"p90\":%" PRIu64 ",\"p99\":%" PRIu64 ",\"max\":%" PRIu64 "}",
                  name, lt_hist_count(h), l->sum, lt_hist_mean(h), lt_hist_stddev(h),
                  lt_hist_min(h), lt_hist_value_at(h, 50), lt_hist_value_at(h, 90),
                  lt_hist_value_at(h, 99), lt_hist_max(h));
}

static void json_names(struct lt_buf *j, const char *key, const struct lt_info_name *tab,
                       uint32_t n, uint64_t other)
{
    lt_buf_printf(j, ",\"%s\":{", key);
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            lt_buf_puts(j, ",");
        lt_json_str(j, tab[i].name, strlen(tab[i].name));
        lt_buf_printf(j, ":%" PRIu64, tab[i].count);
    }
    lt_buf_printf(j, "},\"%s_other\":%" PRIu64, key, other);
}

int lt_info_render_json(FILE *out, const struct lt_info *in, const char *path, const char *source,
                        struct lt_err *err)
{
    struct lt_buf j;
    lt_buf_init(&j, (size_t)1 << 20);
    uint64_t n = in->records;
    lt_buf_puts(&j, "{\"file\":");
    lt_json_str(&j, path, strlen(path));
    lt_buf_puts(&j, ",\"source\":");
    lt_json_str(&j, source, strlen(source));
    lt_buf_printf(&j, ",\"block_tokens\":%u,\"records\":%" PRIu64, in->block_tokens, n);
    lt_buf_printf(&j,
                  ",\"t_first_us\":%" PRId64 ",\"t_last_us\":%" PRId64
                  ",\"span_s\":%.6f,\"rate_rps\":%.6g",
                  in->t_first, in->t_last, in->span_s, in->rate);
    lt_buf_printf(&j,
                  ",\"interarrival\":{\"count\":%" PRIu64 ",\"mean_s\":%.9g,\"sd_s\":%.9g,"
                  "\"cv\":%.6g,\"p50_s\":%.6f,\"p99_s\":%.6f,\"max_s\":%.6f,"
                  "\"out_of_order\":%" PRIu64 "}",
                  lt_hist_count(in->gaps), in->gap_mean_us / 1e6, in->gap_sd_us / 1e6, in->gap_cv,
                  (double)lt_hist_value_at(in->gaps, 50) / 1e6,
                  (double)lt_hist_value_at(in->gaps, 99) / 1e6, (double)lt_hist_max(in->gaps) / 1e6,
                  in->out_of_order);
    lt_buf_printf(&j,
                  ",\"peak\":{\"per_second\":%" PRIu64 ",\"per_second_at_s\":%.0f,"
                  "\"per_minute\":%" PRIu64 ",\"per_minute_at_s\":%.0f}",
                  in->peak_sec, in->peak_sec_at_s, in->peak_min, in->peak_min_at_s);
    lt_buf_printf(&j,
                  ",\"timestamps\":{\"granularity_us\":%" PRId64 ",\"distinct\":%" PRIu64
                  ",\"shared\":%" PRIu64 ",\"shared_share\":%.6f,\"max_same\":%" PRIu64 "}",
                  in->granularity_us, in->distinct_t, in->shared_t, share(in->shared_t, n),
                  in->max_same_t);
    lt_buf_puts(&j, ",\"tokens\":{");
    json_len(&j, "in", &in->in);
    lt_buf_puts(&j, ",");
    json_len(&j, "out", &in->out);
    lt_buf_puts(&j, ",");
    json_len(&j, "reasoning", &in->reasoning);
    lt_buf_puts(&j, ",");
    json_len(&j, "cached", &in->cached);
    lt_buf_puts(&j, "}");
    lt_buf_printf(&j,
                  ",\"failed\":%" PRIu64 ",\"failed_share\":%.6f,\"cancelled\":%" PRIu64
                  ",\"estimated\":%" PRIu64
                  ",\"reasoning_share\":%.6f,\"tool_call_share\":%.6f,\"tool_calls\":%" PRIu64
                  ",\"tools_offered_share\":%.6f",
                  in->failed, share(in->failed, n), in->cancelled, in->estimated,
                  share(in->with_reasoning, n), share(in->with_calls, n), in->calls,
                  share(in->with_tools, n));
    lt_buf_printf(&j,
                  ",\"messages\":{\"records\":%" PRIu64 ",\"mean\":%.6g,\"p50\":%" PRIu64
                  ",\"p99\":%" PRIu64 ",\"max\":%" PRIu64 "}",
                  in->with_msgs, lt_hist_mean(in->msgs), lt_hist_value_at(in->msgs, 50),
                  lt_hist_value_at(in->msgs, 99), lt_hist_max(in->msgs));
    lt_buf_printf(&j,
                  ",\"sessions\":{\"records\":%" PRIu64 ",\"sessions\":%" PRIu64
                  ",\"turns_mean\":%.6g,\"turns_p50\":%" PRIu64 ",\"turns_p90\":%" PRIu64
                  ",\"turns_p99\":%" PRIu64 ",\"turns_max\":%" PRIu64 "}",
                  in->with_session, in->sessions, lt_hist_mean(in->turns),
                  lt_hist_value_at(in->turns, 50), lt_hist_value_at(in->turns, 90),
                  lt_hist_value_at(in->turns, 99), lt_hist_max(in->turns));
    lt_buf_printf(&j,
                  ",\"prefix\":{\"records\":%" PRIu64 ",\"blocks\":%" PRIu64
                  ",\"distinct_blocks\":%" PRIu64 ",\"reused_blocks\":%" PRIu64
                  ",\"reuse_share\":%.6f,\"prefix_hit_blocks\":%" PRIu64
                  ",\"prefix_hit_share\":%.6f,\"records_reusing\":%" PRIu64 "}",
                  in->with_blocks, in->blocks, in->distinct_blocks, in->blocks_reused,
                  share(in->blocks_reused, in->blocks), in->blocks_prefix_hit,
                  share(in->blocks_prefix_hit, in->blocks), in->records_reusing);
    json_names(&j, "models", in->models, in->n_models, in->models_other);
    json_names(&j, "apis", in->apis, in->n_apis, in->apis_other);
    json_media(&j, in);
    int rc = lt_buf_puts(&j, "}\n");
    if (rc == 0)
        fwrite(j.p, 1, j.len, out);
    else
        lt_errset(err, rc, "JSON output too large");
    lt_buf_release(&j);
    return rc;
}
