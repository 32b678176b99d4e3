/*
 * A trace's requests, loaded for a replay, and their split over the parts
 * of a job (plan_jobs.h).
 */
#include "plan/plan_jobs.h"
#include "base/lt_u64map.h"
#include "traces/trace_lengths.h"
#include "traces/trace_reader.h"

#include <stdlib.h>
#include <string.h>

/* A copy of n elements of `size` bytes at p, with `extra` zero bytes
 * after them (a NUL for text); NULL when out of memory. */
static void *dup_n(const void *p, size_t n, size_t size, size_t extra)
{
    char *d = malloc(n * size + extra);
    if (d) {
        memcpy(d, p, n * size);
        memset(d + n * size, 0, extra);
    }
    return d;
}

int lt_plan_jobs_load(struct lt_plan_jobs *js, const char *path, struct lt_err *err)
{
    int rc = 0;
    size_t cap = 0, ccap = 0;
    memset(js, 0, sizeof *js);
    struct lt_u64map last;
    lt_u64map_init(&last);
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EIO;
    js->block_tokens = lt_reader_header(r)->block_tokens;
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if (it->type != LT_ITEM_RECORD)
            continue;
        if (js->n == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            struct lt_plan_job *j = realloc(js->v, nc * sizeof *j);
            if (!j) {
                rc = lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
                goto out;
            }
            js->v = j;
            cap = nc;
        }
        const struct lt_record *rec = &it->rec;
        struct lt_plan_job *j = &js->v[js->n];
        memset(j, 0, sizeof *j);
        j->index = it->index;
        j->t = rec->t;
        j->has = rec->has;
        j->session = rec->session;
        j->turn = rec->turn;
        j->think = rec->think;
        j->in = rec->in;
        j->out = rec->out;
        j->reasoning = rec->reasoning;
        j->max_tokens = rec->max_tokens;
        j->tools_count = rec->tools_count;
        j->tools_tokens = rec->tools_tokens;
        if (rec->has & (LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS)) {
            if (js->n_cancels == ccap) {
                size_t nc = ccap ? ccap * 2 : 64;
                struct lt_plan_cancel_rec *c = realloc(js->cancels, nc * sizeof *c);
                if (!c)
                    goto oom;
                js->cancels = c;
                ccap = nc;
            }
            js->cancels[js->n_cancels++] = (struct lt_plan_cancel_rec){
                .index = it->index,
                .after = rec->cancel_after,
                .tokens = rec->cancel_tokens,
                .has = rec->has & (LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS)};
        }
        j->prev = j->next = -1;
        js->n++;
        if (rec->n_msgs) {
            if (!(j->msgs = dup_n(rec->msgs, rec->n_msgs, sizeof *j->msgs, 0)))
                goto oom;
            j->n_msgs = rec->n_msgs;
        }
        if (rec->n_blocks) {
            if (!(j->blocks = dup_n(rec->blocks, rec->n_blocks, sizeof *j->blocks, 0)))
                goto oom;
            j->n_blocks = rec->n_blocks;
        }
        if (rec->text) {
            if (!(j->text = dup_n(rec->text, rec->text_len, 1, 1)))
                goto oom;
            j->text_len = rec->text_len;
        }
        if (rec->has & LT_HAS_SESSION) {
            bool added;
            uint64_t *v = lt_u64map_upsert(&last, rec->session, &added);
            if (!v)
                goto oom;
            if (!added) {
                j->prev = (int64_t)*v - 1;
                js->v[j->prev].next = (int64_t)js->n - 1;
            }
            *v = js->n; /* job index + 1 */
        }
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    if (js->n == 0)
        rc = lt_errset(err, LT_EFORMAT, "%s: the trace holds no requests", path);
    goto out;
oom:
    rc = lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
out:
    lt_u64map_release(&last);
    lt_reader_free(r);
    if (rc < 0)
        lt_plan_jobs_release(js);
    return rc;
}

void lt_plan_jobs_release(struct lt_plan_jobs *js)
{
    for (size_t i = 0; i < js->n; i++) {
        free(js->v[i].msgs);
        free(js->v[i].blocks);
        free(js->v[i].text);
    }
    free(js->v);
    free(js->cancels);
    memset(js, 0, sizeof *js);
}

struct lt_plan_cancel lt_plan_job_cancel(const struct lt_plan_jobs *js,
                                         const struct lt_plan_job *job)
{
    struct lt_plan_cancel c = {LT_PLAN_CANCEL_NONE, 0, 0};
    if (!(job->has & (LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS)))
        return c;
    size_t lo = 0, hi = js->n_cancels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (js->cancels[mid].index < job->index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == js->n_cancels || js->cancels[lo].index != job->index)
        return c;
    const struct lt_plan_cancel_rec *r = &js->cancels[lo];
    bool tokens = r->has & LT_HAS_CANCEL_TOKENS, after = r->has & LT_HAS_CANCEL_AFTER;
    /* The token count is what the user saw, whatever the server's speed:
     * it wins over the time when a record has both. */
    if (tokens && r->tokens > 0)
        c = (struct lt_plan_cancel){LT_PLAN_CANCEL_TOKENS, r->tokens, 0};
    else if (after)
        c = (struct lt_plan_cancel){LT_PLAN_CANCEL_TIME, 0, r->after};
    else
        c.by = LT_PLAN_CANCEL_FIRST;
    return c;
}

void lt_plan_job_lengths(const struct lt_plan_job *job, uint32_t default_out, uint32_t *want_in,
                         uint32_t *want_out)
{
    /* The job holds the record's fields; view them as a record for the
     * shared length rule. */
    const struct lt_record view = {.has = job->has,
                                   .in = job->in,
                                   .msgs = job->msgs,
                                   .n_msgs = job->n_msgs,
                                   .out = job->out,
                                   .max_tokens = job->max_tokens};
    lt_record_lengths(&view, default_out, want_in, want_out);
}

void lt_plan_split(const struct lt_plan_job *jobs, size_t n, uint32_t parts, uint32_t *out)
{
    /* load[] is tiny (one per process): a linear scan per session is fine. */
    uint64_t load[LT_PLAN_MAX_PARTS] = {0};
    if (parts < 1)
        parts = 1;
    if (parts > LT_PLAN_MAX_PARTS)
        parts = LT_PLAN_MAX_PARTS;
    for (size_t j = 0; j < n; j++) {
        uint32_t p = 0;
        if (jobs[j].prev >= 0) {
            p = out[jobs[j].prev]; /* a later turn follows its session */
        } else {
            for (uint32_t k = 1; k < parts; k++)
                if (load[k] < load[p])
                    p = k;
        }
        out[j] = p;
        load[p] += 1024u + (uint64_t)jobs[j].in + jobs[j].out;
    }
}
