/*
 * A trace's requests, loaded for a replay, and their split over the parts
 * of a job (plan_jobs.h).
 */
#include "plan/plan_jobs.h"
#include "base/lt_u64map.h"
#include "base/lt_vmem.h"
#include "traces/trace_lengths.h"
#include "traces/trace_reader.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A slab of the jobs' messages, blocks and texts (8-byte aligned). */
struct lt_plan_slab {
    struct lt_plan_slab *next;
    size_t used, cap; /* in 8-byte words */
    size_t last;      /* the highest job index with something here */
    uint64_t w[];
};

#define SLAB_WORDS ((size_t)1 << 17) /* 1 MiB */

/* A streamed trace (lt_plan_jobs_open): what is read, held and dropped. */
struct lt_plan_stream {
    char *path;
    struct lt_reader *r; /* the reading in progress; NULL before the first need */
    size_t loaded;       /* jobs [dropped, loaded) are held */
    size_t dropped;
    struct lt_vmem vm; /* v: room for n jobs */
    struct lt_plan_slab *slabs;
    /* session -> its latest turn read: job index + 1, or once that turn is
     * over and its next turn not read yet, ENDED | its prev_end for the
     * next turn (0 for LT_PLAN_TURN_CUT) */
    struct lt_u64map last;
};

#define ENDED ((uint64_t)1 << 63)

/* len bytes from the slabs at *head for job `job`; NULL when out of
 * memory. An item over a quarter of a slab gets a slab of its own, behind
 * the one being filled. */
static void *slab_alloc(struct lt_plan_slab **head, size_t len, size_t job)
{
    size_t words = (len + 7) / 8;
    struct lt_plan_slab *s = *head;
    if (s && s->cap - s->used >= words) {
        void *p = s->w + s->used;
        s->used += words;
        s->last = job;
        return p;
    }
    bool own = words > SLAB_WORDS / 4;
    size_t cap = own ? words : SLAB_WORDS;
    struct lt_plan_slab *n = malloc(sizeof *n + cap * 8);
    if (!n)
        return NULL;
    n->cap = cap;
    n->used = words;
    n->last = job;
    if (own && s) {
        n->next = s->next;
        s->next = n;
    } else {
        n->next = s;
        *head = n;
    }
    return n->w;
}

/* A copy of n elements of `size` bytes at p, with `extra` zero bytes
 * after them (a NUL for text), in the slabs; NULL when out of memory. */
static void *dup_n(struct lt_plan_slab **head, size_t job, const void *p, size_t n, size_t size,
                   size_t extra)
{
    char *d = slab_alloc(head, n * size + extra, job);
    if (d) {
        memcpy(d, p, n * size);
        memset(d + n * size, 0, extra);
    }
    return d;
}

/* Checks every reading of a record makes (the first pass of a streamed
 * trace, or the only one). */
static int check_record(struct lt_plan_jobs *js, const char *path, const struct lt_item *it,
                        size_t *ccap, struct lt_err *err)
{
    const struct lt_record *rec = &it->rec;
    if (rec->t >= 0) {
        if (!js->n_nonneg++)
            js->t_first = rec->t;
        js->t_last = rec->t;
    }
    if (js->n >= LT_PLAN_MAX_JOBS)
        return lt_errset(err, LT_EINVAL, "%s: more than %zu requests: a replay holds at most that",
                         path, LT_PLAN_MAX_JOBS);
    if (rec->text && rec->text_len > UINT32_MAX) /* above the reader's limits */
        return lt_errset(err, LT_EFORMAT, "%s: record %llu: a text of %zu bytes", path,
                         (unsigned long long)it->index, rec->text_len);
    if (rec->has & (LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS)) {
        if (js->n_cancels == *ccap) {
            size_t nc = *ccap ? *ccap * 2 : 64;
            struct lt_plan_cancel_rec *c = realloc(js->cancels, nc * sizeof *c);
            if (!c)
                return lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
            js->cancels = c;
            *ccap = nc;
        }
        js->cancels[js->n_cancels++] = (struct lt_plan_cancel_rec){
            .index = it->index,
            .after = rec->cancel_after,
            .tokens = rec->cancel_tokens,
            .has = rec->has & (LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS)};
    }
    return 0;
}

/* Job j (index idx) from a record, its messages, blocks and text copied
 * into the slabs at *head; prev and next not linked yet. */
static int fill_job(struct lt_plan_job *j, size_t idx, const struct lt_item *it,
                    struct lt_plan_slab **head, struct lt_err *err)
{
    const struct lt_record *rec = &it->rec;
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
    j->prev = j->next = -1;
    if (rec->n_msgs) {
        if (!(j->msgs = dup_n(head, idx, rec->msgs, rec->n_msgs, sizeof *j->msgs, 0)))
            goto oom;
        j->n_msgs = rec->n_msgs;
    }
    if (rec->n_blocks) {
        if (!(j->blocks = dup_n(head, idx, rec->blocks, rec->n_blocks, sizeof *j->blocks, 0)))
            goto oom;
        j->n_blocks = rec->n_blocks;
    }
    if (rec->text) {
        if (!(j->text = dup_n(head, idx, rec->text, rec->text_len, 1, 1)))
            goto oom;
        j->text_len = (uint32_t)rec->text_len;
    }
    return 0;
oom:
    return lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
}

/* Link job idx of v to its session's previous turn (last: see struct
 * lt_plan_stream). The previous turn's next is set only when it is still
 * held (>= held_from). */
static int link_session(struct lt_plan_job *v, size_t idx, struct lt_u64map *last, size_t held_from,
                        struct lt_err *err)
{
    struct lt_plan_job *j = &v[idx];
    if (!(j->has & LT_HAS_SESSION))
        return 0;
    bool added;
    uint64_t *p = lt_u64map_upsert(last, j->session, &added);
    if (!p)
        return lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
    if (!added && *p & ENDED) {
        j->prev = LT_PLAN_PREV_GONE;
        j->prev_end = *p & ~ENDED ? (int64_t)(*p & ~ENDED) : LT_PLAN_TURN_CUT;
    } else if (!added) {
        j->prev = (int32_t)(*p - 1);
        if ((size_t)j->prev >= held_from)
            v[j->prev].next = (int32_t)idx;
    }
    *p = idx + 1;
    return 0;
}

int lt_plan_jobs_load(struct lt_plan_jobs *js, const char *path, struct lt_err *err)
{
    int rc = 0;
    size_t cap = 0, ccap = 0;
    memset(js, 0, sizeof *js);
    js->t_first = js->t_last = -1;
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
        if ((rc = check_record(js, path, it, &ccap, err)) < 0)
            goto out;
        if (js->n == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            struct lt_plan_job *j = realloc(js->v, nc * sizeof *j);
            if (!j)
                goto oom;
            js->v = j;
            cap = nc;
        }
        if ((rc = fill_job(&js->v[js->n], js->n, it, &js->slabs, err)) < 0)
            goto out;
        js->n++;
        if ((rc = link_session(js->v, js->n - 1, &last, 0, err)) < 0)
            goto out;
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

/* ---- a streamed trace ---- */

int lt_plan_jobs_open(struct lt_plan_jobs *js, const char *path, struct lt_err *err)
{
    int rc = 0;
    size_t ccap = 0;
    memset(js, 0, sizeof *js);
    js->t_first = js->t_last = -1;
    struct lt_plan_stream *s = calloc(1, sizeof *s);
    if (!s)
        return lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
    js->stream = s;
    lt_u64map_init(&s->last);
    if (!(s->path = strdup(path))) {
        lt_plan_jobs_release(js);
        return lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
    }
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_TRACE, NULL, err);
    if (!r) {
        rc = err ? err->code : LT_EIO;
        goto out;
    }
    js->block_tokens = lt_reader_header(r)->block_tokens;
    const struct lt_item *it;
    int n;
    /* The first pass: every record read and checked (a bad one is found
     * before anything is sent, as with lt_plan_jobs_load). */
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if (it->type != LT_ITEM_RECORD)
            continue;
        if ((rc = check_record(js, path, it, &ccap, err)) < 0)
            goto out;
        js->n++;
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    if (js->n == 0) {
        rc = lt_errset(err, LT_EFORMAT, "%s: the trace holds no requests", path);
        goto out;
    }
    if (lt_vmem_map(&s->vm, js->n * sizeof *js->v) < 0)
        goto oom;
    js->v = s->vm.p;
    goto out;
oom:
    rc = lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
out:
    lt_reader_free(r);
    if (rc < 0)
        lt_plan_jobs_release(js);
    return rc;
}

static void free_slabs(struct lt_plan_slab **head)
{
    while (*head) {
        struct lt_plan_slab *s = *head;
        *head = s->next;
        free(s);
    }
}

/* Back to before the first need: every job dropped, the reading closed. */
static void stream_reset(const struct lt_plan_jobs *js)
{
    struct lt_plan_stream *s = js->stream;
    free_slabs(&s->slabs);
    if (s->loaded)
        lt_vmem_clear(&s->vm);
    s->loaded = s->dropped = 0;
    lt_u64map_release(&s->last);
    lt_u64map_init(&s->last);
    lt_reader_free(s->r);
    s->r = NULL;
}

int lt_plan_jobs_need(const struct lt_plan_jobs *js, size_t from, size_t upto, struct lt_err *err)
{
    struct lt_plan_stream *s = js->stream;
    if (!s)
        return 0;
    if (upto > js->n)
        upto = js->n;
    if (from < s->dropped)
        stream_reset(js);
    if (!s->r && s->loaded < upto &&
        !(s->r = lt_reader_open_kind(s->path, LT_KIND_TRACE, NULL, err)))
        return err ? err->code : LT_EIO;
    while (s->loaded < upto) {
        const struct lt_item *it;
        int n = lt_reader_next(s->r, &it, err);
        if (n < 0)
            return n;
        if (n == 0)
            return lt_errset(err, LT_EFORMAT,
                             "%s: the trace ended after %zu of %zu requests: "
                             "it changed while it was replayed",
                             s->path, s->loaded, js->n);
        if (it->type != LT_ITEM_RECORD)
            continue;
        int rc = fill_job(&js->v[s->loaded], s->loaded, it, &s->slabs, err);
        if (rc < 0)
            return rc;
        s->loaded++;
        if ((rc = link_session(js->v, s->loaded - 1, &s->last, s->dropped, err)) < 0)
            return rc;
    }
    if (s->loaded == js->n && s->r) { /* every record read: the file is closed */
        lt_reader_free(s->r);
        s->r = NULL;
    }
    return 0;
}

void lt_plan_jobs_drop(const struct lt_plan_jobs *js, size_t below)
{
    struct lt_plan_stream *s = js->stream;
    if (!s)
        return;
    if (below > s->loaded)
        below = s->loaded;
    if (below <= s->dropped)
        return;
    s->dropped = below;
    lt_vmem_give_back(&s->vm, below * sizeof *js->v);
    /* whole slabs */
    for (struct lt_plan_slab **pp = &s->slabs; *pp;) {
        struct lt_plan_slab *sl = *pp;
        if (sl->last < below) {
            *pp = sl->next;
            free(sl);
        } else {
            pp = &sl->next;
        }
    }
}

size_t lt_plan_jobs_held(const struct lt_plan_jobs *js)
{
    return js->stream ? js->stream->loaded - js->stream->dropped : js->n;
}

size_t lt_plan_jobs_loaded(const struct lt_plan_jobs *js)
{
    return js->stream ? js->stream->loaded : js->n;
}

void lt_plan_jobs_rewind(const struct lt_plan_jobs *js)
{
    if (js->stream)
        stream_reset(js);
}

int lt_plan_jobs_each_time(const struct lt_plan_jobs *js, void (*fn)(void *ud, int64_t t), void *ud,
                           struct lt_err *err)
{
    struct lt_plan_stream *s = js->stream;
    if (!s) {
        for (size_t j = 0; j < js->n; j++)
            fn(ud, js->v[j].t);
        return 0;
    }
    struct lt_reader *r = lt_reader_open_kind(s->path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EIO;
    size_t k = 0;
    const struct lt_item *it;
    int n = 0;
    while (k < js->n && (n = lt_reader_next(r, &it, err)) == 1)
        if (it->type == LT_ITEM_RECORD) {
            fn(ud, it->rec.t);
            k++;
        }
    lt_reader_free(r);
    if (k < js->n)
        return n < 0 ? n
                     : lt_errset(err, LT_EFORMAT, "%s: the trace changed while it was replayed",
                                 s->path);
    return 0;
}

void lt_plan_jobs_turn_over(const struct lt_plan_jobs *js, size_t j, int64_t prev_end)
{
    struct lt_plan_job *job = &js->v[j];
    if (job->next >= 0) {
        js->v[job->next].prev_end = prev_end;
        return;
    }
    /* Not linked: no later turn, or (streamed) one not read yet, which
     * finds the end with the session when it is read. */
    if (!js->stream || !(job->has & LT_HAS_SESSION))
        return;
    uint64_t *v = lt_u64map_get(&js->stream->last, job->session);
    if (v && *v == j + 1)
        *v = ENDED | (prev_end == LT_PLAN_TURN_CUT ? 0 : (uint64_t)prev_end);
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
    free_slabs(&js->slabs);
    struct lt_plan_stream *s = js->stream;
    if (s) {
        free_slabs(&s->slabs);
        lt_reader_free(s->r);
        lt_u64map_release(&s->last);
        free(s->path);
        lt_vmem_release(&s->vm);
        free(s);
    } else {
        free(js->v);
    }
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
