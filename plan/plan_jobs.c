/*
 * A trace's requests, loaded for a replay, and their split over the parts
 * of a job (plan_jobs.h).
 */
#include "plan/plan_jobs.h"
#include "base/lt_u64map.h"
#include "traces/trace_lengths.h"
#include "traces/trace_reader.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A slab of the jobs' messages, blocks and texts (8-byte aligned). */
struct lt_plan_slab {
    struct lt_plan_slab *next;
    size_t used, cap; /* in 8-byte words */
    uint64_t w[];
};

#define SLAB_WORDS ((size_t)1 << 17) /* 1 MiB */

/* len bytes from the jobs' slabs; NULL when out of memory. An item over
 * a quarter of a slab gets a slab of its own, behind the one being
 * filled. */
static void *slab_alloc(struct lt_plan_jobs *js, size_t len)
{
    size_t words = (len + 7) / 8;
    struct lt_plan_slab *s = js->slabs;
    if (s && s->cap - s->used >= words) {
        void *p = s->w + s->used;
        s->used += words;
        return p;
    }
    bool own = words > SLAB_WORDS / 4;
    size_t cap = own ? words : SLAB_WORDS;
    struct lt_plan_slab *n = malloc(sizeof *n + cap * 8);
    if (!n)
        return NULL;
    n->cap = cap;
    n->used = words;
    if (own && s) {
        n->next = s->next;
        s->next = n;
    } else {
        n->next = s;
        js->slabs = n;
    }
    return n->w;
}

/* A copy of n elements of `size` bytes at p, with `extra` zero bytes
 * after them (a NUL for text), in the slabs; NULL when out of memory. */
static void *dup_n(struct lt_plan_jobs *js, const void *p, size_t n, size_t size, size_t extra)
{
    char *d = slab_alloc(js, n * size + extra);
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
        if (js->n >= LT_PLAN_MAX_JOBS) {
            rc =
                lt_errset(err, LT_EINVAL, "%s: more than %zu requests: a replay holds at most that",
                          path, LT_PLAN_MAX_JOBS);
            goto out;
        }
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
            if (!(j->msgs = dup_n(js, rec->msgs, rec->n_msgs, sizeof *j->msgs, 0)))
                goto oom;
            j->n_msgs = rec->n_msgs;
        }
        if (rec->n_blocks) {
            if (!(j->blocks = dup_n(js, rec->blocks, rec->n_blocks, sizeof *j->blocks, 0)))
                goto oom;
            j->n_blocks = rec->n_blocks;
        }
        if (rec->text) {
            if (rec->text_len > UINT32_MAX) { /* above the reader's limits */
                rc = lt_errset(err, LT_EFORMAT, "%s: record %llu: a text of %zu bytes", path,
                               (unsigned long long)it->index, rec->text_len);
                goto out;
            }
            if (!(j->text = dup_n(js, rec->text, rec->text_len, 1, 1)))
                goto oom;
            j->text_len = (uint32_t)rec->text_len;
        }
        if (rec->has & LT_HAS_SESSION) {
            bool added;
            uint64_t *v = lt_u64map_upsert(&last, rec->session, &added);
            if (!v)
                goto oom;
            if (!added) {
                j->prev = (int32_t)(*v - 1);
                js->v[j->prev].next = (int32_t)(js->n - 1);
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

int lt_plan_sample(const struct lt_plan_jobs *js, int64_t win_start_us, int64_t win_end_us,
                   uint64_t max_requests, uint8_t *keep, struct lt_plan_sample *s,
                   struct lt_err *err)
{
    struct lt_plan_sample sm = {.of_requests = js->n};
    bool full = false;     /* max_requests reached: no later session starts */
    uint64_t admitted = 0; /* requests of the sessions kept so far, later turns included */
    /* A job's previous turn comes before it (prev < j), so one pass
     * decides each session at its first request and copies the decision
     * to its later turns. */
    for (size_t j = 0; j < js->n; j++) {
        const struct lt_plan_job *job = &js->v[j];
        bool sess = job->has & LT_HAS_SESSION;
        if (job->prev >= 0) {
            keep[j] = keep[job->prev];
        } else {
            sm.of_sessions += sess;
            bool in = job->t >= win_start_us && (win_end_us <= 0 || job->t < win_end_us);
            uint64_t size = 1;
            if (in && max_requests && full) {
                in = false;
            } else if (in && max_requests) {
                for (int32_t k = job->next; k >= 0; k = js->v[k].next)
                    size++;
                if (admitted + size > max_requests) {
                    if (admitted == 0) /* only a session can be larger than 1 */
                        return lt_errset(err, LT_EINVAL,
                                         "--requests %llu: the first session to replay (record "
                                         "%llu) has %llu requests, and a sample keeps sessions "
                                         "whole: ask for at least %llu",
                                         (unsigned long long)max_requests,
                                         (unsigned long long)job->index, (unsigned long long)size,
                                         (unsigned long long)size);
                    full = true;
                    in = false;
                }
            }
            keep[j] = in;
            admitted += in ? size : 0;
            sm.sessions += in && sess;
        }
        sm.requests += keep[j];
    }
    if (s)
        *s = sm;
    return 0;
}

void lt_plan_jobs_release(struct lt_plan_jobs *js)
{
    while (js->slabs) {
        struct lt_plan_slab *s = js->slabs;
        js->slabs = s->next;
        free(s);
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
