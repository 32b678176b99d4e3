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
    size_t loaded;       /* jobs [dropped, loaded) are held (positions: see npos) */
    size_t dropped;
    size_t npos;       /* positions v has room for: n, or laps of the trace (lt_plan_jobs_laps) */
    struct lt_vmem vm; /* v: room for n jobs */
    struct lt_plan_slab *slabs;
    /* session -> its latest turn read: job index + 1, or once that turn is
     * over and its next turn not read yet, ENDED | its prev_end for the
     * next turn + 1 (0 for LT_PLAN_TURN_CUT, 1 for LT_PLAN_TURN_OUT) */
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

/* The record's media parts, into js's table (a malformed key is kept as
 * such: the request fails alone, the trace is still replayed). */
static int keep_media(struct lt_plan_jobs *js, const struct lt_item *it, struct lt_err *err)
{
    struct lt_media v[LT_MEDIA_MAX];
    uint32_t n = 0;
    struct lt_err why;
    bool bad = lt_media_read(&it->rec.extra, v, LT_MEDIA_MAX, &n, &why) < 0;
    if (!bad && !n)
        return 0;
    if (bad)
        n = 0;
    if (js->n_media == js->media_cap) {
        size_t nc = js->media_cap ? js->media_cap * 2 : 64;
        struct lt_plan_media_rec *m = realloc(js->media, nc * sizeof *m);
        if (!m)
            return lt_errset(err, LT_ENOMEM, "out of memory reading the trace's media");
        js->media = m;
        js->media_cap = nc;
    }
    if (js->n_media_parts + n > js->media_parts_cap) {
        size_t nc = js->media_parts_cap ? js->media_parts_cap * 2 : 64;
        while (nc < js->n_media_parts + n)
            nc *= 2;
        struct lt_media *p = realloc(js->media_parts, nc * sizeof *p);
        if (!p)
            return lt_errset(err, LT_ENOMEM, "out of memory reading the trace's media");
        js->media_parts = p;
        js->media_parts_cap = nc;
    }
    struct lt_plan_media_rec *r = &js->media[js->n_media++];
    memset(r, 0, sizeof *r);
    r->index = it->index;
    r->first = (uint32_t)js->n_media_parts;
    r->n = n;
    r->bad = bad;
    if (bad) { /* cut to fit: the first words say what */
        size_t wl = strnlen(why.msg, sizeof r->why - 1);
        memcpy(r->why, why.msg, wl);
        r->why[wl] = 0;
    }
    memcpy(js->media_parts + js->n_media_parts, v, n * sizeof *v);
    js->n_media_parts += n;
    return 0;
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
    if (rec->extra.n)
        return keep_media(js, it, err);
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
        uint64_t e = *p & ~ENDED;
        j->prev = LT_PLAN_PREV_GONE;
        j->prev_end = e == 0 ? LT_PLAN_TURN_CUT : e == 1 ? LT_PLAN_TURN_OUT : (int64_t)(e - 1);
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
    lt_reader_close(r);
    if (rc < 0)
        lt_plan_jobs_close(js);
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
        lt_plan_jobs_close(js);
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
    s->npos = js->n;
    goto out;
oom:
    rc = lt_errset(err, LT_ENOMEM, "out of memory reading the trace");
out:
    lt_reader_close(r);
    if (rc < 0)
        lt_plan_jobs_close(js);
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
    lt_reader_close(s->r);
    s->r = NULL;
}

int lt_plan_jobs_laps(const struct lt_plan_jobs *js, size_t npos, struct lt_err *err)
{
    struct lt_plan_stream *s = js->stream;
    if (!s || npos == s->npos)
        return 0;
    if (npos > LT_PLAN_MAX_JOBS)
        return lt_errset(err, LT_EINVAL, "%zu requests: a replay sends at most %zu", npos,
                         LT_PLAN_MAX_JOBS);
    stream_reset(js);
    struct lt_vmem vm;
    if (lt_vmem_map(&vm, npos * sizeof *js->v) < 0)
        return lt_errset(err, LT_ENOMEM, "out of memory planning %zu requests", npos);
    lt_vmem_release(&s->vm);
    s->vm = vm;
    ((struct lt_plan_jobs *)js)->v = vm.p; /* the stream's own mapping */
    s->npos = npos;
    return 0;
}

int lt_plan_jobs_need(const struct lt_plan_jobs *js, size_t from, size_t upto, struct lt_err *err)
{
    struct lt_plan_stream *s = js->stream;
    if (!s)
        return 0;
    if (upto > s->npos)
        upto = s->npos;
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
        if (n == 0 && s->loaded % js->n == 0) {
            /* the next lap: the trace from its start, its sessions anew */
            lt_reader_close(s->r);
            lt_u64map_release(&s->last);
            lt_u64map_init(&s->last);
            if (!(s->r = lt_reader_open_kind(s->path, LT_KIND_TRACE, NULL, err)))
                return err ? err->code : LT_EIO;
            continue;
        }
        if (n == 0)
            return lt_errset(err, LT_EFORMAT,
                             "%s: the trace ended after %zu of %zu requests: "
                             "it changed while it was replayed",
                             s->path, s->loaded % js->n, js->n);
        if (it->type != LT_ITEM_RECORD)
            continue;
        int rc = fill_job(&js->v[s->loaded], s->loaded, it, &s->slabs, err);
        if (rc < 0)
            return rc;
        s->loaded++;
        if ((rc = link_session(js->v, s->loaded - 1, &s->last, s->dropped, err)) < 0)
            return rc;
    }
    if (s->loaded == s->npos && s->r) { /* every record read: the file is closed */
        lt_reader_close(s->r);
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

int lt_plan_jobs_each(const struct lt_plan_jobs *js,
                      int (*fn)(void *ud, const struct lt_plan_rec_key *k), void *ud,
                      struct lt_err *err)
{
    struct lt_plan_stream *s = js->stream;
    int rc = 0;
    if (!s) {
        for (size_t j = 0; j < js->n && rc >= 0; j++) {
            const struct lt_plan_job *v = &js->v[j];
            const struct lt_plan_rec_key k = {
                j,         v->index,    v->t,  v->session, (v->has & LT_HAS_SESSION) != 0,
                v->blocks, v->n_blocks, v->in, v->out};
            rc = fn(ud, &k);
        }
        return rc < 0 ? rc : 0;
    }
    struct lt_reader *r = lt_reader_open_kind(s->path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EIO;
    size_t j = 0;
    const struct lt_item *it;
    int n = 0;
    while (rc >= 0 && j < js->n && (n = lt_reader_next(r, &it, err)) == 1)
        if (it->type == LT_ITEM_RECORD) {
            const struct lt_record *rec = &it->rec;
            const struct lt_plan_rec_key k = {
                j++,         it->index,     rec->t,  rec->session, (rec->has & LT_HAS_SESSION) != 0,
                rec->blocks, rec->n_blocks, rec->in, rec->out};
            rc = fn(ud, &k);
        }
    lt_reader_close(r);
    if (rc < 0)
        return rc;
    if (j < js->n)
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
        *v = ENDED | (prev_end == LT_PLAN_TURN_CUT   ? 0
                      : prev_end == LT_PLAN_TURN_OUT ? 1
                                                     : (uint64_t)prev_end + 1);
}

#define S_DECIDED ((uint64_t)1 << 63)
#define S_KEPT ((uint64_t)1 << 62)

void lt_plan_jobs_sampler_init(struct lt_plan_jobs_sampler *s, int64_t win_start_us,
                               int64_t win_end_us, uint64_t max_requests)
{
    *s = (struct lt_plan_jobs_sampler){
        .ws = win_start_us, .we = win_end_us, .max = max_requests, .first_out = SIZE_MAX};
    lt_u64map_init(&s->sess);
}

void lt_plan_jobs_sampler_release(struct lt_plan_jobs_sampler *s)
{
    lt_u64map_release(&s->sess);
}

int lt_plan_jobs_sampler_count(struct lt_plan_jobs_sampler *s, const struct lt_plan_rec_key *k,
                               struct lt_err *err)
{
    if (!k->has_session)
        return 0;
    uint64_t *v = lt_u64map_upsert(&s->sess, k->session, NULL);
    if (!v)
        return lt_errset(err, LT_ENOMEM, "out of memory sampling the trace");
    ++*v;
    return 0;
}

int lt_plan_jobs_sampler_keep(struct lt_plan_jobs_sampler *s, const struct lt_plan_rec_key *k,
                              bool *keep, struct lt_err *err)
{
    struct lt_plan_jobs_sample *sm = &s->sm;
    uint64_t *v = NULL;
    bool in_window = k->t >= s->ws && (s->we <= 0 || k->t < s->we);
    if (s->again) {
        const uint64_t *d = k->has_session ? lt_u64map_get(&s->sess, k->session) : NULL;
        *keep = d && (*d & S_DECIDED) ? (*d & S_KEPT) != 0 : in_window && k->idx < s->first_out;
        return 0;
    }
    sm->of_requests++;
    if (k->has_session) {
        if (!(v = lt_u64map_upsert(&s->sess, k->session, NULL)))
            return lt_errset(err, LT_ENOMEM, "out of memory sampling the trace");
        if (*v & S_DECIDED) { /* a later turn: as its session's first */
            *keep = (*v & S_KEPT) != 0;
            sm->requests += *keep;
            return 0;
        }
    }
    /* A session's first request decides for all of it. */
    sm->of_sessions += k->has_session;
    bool in = in_window;
    uint64_t size = v && *v ? *v : 1; /* counted, with max_requests */
    if (in && s->max && s->full) {
        in = false;
    } else if (in && s->max && s->admitted + size > s->max) {
        if (s->admitted == 0) /* only a session can be larger than 1 */
            return lt_errset(err, LT_EUSAGE,
                             "--requests %llu: the first session to replay (record %llu) has "
                             "%llu requests, and a sample keeps sessions whole: ask for at "
                             "least %llu",
                             (unsigned long long)s->max, (unsigned long long)k->index,
                             (unsigned long long)size, (unsigned long long)size);
        s->full = true;
        s->first_out = k->idx;
        in = false;
    }
    if (v)
        *v = S_DECIDED | (in ? S_KEPT : 0);
    s->admitted += in ? size : 0;
    sm->sessions += in && k->has_session;
    sm->requests += in;
    *keep = in;
    return 0;
}

void lt_plan_jobs_sampler_again(struct lt_plan_jobs_sampler *s)
{
    s->again = true;
}

struct sample_walk {
    struct lt_plan_jobs_sampler *s;
    uint8_t *keep;
    struct lt_err *err;
};

static int sample_count(void *ud, const struct lt_plan_rec_key *k)
{
    struct sample_walk *w = ud;
    return lt_plan_jobs_sampler_count(w->s, k, w->err);
}

static int sample_keep(void *ud, const struct lt_plan_rec_key *k)
{
    struct sample_walk *w = ud;
    bool in = false;
    int rc = lt_plan_jobs_sampler_keep(w->s, k, &in, w->err);
    w->keep[k->idx] = in;
    return rc;
}

int lt_plan_jobs_sample(const struct lt_plan_jobs *js, int64_t win_start_us, int64_t win_end_us,
                        uint64_t max_requests, uint8_t *keep, struct lt_plan_jobs_sample *s,
                        struct lt_err *err)
{
    struct lt_plan_jobs_sampler sp;
    lt_plan_jobs_sampler_init(&sp, win_start_us, win_end_us, max_requests);
    struct sample_walk w = {&sp, keep, err};
    int rc = 0;
    if (max_requests)
        rc = lt_plan_jobs_each(js, sample_count, &w, err);
    if (rc >= 0)
        rc = lt_plan_jobs_each(js, sample_keep, &w, err);
    if (rc >= 0 && s)
        *s = sp.sm;
    lt_plan_jobs_sampler_release(&sp);
    return rc < 0 ? rc : 0;
}

void lt_plan_jobs_close(struct lt_plan_jobs *js)
{
    free_slabs(&js->slabs);
    struct lt_plan_stream *s = js->stream;
    if (s) {
        free_slabs(&s->slabs);
        lt_reader_close(s->r);
        lt_u64map_release(&s->last);
        free(s->path);
        lt_vmem_release(&s->vm);
        free(s);
    } else {
        free(js->v);
    }
    free(js->cancels);
    free(js->media);
    free(js->media_parts);
    memset(js, 0, sizeof *js);
}

const struct lt_plan_media_rec *lt_plan_job_media(const struct lt_plan_jobs *js,
                                                  const struct lt_plan_job *job,
                                                  const struct lt_media **parts)
{
    *parts = NULL;
    size_t lo = 0, hi = js->n_media;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (js->media[mid].index < job->index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == js->n_media || js->media[lo].index != job->index)
        return NULL;
    *parts = js->media_parts + js->media[lo].first;
    return &js->media[lo];
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

/* The deal's pick: the part whose load so far is least, ties the lowest
 * (load[] is tiny, one per process: a linear scan per session is fine). */
static uint32_t deal_pick(const uint64_t *load, uint32_t parts)
{
    uint32_t p = 0;
    for (uint32_t k = 1; k < parts; k++)
        if (load[k] < load[p])
            p = k;
    return p;
}

/* ... and a request's weight. */
static uint64_t deal_weight(uint32_t in, uint32_t out)
{
    return 1024u + (uint64_t)in + out;
}

static uint32_t deal_parts(uint32_t parts)
{
    return parts < 1 ? 1 : parts > LT_PLAN_MAX_PARTS ? LT_PLAN_MAX_PARTS : parts;
}

void lt_plan_jobs_split(const struct lt_plan_job *jobs, size_t n, uint32_t parts, uint32_t *out)
{
    uint64_t load[LT_PLAN_MAX_PARTS] = {0};
    parts = deal_parts(parts);
    for (size_t j = 0; j < n; j++) {
        /* a later turn follows its session */
        uint32_t p = jobs[j].prev >= 0 ? out[jobs[j].prev] : deal_pick(load, parts);
        out[j] = p;
        load[p] += deal_weight(jobs[j].in, jobs[j].out);
    }
}

int lt_plan_jobs_dealer_init(struct lt_plan_jobs_dealer *d, uint32_t parts, struct lt_err *err)
{
    d->parts = deal_parts(parts);
    lt_u64map_init(&d->sess);
    if (!(d->load = calloc(d->parts, sizeof *d->load)))
        return lt_errset(err, LT_ENOMEM, "out of memory splitting the trace");
    return 0;
}

void lt_plan_jobs_dealer_release(struct lt_plan_jobs_dealer *d)
{
    free(d->load);
    lt_u64map_release(&d->sess);
    memset(d, 0, sizeof *d);
}

int64_t lt_plan_jobs_dealer_next(struct lt_plan_jobs_dealer *d, bool has_session, uint64_t session,
                                 uint32_t in, uint32_t out, struct lt_err *err)
{
    uint32_t p;
    if (has_session) {
        bool added;
        uint64_t *v = lt_u64map_upsert(&d->sess, session, &added);
        if (!v)
            return lt_errset(err, LT_ENOMEM, "out of memory splitting the trace");
        if (added)
            *v = deal_pick(d->load, d->parts);
        p = (uint32_t)*v;
    } else {
        p = deal_pick(d->load, d->parts);
    }
    d->load[p] += deal_weight(in, out);
    return p;
}
