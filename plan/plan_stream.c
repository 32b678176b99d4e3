/*
 * A plan over a streamed trace (lt_plan_jobs_open; plan/README.md
 * "Streaming"): the readings that size and scale the schedule before the
 * run, the layout of each seq as its job is read (trace time, and the laps
 * of a loop), the read-ahead and the giving back behind the oldest seq not
 * DONE. The state machine (plan.c) calls in here where a plan is streamed
 * (p->streamed); the reading itself is plan_jobs.c's (lt_plan_jobs_need
 * reads the trace file on, through traces/trace_reader).
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"

#include "base/lt_rng.h"

#include <stdlib.h>
#include <string.h>

/* A streamed plan's state of a seq another part sends, from its deal to
 * its layout (then DONE). */
#define NOT_MINE 0x80

/* A reading of the records in order: which the sample keeps (with a
 * window or --requests: the sampler, which holds one entry per session),
 * and steps 2-3 of the trace-time schedule over the kept ones' times, the
 * groups of equal times whole: what steps 4-6 need. */
struct tt_scan {
    struct lt_plan_sched_tt_walk w;
    struct lt_plan_jobs_sampler *sp; /* NULL: every record at or after 0 is kept */
    bool counting;                   /* the sampler's first reading (sessions' sizes) */
    bool scaled;                     /* w can place: count what the duration keeps */
    int64_t gt;                      /* the group's time (-1: none yet) */
    size_t gk;                       /* its size */
    int64_t first, last;
    int64_t last_placed; /* scaled: the last kept time the duration keeps (-1: none) */
    size_t kept, placed;
    /* parts: the deal, this part, and whether each of the group is its */
    struct lt_plan_jobs_dealer *dl;
    uint32_t part;
    uint8_t *gmine;
    size_t gcap, mine_kept, mine_placed;
    size_t limit; /* count only the first this many kept (0: all) */
    struct lt_err *err;
};

static int scan_group(struct tt_scan *c)
{
    for (size_t m = 0; m < c->gk; m++) {
        int64_t x;
        if (c->limit && c->kept >= c->limit)
            return 0;
        int rc = lt_plan_sched_tt_walk_gap(&c->w, c->gt, m, c->gk, &x, c->err);
        if (rc < 0)
            return rc;
        if (!c->kept++)
            c->first = x;
        c->last = x;
        bool placed = c->scaled && lt_plan_sched_tt_walk_place(&c->w, x) >= 0, mine = c->gmine[m];
        c->placed += placed;
        if (placed)
            c->last_placed = x;
        c->mine_kept += mine;
        c->mine_placed += placed && mine;
    }
    return 0;
}

static int scan_rec(void *ud, const struct lt_plan_rec_key *k)
{
    struct tt_scan *c = ud;
    if (c->counting)
        return lt_plan_jobs_sampler_count(c->sp, k, c->err);
    bool mine = true;
    if (c->dl) { /* every request is dealt, in order */
        int64_t part =
            lt_plan_jobs_dealer_next(c->dl, k->has_session, k->session, k->in, k->out, c->err);
        if (part < 0)
            return (int)part;
        mine = part == c->part;
    }
    bool in = k->t >= 0; /* before the trace's origin: not replayed */
    if (c->sp) {
        int rc = lt_plan_jobs_sampler_keep(c->sp, k, &in, c->err);
        if (rc < 0)
            return rc;
        in = in && k->t >= c->w.o.win_start_us;
    }
    if (!in)
        return 0; /* an entry cut does not end a group */
    int64_t t = k->t - c->w.o.win_start_us;
    int rc = 0;
    if (!(t == c->gt && c->w.o.spread_us > 0)) { /* a new group */
        rc = c->gk ? scan_group(c) : 0;
        c->gt = t;
        c->gk = 0;
    }
    if (c->gk == c->gcap) {
        size_t nc = c->gcap ? c->gcap * 2 : 64;
        uint8_t *g = realloc(c->gmine, nc);
        if (!g)
            return lt_errset(c->err, LT_ENOMEM, "out of memory planning the run");
        c->gmine = g;
        c->gcap = nc;
    }
    c->gmine[c->gk++] = mine;
    return rc;
}

/* One reading: first, last and kept after step 3, and when the walk is
 * scaled already, how many the duration keeps. */
static int scan_records(struct lt_plan *p, struct tt_scan *c, struct lt_err *err)
{
    c->gt = c->first = c->last = -1;
    c->gk = c->kept = c->placed = c->mine_kept = c->mine_placed = 0;
    c->err = err;
    struct lt_plan_jobs_dealer dl;
    int rc = 0;
    c->dl = NULL;
    if (p->o.parts > 1 && !c->counting) {
        if ((rc = lt_plan_jobs_dealer_init(&dl, p->o.parts, err)) < 0)
            return rc;
        c->dl = &dl;
        c->part = p->o.part;
    }
    rc = lt_plan_jobs_each(p->jobs, scan_rec, c, err);
    if (rc >= 0 && c->gk)
        rc = scan_group(c);
    if (c->dl)
        lt_plan_jobs_dealer_release(&dl);
    c->dl = NULL;
    return rc < 0 ? rc : 0;
}

/* A reading with the sample (c->sp, if any): the sessions' sizes first
 * when --requests needs them and nothing is decided yet, then the
 * decisions. */
static int scan_sampled(struct lt_plan *p, struct tt_scan *c, struct lt_err *err)
{
    int rc = 0;
    if (c->sp && c->sp->max && !c->sp->again) {
        c->counting = true;
        rc = scan_records(p, c, err);
        c->counting = false;
    }
    return rc < 0 ? rc : scan_records(p, c, err);
}

/* Every seq kept is laid out: the rest are cut, and never read (they were
 * counted DONE from the start: no longer). */
static void end_at_laid(struct lt_plan *p)
{
    p->done_n -= p->nseq - p->laid;
    p->nseq = p->total = p->laid;
}

/* Seq i is not replayed: mark (LT_PLAN_TURN_CUT or _OUT) is what its
 * session's next turn learns. */
static void lay_cut(struct lt_plan *p, size_t i, int64_t mark)
{
    p->state[i] = LT_PLAN_DONE;
    p->offs[i] = p->lay_prev;
    p->ncut++;
    lt_plan_jobs_turn_over(p->jobs, i, mark);
}

/* Room for npos seqs of offs, state and attempts (address space). */
static int map_seqs(struct lt_plan *p, size_t npos, struct lt_err *err)
{
    if (lt_vmem_map(&p->m_offs, npos * sizeof *p->offs) < 0 || lt_vmem_map(&p->m_state, npos) < 0 ||
        lt_vmem_map(&p->m_attempts, npos) < 0)
        return lt_errset(err, LT_ENOMEM, "out of memory planning %zu requests", npos);
    p->offs = p->m_offs.p;
    p->state = p->m_state.p;
    p->attempts = p->m_attempts.p;
    return 0;
}

/* The open loop's arrivals of run `run`, and how many of the kept0 it
 * keeps before the duration (drawn once to count them: nothing kept). */
static int loop_arrivals(struct lt_plan *p, uint32_t run, struct lt_err *err)
{
    const struct lt_plan_opts *o = &p->o;
    uint64_t seed = lt_mix64(o->seed + run);
    int rc = lt_plan_sched_arrive_init(&p->arrive, o->arrivals, o->rate, o->cv, seed,
                                       o->duration_us, err);
    if (rc < 0)
        return rc;
    p->kept = p->kept0;
    for (size_t i = 0; i < p->kept0; i++) {
        int64_t at;
        if ((rc = lt_plan_sched_arrive_next(&p->arrive, &at, err)) < 0)
            return rc;
        if (rc == 0) {
            p->kept = i;
            break;
        }
    }
    return lt_plan_sched_arrive_init(&p->arrive, o->arrivals, o->rate, o->cv, seed, o->duration_us,
                                     err);
}

/* A loop split over parts: of the first `upto` seqs the loop keeps (its
 * whole laps, then its last lap's sample), how many are this part's. Each
 * lap deals the trace alike: one reading deals a whole lap, one more the
 * part of a lap `upto` ends in. */
static int loop_mine(struct lt_plan *p, size_t upto, size_t *mine, struct lt_err *err)
{
    size_t n = p->jobs->n, laps = p->laps_pos / n;
    size_t full = upto / n < laps ? upto / n : laps, rest = upto - full * n;
    const struct lt_plan_sched_tt plain = {0}; /* a loop's times are its own */
    struct tt_scan c = {0};
    struct lt_plan_jobs_sampler sp;
    int rc = 0;
    *mine = 0;
    lt_plan_sched_tt_walk_init(&c.w, &plain);
    if (full && (rc = scan_records(p, &c, err)) >= 0)
        *mine += full * c.mine_kept;
    if (rc >= 0 && rest) {
        bool sample = full == laps && p->lap_sampled;
        if (sample) {
            lt_plan_jobs_sampler_init(&sp, 0, 0, p->o.requests % n);
            c.sp = &sp;
        }
        c.limit = rest;
        if ((rc = scan_sampled(p, &c, err)) >= 0)
            *mine += c.mine_kept;
        if (sample)
            lt_plan_jobs_sampler_release(&sp);
    }
    free(c.gmine);
    return rc < 0 ? rc : 0;
}

/* The seqs a loop keeps: the arrivals' count cuts an open loop at its
 * duration, and parts keep their own. */
static int loop_kept(struct lt_plan *p, uint32_t run, struct lt_err *err)
{
    int rc = 0;
    p->kept = p->kept0;
    if (p->o.mode == LT_PLAN_RATE && (rc = loop_arrivals(p, run, err)) < 0)
        return rc;
    if (p->o.parts > 1)
        rc = loop_mine(p, p->kept, &p->kept, err);
    return rc;
}

/* An open loop over a streamed trace: the trace in laps (its positions
 * are the seqs: lt_plan_jobs_laps), the last lap, when --requests ends
 * one part-way, a sample of whole sessions (the sampler, as
 * lt_plan_jobs_sample decides it for a loaded trace), the arrivals drawn as
 * the seqs are laid out. */
static int stream_init_loop(struct lt_plan *p, struct lt_err *err)
{
    const struct lt_plan_jobs *js = p->jobs;
    size_t n = js->n;
    uint64_t want = p->o.requests ? p->o.requests : n;
    size_t laps = (size_t)(want / n), rest = (size_t)(want % n), kept_rest = rest;
    int rc = 0;
    p->first_out = SIZE_MAX;
    p->lap_sampled = rest && p->sample_laps;
    if (p->lap_sampled) {
        struct lt_plan_jobs_sampler sp;
        lt_plan_jobs_sampler_init(&sp, 0, 0, rest);
        struct tt_scan c = {.sp = &sp};
        lt_plan_sched_tt_walk_init(&c.w, &p->o.tt);
        if ((rc = scan_sampled(p, &c, err)) >= 0) {
            kept_rest = (size_t)sp.sm.requests;
            p->first_out = sp.first_out;
            if (!laps) {
                p->sampled = true;
                p->sample = sp.sm;
            }
        }
        lt_plan_jobs_sampler_release(&sp);
        free(c.gmine);
        if (rc < 0 && !laps)
            return rc; /* not even one session fits */
        if (rc < 0) {  /* the laps alone */
            rest = kept_rest = 0;
            p->lap_sampled = false;
        }
    }
    p->laps_pos = laps * n;
    p->npos = laps * n + (p->lap_sampled ? n : rest);
    p->kept0 = laps * n + kept_rest;
    if ((rc = lt_plan_jobs_laps(js, p->npos, err)) < 0 || (rc = map_seqs(p, p->npos, err)) < 0 ||
        (rc = loop_kept(p, 0, err)) < 0)
        return rc;
    p->nseq = p->total = p->npos;
    p->done_n = p->npos - p->kept;
    return 0;
}

/* Lay out an open loop's seqs read so far, reading on until seq `want` -
 * 1 is laid out: kept (a whole lap, or in the last lap's sample) with the
 * next arrival, else cut. */
static int lay_out_loop(struct lt_plan *p, size_t want, struct lt_err *err)
{
    const struct lt_plan_jobs *js = p->jobs;
    while (p->laid < p->nseq) {
        size_t x = p->laid, read = lt_plan_jobs_loaded(js);
        if (x >= read) {
            if (x >= want)
                break;
            int rc = lt_plan_jobs_need(js, p->low, read + LT_PLAN_LOOKAHEAD, err);
            if (rc < 0)
                return rc;
            continue;
        }
        const struct lt_plan_job *j = &js->v[x];
        bool in = true, mine = true;
        if (p->lap_sampled && x >= p->laps_pos)
            in = j->prev != -1 ? j->prev_end != LT_PLAN_TURN_OUT : x - p->laps_pos < p->first_out;
        if (p->o.parts > 1) { /* each lap deals the trace from its start */
            if (x % js->n == 0) {
                lt_plan_jobs_dealer_release(&p->dealer);
                int rc = lt_plan_jobs_dealer_init(&p->dealer, p->o.parts, err);
                if (rc < 0)
                    return rc;
            }
            int64_t part = lt_plan_jobs_dealer_next(&p->dealer, j->has & LT_HAS_SESSION, j->session,
                                                    j->in, j->out, err);
            if (part < 0)
                return (int)part;
            mine = part == p->o.part;
        }
        int64_t at = 0; /* a closed loop's sched is when it leaves */
        int rc = !in                         ? 0
                 : p->o.mode == LT_PLAN_RATE ? lt_plan_sched_arrive_next(&p->arrive, &at, err)
                                             : 1;
        if (rc < 0)
            return rc;
        if (rc == 0 || !mine) { /* another part's takes its arrival along */
            lay_cut(p, x, !in ? LT_PLAN_TURN_OUT : LT_PLAN_TURN_CUT);
        } else {
            p->offs[x] = p->lay_prev = at;
            p->placed++;
        }
        p->laid = x + 1;
        if (p->placed == p->kept && p->laid < p->nseq)
            end_at_laid(p);
    }
    if (p->placed > p->kept)
        return lt_errset(err, LT_EFORMAT, "the trace changed while it was replayed");
    return 0;
}

/* The schedule's scale and what it keeps, from the first reading's
 * figures when nothing moves a time or samples, else from the records
 * read again: twice with --requests (the sessions' sizes, then the
 * sample), once more with --duration (the cut needs the scale, which
 * --rate takes from the last time kept). Nothing per request is kept;
 * the sample's entry per session only until the run begins. With parts,
 * every reading deals the sessions (lt_plan_jobs_dealer) and counts this
 * part's. */
int lt__plan_stream_init(struct lt_plan *p, struct lt_err *err)
{
    const struct lt_plan_jobs *js = p->jobs;
    const struct lt_plan_sched_tt *tt = &p->o.tt;
    if (p->o.mode != LT_PLAN_TRACE)
        return stream_init_loop(p, err);
    int rc = lt_plan_sched_tt_check(tt, err);
    if (rc < 0)
        return rc;
    size_t n = js->n;
    if ((rc = lt_plan_jobs_laps(js, n, err)) < 0 || (rc = map_seqs(p, n, err)) < 0)
        return rc;
    lt_plan_sched_tt_walk_init(&p->walk0, tt);
    p->sampled = tt->win_start_us > 0 || tt->win_end_us > 0 || p->o.requests > 0;
    p->first_out = SIZE_MAX;
    struct lt_plan_jobs_sampler sp;
    struct tt_scan c = {.sp = p->sampled ? &sp : NULL, .last_placed = -1};
    if (p->sampled)
        lt_plan_jobs_sampler_init(&sp, tt->win_start_us, tt->win_end_us, p->o.requests);
    if (p->sampled || tt->spread_us > 0 || tt->max_gap_us > 0 || tt->rate > 0 || p->o.parts > 1) {
        c.w = p->walk0;
        if ((rc = scan_sampled(p, &c, err)) < 0)
            goto out;
    } else {
        c.first = js->t_first;
        c.last = js->t_last;
        c.kept = c.mine_kept = js->n_nonneg;
    }
    if (p->sampled) {
        p->sample = sp.sm;
        p->first_out = sp.first_out;
    }
    if (c.kept && (rc = lt_plan_sched_tt_walk_scale(&p->walk0, c.first, c.last, c.kept, err)) < 0)
        goto out;
    p->kept = c.mine_kept;
    if (c.kept && tt->duration_us > 0) {
        /* the sample again: the sampler decided every session already */
        if (p->sampled)
            lt_plan_jobs_sampler_again(&sp);
        c.w = p->walk0;
        c.scaled = true;
        if ((rc = scan_records(p, &c, err)) < 0)
            goto out;
        p->kept = c.mine_placed;
    }
    p->tt_end = !c.kept                ? -1
                : tt->duration_us <= 0 ? lt_plan_sched_tt_walk_place(&p->walk0, c.last)
                : c.last_placed >= 0   ? lt_plan_sched_tt_walk_place(&p->walk0, c.last_placed)
                                       : -1;
    p->nseq = p->total = n;
    p->done_n = n - p->kept;
    if (p->o.parts > 1)
        rc = lt_plan_jobs_dealer_init(&p->dealer, p->o.parts, err);
out:
    if (p->sampled)
        lt_plan_jobs_sampler_release(&sp);
    free(c.gmine);
    return rc;
}

/* Whether seq x is in the run (the sample's rule, as the sampler decided
 * it: a session's first request by its time and first_out, a later one as
 * its first, which left LT_PLAN_TURN_OUT if it was not); if not, it is cut
 * now. Seqs are decided in order. */
static int decide(struct lt_plan *p, size_t x, struct lt_err *err)
{
    const struct lt_plan_job *j = &p->jobs->v[x];
    const struct lt_plan_sched_tt *tt = &p->o.tt;
    if (p->o.parts > 1) { /* every request is dealt, in order; another
                            part's is laid out, then cut (NOT_MINE) */
        int64_t part = lt_plan_jobs_dealer_next(&p->dealer, j->has & LT_HAS_SESSION, j->session,
                                                j->in, j->out, err);
        if (part < 0)
            return (int)part;
        if (part != p->o.part)
            p->state[x] = NOT_MINE;
    }
    bool in = j->t >= tt->win_start_us;
    if (p->sampled && j->prev != -1)
        in = in && j->prev_end != LT_PLAN_TURN_OUT;
    else if (p->sampled)
        in = in && (tt->win_end_us <= 0 || j->t < tt->win_end_us) && x < p->first_out;
    if (!in)
        lay_cut(p, x, p->sampled ? LT_PLAN_TURN_OUT : LT_PLAN_TURN_CUT);
    p->decided = x + 1;
    return 0;
}

/* Lay out the seqs read so far (a group of equal times only once it is
 * read whole), reading on until seq `want` - 1 is laid out. */
static int lay_out(struct lt_plan *p, size_t want, struct lt_err *err)
{
    if (p->o.mode != LT_PLAN_TRACE)
        return lay_out_loop(p, want, err);
    const struct lt_plan_jobs *js = p->jobs;
    const int64_t ws = p->o.tt.win_start_us;
    size_t n = js->n;
    int rc = 0;
    if (want > n)
        want = n;
    while (p->laid < p->nseq) {
        size_t i = p->laid, read = lt_plan_jobs_loaded(js), j = i + 1, k = 1;
        bool whole = i < read;
        if (whole && p->decided <= i && (rc = decide(p, i, err)) < 0)
            return rc;
        if (whole && p->state[i] == LT_PLAN_DONE) {
            p->laid = j;
            continue;
        }
        int64_t t = whole ? js->v[i].t - ws : -1;
        if (whole && p->o.tt.spread_us > 0) {
            for (; j < read; j++) {
                if (p->decided <= j && (rc = decide(p, j, err)) < 0)
                    return rc;
                if (p->state[j] == LT_PLAN_DONE)
                    continue; /* a seq cut does not end a group */
                if (js->v[j].t - ws != t)
                    break;
                k++;
            }
            whole = j < read || read == n;
        }
        if (!whole) {
            if (p->laid >= want)
                break;
            if ((rc = lt_plan_jobs_need(js, p->low, read + LT_PLAN_LOOKAHEAD, err)) < 0)
                return rc;
            continue;
        }
        size_t m = 0;
        for (size_t x = i; x < j; x++) {
            if (p->state[x] == LT_PLAN_DONE)
                continue;
            int64_t at;
            if ((rc = lt_plan_sched_tt_walk_gap(&p->walk, t, m++, k, &at, err)) < 0)
                return rc;
            if ((at = lt_plan_sched_tt_walk_place(&p->walk, at)) < 0) {
                lay_cut(p, x, LT_PLAN_TURN_CUT);
                continue;
            }
            p->offs[x] = p->lay_prev = at;
            if (p->state[x] == NOT_MINE) { /* scheduled with the rest, sent by its part */
                lay_cut(p, x, LT_PLAN_TURN_CUT);
                p->offs[x] = at;
                continue;
            }
            p->placed++;
        }
        p->laid = j;
        if (p->placed == p->kept && p->laid < n) {
            end_at_laid(p);
            break;
        }
    }
    if (p->placed > p->kept || (p->laid == n && p->placed != p->kept))
        return lt_errset(err, LT_EFORMAT,
                         "the trace changed while it was replayed (%zu of %zu requests laid "
                         "out were kept, %zu planned)",
                         p->placed, p->laid, p->kept);
    return 0;
}

/* The jobs read LT_PLAN_LOOKAHEAD seqs ahead of seq k (one record per
 * request that leaves, not a lookahead's worth at once: a stall of
 * milliseconds in a live run), laid out as far as read, seq k at least. */
int lt__plan_stream_ahead(struct lt_plan *p, size_t k, struct lt_err *err)
{
    if (k >= p->nseq)
        return 0;
    if (k + LT_PLAN_LOOKAHEAD > p->need_edge) {
        p->need_edge = k + LT_PLAN_LOOKAHEAD;
        int rc = lt_plan_jobs_need(p->jobs, p->low, p->need_edge, err);
        if (rc < 0)
            return rc;
    }
    return lay_out(p, k + 1, err);
}

/* What is DONE below the oldest seq still in play (at most `upto`) goes
 * back, in steps of 1,024 seqs: jobs, offs, state and attempts. Never in
 * lt_plan_finish: the engine records a request before it finishes it,
 * but may read its job until then. */
void lt__plan_stream_give_back(struct lt_plan *p, size_t upto)
{
    while (p->low < upto && p->state[p->low] == LT_PLAN_DONE)
        p->low++;
    if (p->low >= p->dropped_at + 1024) {
        lt_plan_jobs_drop(p->jobs, p->low);
        lt_vmem_give_back(&p->m_offs, p->low * sizeof *p->offs);
        lt_vmem_give_back(&p->m_state, p->low);
        lt_vmem_give_back(&p->m_attempts, p->low);
        p->dropped_at = p->low;
    }
}

int lt__plan_stream_hold(struct lt_plan *p, size_t seq, struct lt_err *err)
{
    lt__plan_stream_give_back(p, seq < p->laid ? seq : p->laid);
    int rc = lt_plan_jobs_need(p->jobs, p->low, seq + 1, err);
    return rc < 0 ? rc : lay_out(p, seq + 1, err);
}
/* A streamed closed loop's seq may leave once its previous turn (a
 * position of the same lap) is DONE; below low it is. */
static bool turn_ready(const struct lt_plan *p, size_t seq)
{
    int32_t prev = p->jobs->v[seq].prev;
    return prev < 0 || (size_t)prev < p->low || p->state[prev] == LT_PLAN_DONE;
}

/* A streamed closed loop: the cursor's turn must wait, so the nearest
 * ready seq of the next 64 not yet sent leaves before it (as pull_ready
 * brings it forward). *k: that seq; returns 1, 0 when none is ready, or
 * what reading the trace failed with. */
static int pull_ahead(struct lt_plan *p, size_t *k, struct lt_err *err)
{
    size_t seen = 0;
    for (size_t j = p->cursor + 1; j < p->total && seen < 64; j++) {
        int rc = lay_out(p, j + 1, err);
        if (rc < 0)
            return rc;
        if (j >= p->total || p->state[j] != LT_PLAN_PENDING)
            continue;
        seen++;
        if (turn_ready(p, j)) {
            *k = j;
            return 1;
        }
    }
    return 0;
}

/* A streamed closed loop's time is up: what was not sent is not in the
 * run. Seqs sent ahead of the cursor stay (the run ends after the last
 * one); those left PENDING before it are DONE, unrecorded; the seqs cut
 * after the end, counted DONE from the start, no longer count. */
void lt__plan_stream_time_up(struct lt_plan *p)
{
    size_t end = p->cursor > p->hi_sent ? p->cursor : p->hi_sent, after = 0;
    for (size_t k = p->cursor; k < end; k++)
        if (p->state[k] == LT_PLAN_PENDING) {
            p->state[k] = LT_PLAN_DONE;
            p->done_n++;
        }
    for (size_t k = end; k < p->laid; k++)
        after += p->state[k] == LT_PLAN_DONE;
    size_t cut_all = p->npos - p->kept, cut_before = p->ncut - after;
    p->done_n -= cut_all - cut_before;
    p->nseq = p->total = end;
}

int lt__plan_stream_start(struct lt_plan *p, uint32_t run, struct lt_err *err)
{
    /* Laid out as it is read, from the first record again (the turns'
     * ends a run before left in the jobs forgotten). */
    lt_plan_jobs_rewind(p->jobs);
    lt_vmem_clear(&p->m_offs);
    lt_vmem_clear(&p->m_state);
    lt_vmem_clear(&p->m_attempts);
    p->walk = p->walk0;
    p->laid = p->decided = p->placed = 0;
    p->lay_prev = 0;
    size_t npos = p->o.mode == LT_PLAN_TRACE ? p->jobs->n : p->npos;
    p->ncut = p->hi_sent = 0;
    int rc = 0;
    if (p->dealer.load) { /* the deal again from the first request */
        lt_plan_jobs_dealer_release(&p->dealer);
        if ((rc = lt_plan_jobs_dealer_init(&p->dealer, p->o.parts, err)) < 0)
            return rc;
    }
    if (p->o.mode != LT_PLAN_TRACE && (rc = loop_kept(p, run, err)) < 0)
        return rc;
    p->nseq = p->total = npos;
    p->done_n = npos - p->kept;
    return lt__plan_stream_ahead(p, 0, err);
}

void lt__plan_stream_release(struct lt_plan *p)
{
    lt_vmem_release(&p->m_offs);
    lt_vmem_release(&p->m_state);
    lt_vmem_release(&p->m_attempts);
}

int64_t lt__plan_stream_sched_end(const struct lt_plan *p)
{
    if (p->o.mode == LT_PLAN_TRACE)
        return p->tt_end;
    if (p->o.rate <= 0)
        return -1;
    double us = (double)(p->planned - 1) / p->o.rate * 1e6;
    if (p->o.duration_us > 0 && us > (double)p->o.duration_us)
        us = (double)p->o.duration_us;
    return (int64_t)us;
}

int lt__plan_stream_next_closed(struct lt_plan *p, size_t *seq, struct lt_err *err)
{
    for (;;) {
        size_t k = p->cursor;
        int rc = lt__plan_stream_ahead(p, k, err);
        if (rc < 0)
            return rc;
        if (k >= p->total)
            return 0;
        if (p->state[k] != LT_PLAN_PENDING) {
            p->cursor++; /* cut, or sent ahead of it */
            continue;
        }
        if (!turn_ready(p, k)) {
            int got = pull_ahead(p, &k, err);
            if (got <= 0)
                return got; /* 0: every candidate waits for its previous turn */
        }
        if (k == p->cursor)
            p->cursor++;
        *seq = k;
        return 1;
    }
}
