/*
 * Trace statistics (trace_info.h): one pass, record by record. Per-record
 * work is O(1) apart from the prompt's block ids; everything that is a
 * distribution goes into an lt_hist, everything else is a counter, and only
 * the block-id set and the session map grow with the input.
 */
#include "workload/trace_info.h"

#include "traces/trace_media.h"
#include "base/lt_u64map.h"
#include "traces/trace_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC_US INT64_C(1000000)
#define MIN_US INT64_C(60000000)
#define HIST_BITS 10 /* 3 significant digits: figures within 0.1 % */

struct lt_info_state {
    struct lt_u64map blocks;   /* block ids seen */
    struct lt_u64map sessions; /* session id -> records */
    bool any;
    int64_t prev_t;
    double gap_mean, gap_m2; /* Welford over gaps */
    uint64_t gap_n;
    int64_t sec_bin, min_bin;
    uint64_t sec_count, min_count;
    uint64_t same_run; /* records at the current t so far */
    int pow10;         /* exponent of the granularity candidate */
};

static const int64_t pow10_us[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
#define POW10_MAX 6

static int new_hist(struct lt_hist **h, uint64_t highest, struct lt_err *err)
{
    *h = lt_hist_new(highest, HIST_BITS, err);
    return *h ? 0 : LT_ENOMEM;
}

int lt_info_init(struct lt_info *info, uint32_t block_tokens, struct lt_err *err)
{
    int rc = 0;
    memset(info, 0, sizeof *info);
    info->block_tokens = block_tokens;
    info->st = calloc(1, sizeof *info->st);
    if (!info->st) {
        rc = lt_errset(err, LT_ENOMEM, "info: out of memory");
        goto out;
    }
    lt_u64map_init(&info->st->blocks);
    lt_u64map_init(&info->st->sessions);
    info->st->pow10 = POW10_MAX;
    LT_TRY(new_hist(&info->gaps, UINT64_C(1) << 46, err)); /* ~2 years in us */
    LT_TRY(new_hist(&info->in.h, UINT32_MAX, err));
    LT_TRY(new_hist(&info->out.h, UINT32_MAX, err));
    LT_TRY(new_hist(&info->reasoning.h, UINT32_MAX, err));
    LT_TRY(new_hist(&info->cached.h, UINT32_MAX, err));
    LT_TRY(new_hist(&info->msgs, UINT32_MAX, err));
    LT_TRY(new_hist(&info->turns, UINT32_MAX, err));
    LT_TRY(new_hist(&info->image_w, LT_MEDIA_SIDE_MAX, err));
    LT_TRY(new_hist(&info->image_h, LT_MEDIA_SIDE_MAX, err));
    LT_TRY(new_hist(&info->image_bytes, UINT64_C(1) << 40, err));
    LT_TRY(new_hist(&info->images_per, LT_MEDIA_MAX, err));
out:
    if (rc < 0)
        lt_info_release(info);
    return rc;
}

void lt_info_release(struct lt_info *info)
{
    if (info->st) {
        lt_u64map_release(&info->st->blocks);
        lt_u64map_release(&info->st->sessions);
        free(info->st);
    }
    lt_hist_free(info->gaps);
    lt_hist_free(info->in.h);
    lt_hist_free(info->out.h);
    lt_hist_free(info->reasoning.h);
    lt_hist_free(info->cached.h);
    lt_hist_free(info->msgs);
    lt_hist_free(info->turns);
    lt_hist_free(info->image_w);
    lt_hist_free(info->image_h);
    lt_hist_free(info->image_bytes);
    lt_hist_free(info->images_per);
    memset(info, 0, sizeof *info);
}

static void count_name(struct lt_info_name *tab, uint32_t *n, uint64_t *other, const char *name)
{
    for (uint32_t i = 0; i < *n; i++)
        if (!strncmp(tab[i].name, name, LT_INFO_NAME_LEN - 1)) {
            tab[i].count++;
            return;
        }
    if (*n == LT_INFO_NAMES_MAX) {
        (*other)++;
        return;
    }
    snprintf(tab[*n].name, LT_INFO_NAME_LEN, "%s", name);
    tab[(*n)++].count = 1;
}

static void add_len(struct lt_info_len *l, uint32_t v)
{
    lt_hist_record(l->h, v);
    l->sum += v;
}

/* Close the run of records that share the previous t. */
static void end_same_run(struct lt_info *info)
{
    struct lt_info_state *st = info->st;
    if (st->same_run > 1)
        info->shared_t += st->same_run;
    if (st->same_run > info->max_same_t)
        info->max_same_t = st->same_run;
}

static void end_bins(struct lt_info *info)
{
    struct lt_info_state *st = info->st;
    if (st->sec_count > info->peak_sec) {
        info->peak_sec = st->sec_count;
        info->peak_sec_at_s = (double)st->sec_bin;
    }
    if (st->min_count > info->peak_min) {
        info->peak_min = st->min_count;
        info->peak_min_at_s = (double)st->min_bin * 60.0;
    }
}

static void add_arrival(struct lt_info *info, int64_t t)
{
    struct lt_info_state *st = info->st;
    if (!st->any) {
        st->any = true;
        info->t_first = info->t_last = t;
        st->prev_t = t;
        st->same_run = 1;
        info->distinct_t = 1;
        st->sec_count = st->min_count = 1;
        return;
    }
    if (t < st->prev_t) {
        info->out_of_order++;
        return;
    }
    uint64_t gap = (uint64_t)(t - st->prev_t);
    lt_hist_record(info->gaps, gap);
    st->gap_n++;
    double d = (double)gap - st->gap_mean;
    st->gap_mean += d / (double)st->gap_n;
    st->gap_m2 += d * ((double)gap - st->gap_mean);

    if (t == st->prev_t) {
        st->same_run++;
    } else {
        end_same_run(info);
        st->same_run = 1;
        info->distinct_t++;
    }
    int64_t rel = t - info->t_first;
    while (st->pow10 > 0 && rel % pow10_us[st->pow10] != 0)
        st->pow10--;
    int64_t sb = rel / SEC_US, mb = rel / MIN_US;
    if (sb != st->sec_bin || mb != st->min_bin) {
        end_bins(info);
        if (sb != st->sec_bin)
            st->sec_count = 0;
        if (mb != st->min_bin)
            st->min_count = 0;
        st->sec_bin = sb;
        st->min_bin = mb;
    }
    st->sec_count++;
    st->min_count++;
    st->prev_t = t;
    info->t_last = t;
}

static int add_blocks(struct lt_info *info, const struct lt_record *r, struct lt_err *err)
{
    struct lt_u64map *set = &info->st->blocks;
    bool prefix = true;
    info->with_blocks++;
    for (uint32_t i = 0; i < r->n_blocks; i++) {
        bool added;
        if (!lt_u64map_upsert(set, r->blocks[i], &added))
            return lt_errset(err, LT_ENOMEM, "info: out of memory for the set of %zu block ids",
                             set->len);
        info->blocks++;
        if (!added) {
            info->blocks_reused++;
            if (prefix)
                info->blocks_prefix_hit++;
            if (i == 0)
                info->records_reusing++;
        } else {
            prefix = false;
        }
    }
    return 0;
}

/* The record's media parts; a malformed key is counted, not fatal (the
 * rest of the record is still described). */
static void add_media(struct lt_info *info, const struct lt_record *r)
{
    struct lt_media v[LT_MEDIA_MAX];
    uint32_t n;
    struct lt_err e;
    if (lt_media_read(&r->extra, v, LT_MEDIA_MAX, &n, &e) < 0) {
        info->bad_media++;
        return;
    }
    uint32_t images = 0;
    bool audio = false, video = false;
    info->with_media += n > 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct lt_media *p = &v[i];
        if (p->kind == LT_MEDIA_IMAGE) {
            images++;
            info->images++;
            info->image_links += p->link;
            if (p->w && p->h) {
                lt_hist_record(info->image_w, p->w);
                lt_hist_record(info->image_h, p->h);
            }
            if (p->bytes)
                lt_hist_record(info->image_bytes, p->bytes);
            if (p->tokens) {
                info->images_counted++;
                info->image_tokens += p->tokens;
            }
            count_name(info->image_fmts, &info->n_image_fmts, &info->image_fmts_other,
                       p->fmt[0] ? p->fmt : "unknown");
        } else if (p->kind == LT_MEDIA_AUDIO) {
            audio = true;
            info->audio++;
            info->audio_s += (double)p->dur / 1e6;
        } else if (p->kind == LT_MEDIA_VIDEO) {
            video = true;
            info->videos++;
            info->video_frames += p->frames;
            info->video_s += (double)p->dur / 1e6;
        }
    }
    if (images) {
        lt_hist_record(info->images_per, images);
        if (images == 1)
            info->with_one_image++;
        else
            info->with_many_images++;
    }
    info->with_audio += audio;
    info->with_video += video;
}

int lt_info_add(struct lt_info *info, const struct lt_record *r, struct lt_err *err)
{
    uint32_t h = r->has;
    info->records++;
    add_arrival(info, r->t);
    if (h & LT_HAS_IN)
        add_len(&info->in, r->in);
    if (h & LT_HAS_OUT)
        add_len(&info->out, r->out);
    if (h & LT_HAS_REASONING)
        add_len(&info->reasoning, r->reasoning);
    if (h & LT_HAS_CACHED)
        add_len(&info->cached, r->cached);
    if ((h & LT_HAS_REASONING) && r->reasoning > 0)
        info->with_reasoning++;
    if (h & LT_HAS_FAILED)
        info->failed++;
    if (h & (LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS))
        info->cancelled++;
    if (h & LT_HAS_ESTIMATED)
        info->estimated++;
    if ((h & LT_HAS_TOOLS) && r->tools_count > 0)
        info->with_tools++;
    if ((h & LT_HAS_CALLS) && r->n_calls > 0) {
        info->with_calls++;
        info->calls += r->n_calls;
    }
    if (h & LT_HAS_MSGS) {
        info->with_msgs++;
        lt_hist_record(info->msgs, r->n_msgs);
    }
    if (h & LT_HAS_SESSION) {
        info->with_session++;
        uint64_t *turns = lt_u64map_upsert(&info->st->sessions, r->session, NULL);
        if (!turns)
            return lt_errset(err, LT_ENOMEM, "info: out of memory for the session map");
        (*turns)++;
    }
    if (h & LT_HAS_BLOCKS) {
        int rc = add_blocks(info, r, err);
        if (rc < 0)
            return rc;
    }
    if (r->model)
        count_name(info->models, &info->n_models, &info->models_other, r->model);
    if (r->api)
        count_name(info->apis, &info->n_apis, &info->apis_other, r->api);
    if (r->extra.n)
        add_media(info, r);
    return 0;
}

int lt_info_finish(struct lt_info *info, struct lt_err *err)
{
    struct lt_info_state *st = info->st;
    if (!st->any)
        return 0;
    end_same_run(info);
    end_bins(info);
    info->span_s = (double)(info->t_last - info->t_first) / 1e6;
    info->rate =
        info->span_s > 0 ? (double)(info->records - 1 - info->out_of_order) / info->span_s : 0.0;
    info->gap_mean_us = st->gap_mean;
    info->gap_sd_us = st->gap_n ? sqrt(st->gap_m2 / (double)st->gap_n) : 0.0;
    info->gap_cv = st->gap_mean > 0 ? info->gap_sd_us / st->gap_mean : 0.0;
    info->granularity_us =
        info->records > 1 && info->t_last > info->t_first ? pow10_us[st->pow10] : 0;
    info->distinct_blocks = st->blocks.len;
    info->sessions = st->sessions.len;
    const struct lt_u64map *s = &st->sessions;
    for (size_t i = 0; i < s->cap; i++)
        if (s->used[i])
            lt_hist_record(info->turns, s->vals[i]);
    return 0;
}

int lt_info_compute(const char *path, struct lt_info *info, char *source, size_t source_len,
                    struct lt_err *err)
{
    return lt_info_compute_progress(path, info, source, source_len, NULL, NULL, err);
}

int lt_info_compute_progress(const char *path, struct lt_info *info, char *source,
                             size_t source_len, void (*progress)(void *ud, uint64_t records),
                             void *ud, struct lt_err *err)
{
    int rc = 0;
    memset(info, 0, sizeof *info);
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EIO;
    const struct lt_header *h = lt_reader_header(r);
    if (source && source_len)
        snprintf(source, source_len, "%s", h->source ? h->source : "");
    LT_TRY(lt_info_init(info, h->block_tokens, err));
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        LT_TRY(lt_info_add(info, &it->rec, err));
        if (progress && info->records % LT_INFO_PROGRESS_EVERY == 0)
            progress(ud, info->records);
    }
    LT_TRY(n);
    LT_TRY(lt_info_finish(info, err));
out:
    lt_reader_close(r);
    if (rc < 0)
        lt_info_release(info);
    return rc;
}
