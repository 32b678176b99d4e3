/*
 * The completion-order recorder (capture_recorder.h): a ring of finished
 * calls, one mutex, one condition variable and one writer thread.
 * Compression and file writes happen on the writer thread only, so the
 * threads that relay streams never wait for the disk.
 */
#include "capture/capture_recorder.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 256
/* The kinds of the last values put (finished record or not), more than a
 * frame holds: those of a frame a write failed on are known at close. */
#define KINDS 8192
#define UNFINISHED_AFTER_NS (500 * 1000000LL) /* a request running longer is written */

struct lt_capture_recorder {
    struct lt_writer *w;
    lt_mono start;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    struct lt_capture_call **ring; /* finished, waiting for the writer */
    uint32_t cap;
    uint64_t head, tail; /* ring[head % cap] is the oldest; tail - head queued */
    uint64_t open;       /* arrived and not yet finished */
    uint64_t next_seq;
    int64_t last_t;
    struct lt_capture_call *running; /* started and not done */
    struct lt_buf extra;             /* the unfinished records' extra keys */
    bool stop;
    struct lt_capture_recorder_stats st;
    int wrc; /* first write error */
    struct lt_err werr;
    bool finished[KINDS];       /* value k of the writer's (k % KINDS): a finished record */
    uint64_t nput;              /* values put */
    lt_capture_record_fn watch; /* lt_capture_recorder_watch */
    void *watch_ud;
    uint64_t written_now; /* st.written as of the last batch, under mu */
};

static void put_kind(struct lt_capture_recorder *r, bool finished)
{
    r->finished[r->nput++ % KINDS] = finished;
}

static void write_calls(struct lt_capture_recorder *r, struct lt_capture_call **calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct lt_capture_call *c = calls[i];
        struct lt_record rec;
        struct lt_err err = {0};
        int rc = lt_capture_call_record(c, &rec);
        if (rc == 0)
            rc = lt_writer_put_record(r->w, &rec, &err);
        if (rc == 0)
            put_kind(r, true);
        if (rc == 0 && r->watch)
            r->watch(r->watch_ud, &rec);
        if (rc == 0 && c->n_changed)
            r->st.changed++;
        if (rc < 0) {
            r->st.lost++;
            if (r->wrc == 0) {
                pthread_mutex_lock(&r->mu);
                r->werr = err;
                r->wrc = rc;
                pthread_mutex_unlock(&r->mu);
            }
        } else {
            r->st.written++;
        }
        lt_capture_call_free(c);
    }
}

/* Take up to BATCH queued calls, oldest first; the caller holds mu. */
static size_t take_queued(struct lt_capture_recorder *r, struct lt_capture_call **out)
{
    size_t n = 0;
    while (r->head < r->tail && n < BATCH) {
        out[n++] = r->ring[r->head % r->cap];
        r->ring[r->head % r->cap] = NULL;
        r->head++;
    }
    return n;
}

/* Requests running for more than UNFINISHED_AFTER_NS that have no
 * unfinished record yet get one; the caller holds mu (so none is handed
 * over and freed meanwhile). */
static void write_unfinished(struct lt_capture_recorder *r)
{
    int64_t now = lt_mono_now().ns;
    for (struct lt_capture_call *c = r->running; c; c = c->run_next) {
        if (c->begun_written || now - c->started_ns < UNFINISHED_AFTER_NS)
            continue;
        c->begun_written = true;
        struct lt_record rec;
        struct lt_err err = {0};
        int rc = lt_capture_call_record_unfinished(c, &rec, &r->extra);
        if (rc == 0)
            rc = lt_writer_put_record(r->w, &rec, &err);
        if (rc == 0) {
            put_kind(r, false);
            r->st.unfinished++;
        } else if (r->wrc == 0) {
            r->wrc = rc;
            r->werr = err;
        }
    }
}

static void *writer_main(void *arg)
{
    struct lt_capture_recorder *r = arg;
    struct lt_capture_call *batch[BATCH];
    pthread_mutex_lock(&r->mu);
    for (;;) {
        size_t n = take_queued(r, batch);
        if (n == 0) {
            if (r->stop)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 250 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        }
        pthread_mutex_unlock(&r->mu);
        write_calls(r, batch, n);
        struct lt_err err = {0};
        /* The frame of the last second goes to disk even when idle. */
        int trc = lt_writer_tick(r->w, &err);
        pthread_mutex_lock(&r->mu);
        if (trc < 0 && r->wrc == 0) {
            r->wrc = LT_EIO;
            r->werr = err;
        }
        write_unfinished(r);
        r->written_now = r->st.written;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

struct lt_capture_recorder *lt_capture_recorder_start(struct lt_writer *w, lt_mono start,
                                                      uint32_t max_held, struct lt_err *err)
{
    struct lt_capture_recorder *r = calloc(1, sizeof *r);
    if (!r) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    r->w = w;
    r->start = start;
    r->cap = max_held ? max_held : 65536;
    lt_buf_init(&r->extra, 4096);
    r->ring = calloc(r->cap, sizeof *r->ring);
    if (!r->ring) {
        free(r);
        lt_errset(err, LT_ENOMEM, "out of memory for %u held records", max_held);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    int e = pthread_create(&r->thread, NULL, writer_main, r);
    if (e) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r->ring);
        free(r);
        lt_errset(err, LT_EIO, "cannot start the trace writer thread: %s", strerror(e));
        return NULL;
    }
    return r;
}

int lt_capture_recorder_arrive(struct lt_capture_recorder *r, uint64_t *seq, int64_t *t)
{
    int rc = 0;
    pthread_mutex_lock(&r->mu);
    if (r->open + (r->tail - r->head) >= r->cap) {
        r->st.dropped++;
        rc = LT_ELIMIT;
    } else {
        /* Stamped under the lock, and each a microsecond after the last
         * at least: records are written in completion order, and a reader
         * sorts them back by t alone. */
        int64_t now = lt_mono_diff_us(lt_mono_now(), r->start);
        if (r->next_seq && now <= r->last_t)
            now = r->last_t + 1;
        r->last_t = now;
        *t = now;
        *seq = r->next_seq++;
        r->open++;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void lt_capture_recorder_started(struct lt_capture_recorder *r, struct lt_capture_call *c)
{
    pthread_mutex_lock(&r->mu);
    c->started_ns = lt_mono_now().ns;
    c->run_prev = NULL;
    c->run_next = r->running;
    if (r->running)
        r->running->run_prev = c;
    r->running = c;
    pthread_mutex_unlock(&r->mu);
}

void lt_capture_recorder_done(struct lt_capture_recorder *r, uint64_t seq,
                              struct lt_capture_call *c)
{
    (void)seq; /* the record carries its own arrival time */
    pthread_mutex_lock(&r->mu);
    r->open--;
    if (c && (c->run_prev || r->running == c)) {
        if (c->run_prev)
            c->run_prev->run_next = c->run_next;
        else
            r->running = c->run_next;
        if (c->run_next)
            c->run_next->run_prev = c->run_prev;
        c->run_prev = c->run_next = NULL;
    }
    /* open + queued never passes cap (arrive's check), so there is room. */
    if (c)
        r->ring[r->tail++ % r->cap] = c;
    pthread_mutex_unlock(&r->mu);
    if (c)
        pthread_cond_signal(&r->cv);
}

void lt_capture_recorder_watch(struct lt_capture_recorder *r, lt_capture_record_fn fn, void *ud)
{
    pthread_mutex_lock(&r->mu); /* the writer reads it after taking mu */
    r->watch = fn;
    r->watch_ud = ud;
    pthread_mutex_unlock(&r->mu);
}

void lt_capture_recorder_now(struct lt_capture_recorder *r, uint64_t *written, uint64_t *queued,
                             uint64_t *open)
{
    pthread_mutex_lock(&r->mu);
    *written = r->written_now;
    *queued = r->tail - r->head;
    *open = r->open;
    pthread_mutex_unlock(&r->mu);
}

bool lt_capture_recorder_failed(struct lt_capture_recorder *r, struct lt_err *err)
{
    pthread_mutex_lock(&r->mu);
    bool failed = r->wrc < 0;
    if (failed && err)
        *err = r->werr;
    pthread_mutex_unlock(&r->mu);
    return failed;
}

int lt_capture_recorder_stop(struct lt_capture_recorder *r, struct lt_capture_recorder_stats *st,
                             struct lt_err *err)
{
    if (!r)
        return 0;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_mutex_unlock(&r->mu);
    pthread_cond_signal(&r->cv);
    pthread_join(r->thread, NULL);
    struct lt_capture_call *batch[BATCH];
    size_t n;
    while ((n = take_queued(r, batch)) > 0)
        write_calls(r, batch, n);
    r->st.lost += r->open; /* never finished */
    /* The counts are what reached the file: known once the last frame is
     * out, or failed; the values of a frame that failed are the last ones
     * put, and those of them that were finished records are lost. */
    struct lt_err ferr = {0};
    if (lt_writer_flush(r->w, &ferr) < 0 && r->wrc == 0) {
        r->wrc = LT_EIO;
        r->werr = ferr;
    }
    uint64_t lost = r->nput - lt_writer_on_disk(r->w, NULL);
    for (uint64_t k = r->nput - lost; k < r->nput && lost <= KINDS; k++)
        if (r->finished[k % KINDS]) {
            r->st.written--;
            r->st.lost++;
        }
    int rc = r->wrc;
    if (rc < 0 && err)
        *err = r->werr;
    if (st)
        *st = r->st;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    lt_buf_release(&r->extra);
    free(r->ring);
    free(r);
    return rc;
}
