/*
 * The virtual-time replay (see replay_virtual.h). It reads the trace the
 * way the live replay does (the same prompt and output length rules as
 * lt_replay_build_body, the same session links), computes each run's send
 * times with replay/replay_sched.h, and hands each run to the sim's
 * virtual driver, which writes the same run and result records as a live
 * replay. No thread, no socket, no clock: the CPU time is the only cost.
 */
#include "cli/replay_virtual.h"

#include "analyze/analyze.h"
#include "cli/cli_util.h"
#include "replay/replay_jobs.h"
#include "replay/replay_sched.h"
#include "sim/sim_profile.h"
#include "sim/sim_virtual.h"
#include "traces/lt_buf.h"
#include "traces/lt_rng.h"
#include "traces/trace_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct lt_sim_vreq vreq_of(const struct lt_replay_job *j, uint32_t default_out,
                                  int64_t sched_us)
{
    struct lt_sim_vreq q = {
        .index = j->index,
        .sched_us = sched_us,
        .blocks = j->blocks,
        .nblocks = j->n_blocks,
        .has_session = (j->has & LT_HAS_SESSION) != 0,
        .session = j->session,
        .prev = -1,
    };
    /* The same lengths the live replay asks for. */
    lt_replay_job_lengths(j, default_out, &q.in, &q.out);
    return q;
}

/* Trace time: the kept requests in trace order with their transformed
 * times; a session's later turn waits for the previous one (when that one
 * was kept) plus its think time, scaled by --speed as the live replay does. */
static int trace_run(const struct lt_replay_jobs *tr, const struct lt_replay_opts *o,
                     struct lt_sim_vreq *reqs, size_t *nreq, struct lt_err *err)
{
    int rc = 0;
    uint32_t default_out = o->default_out ? o->default_out : LT_REPLAY_DEFAULT_OUT;
    size_t n = tr->n;
    int64_t *t = malloc(n * sizeof *t), *offs = malloc(n * sizeof *offs),
            *pos = malloc(n * sizeof *pos);
    if (!t || !offs || !pos) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        t[i] = tr->v[i].t;
    int64_t kept = lt_replay_sched_trace(t, n, &o->tt, offs, err);
    if (kept < 0) {
        rc = (int)kept;
        goto out;
    }
    double scale = o->tt.speed > 0 ? 1.0 / o->tt.speed : 1.0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        pos[i] = -1;
        if (offs[i] < 0)
            continue;
        const struct lt_replay_job *j = &tr->v[i];
        reqs[k] = vreq_of(j, default_out, offs[i]);
        if (j->prev >= 0 && pos[j->prev] >= 0) {
            int64_t think = j->has & LT_HAS_THINK ? j->think : 0;
            reqs[k].prev = pos[j->prev];
            reqs[k].think_us = think > 0 ? (int64_t)((double)think * scale) : 0;
        }
        pos[i] = (int64_t)k++;
    }
    *nreq = k;
out:
    free(t);
    free(offs);
    free(pos);
    return rc;
}

static int write_all(const struct lt_replay_opts *o, const struct lt_sim_profile *p,
                     const struct lt_replay_jobs *tr, struct lt_sim_vstats *tot,
                     struct lt_err *err)
{
    int rc = 0;
    uint32_t default_out = o->default_out ? o->default_out : LT_REPLAY_DEFAULT_OUT;
    struct lt_writer *w = NULL;
    struct lt_sim_vreq *reqs = NULL;
    int64_t *offs = NULL;
    uint64_t per_run = o->mode == LT_REPLAY_MODE_TRACE ? tr->n : o->requests ? o->requests : tr->n;
    reqs = malloc((size_t)per_run * sizeof *reqs);
    offs = malloc((size_t)per_run * sizeof *offs);
    if (!reqs || !offs) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory for %llu requests",
                       (unsigned long long)per_run);
        goto out;
    }

    const char *mk[] = {"trace", "target", "profile"};
    const char *mv[] = {o->trace_path, "sim:virtual", p->name};
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    lt_meta_pack(&meta, mk, mv, 3);
    struct lt_header h = {
        .kind = LT_KIND_RESULTS,
        .source = "replay",
        .block_tokens = tr->block_tokens,
        .meta = (const uint8_t *)meta.p,
        .meta_len = meta.len,
    };
    w = lt_writer_open(o->out_path, &h, NULL, err);
    lt_buf_release(&meta);
    if (!w) {
        rc = err ? err->code : LT_EIO;
        goto out;
    }

    size_t runs = o->mode == LT_REPLAY_MODE_CONCURRENCY ? o->n_levels : 1;
    for (size_t ri = 0; ri < runs; ri++) {
        struct lt_sim_vrun run = {
            .id = (uint32_t)ri,
            .warmup = o->warmup,
            .block_tokens = tr->block_tokens ? tr->block_tokens : LT_DEFAULT_BLOCK_TOKENS,
        };
        size_t nreq = 0;
        if (o->mode == LT_REPLAY_MODE_TRACE) {
            run.mode = "trace";
            run.rate = o->tt.rate;
            run.speed = o->tt.speed > 0 ? o->tt.speed : 0;
            if (run.speed == 0 && run.rate == 0)
                run.speed = 1;
            LT_TRY(trace_run(tr, o, reqs, &nreq, err));
        } else {
            nreq = (size_t)per_run;
            if (o->mode == LT_REPLAY_MODE_RATE) {
                run.mode = "rate";
                run.rate = o->rate;
                run.max_concurrency = o->max_concurrency;
                /* The same seed as the live replay's run 0: the same arrivals. */
                int64_t got =
                    lt_replay_sched_open(o->arrivals, o->rate, o->cv, lt_mix64(o->seed + ri),
                                         o->duration_us, offs, nreq, err);
                if (got < 0) {
                    rc = (int)got;
                    goto out;
                }
                nreq = (size_t)got;
            } else {
                run.mode = "concurrency";
                run.concurrency = o->levels[ri];
                run.duration_us = o->duration_us;
                for (size_t i = 0; i < nreq; i++)
                    offs[i] = 0;
            }
            for (size_t i = 0; i < nreq; i++)
                reqs[i] = vreq_of(&tr->v[i % tr->n], default_out, offs[i]);
        }
        struct lt_sim_vstats st;
        LT_TRY(lt_sim_virtual_run(p, reqs, nreq, &run, w, &st, err));
        tot->requests += st.requests;
        tot->ok += st.ok;
        tot->out_tokens += st.out_tokens;
        tot->steps += st.steps;
        tot->cached_tokens += st.cached_tokens;
        tot->model_end_us += st.model_end_us;
    }
out:
    if (w) {
        struct lt_err e2 = {0};
        int crc = lt_writer_close(w, rc < 0 ? &e2 : err);
        if (rc == 0 && crc < 0)
            rc = crc;
    }
    free(reqs);
    free(offs);
    return rc;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_replay_virtual(const struct lt_replay_opts *o, const struct lt_sim_opts *sim, bool summary,
                       bool quiet)
{
    /* What a live server would do but the model cannot: say so rather
     * than produce numbers that quietly mean something else. */
    if (sim->faults) {
        cli_error("replay", "--virtual: faults are not simulated in virtual time "
                            "(drop --sim-faults, or replay live against the sim)");
        return 2;
    }
    if (sim->log_path) {
        cli_error("replay", "--virtual: there is no server log in virtual time (drop --sim-log; "
                            "the results file has every token's emission time)");
        return 2;
    }
    if (sim->time_scale > 0) {
        cli_error("replay", "--virtual: --sim-time-scale does not apply (virtual time runs as "
                            "fast as the CPU allows)");
        return 2;
    }
    if (o->no_force_length) {
        cli_error("replay", "--virtual: every request emits exactly its recorded length; "
                            "--no-force-length (natural output lengths) needs a live server");
        return 2;
    }
    struct lt_err err = {0};
    struct lt_sim_profile p;
    if (lt_sim_profile_load(&p, sim->profile ? sim->profile : "default", &err) < 0 ||
        lt_sim_profile_check(&p, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_replay_jobs tr = {0};
    double cpu0 = cpu_seconds();
    if (lt_replay_jobs_load(&tr, o->trace_path, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        lt_replay_jobs_release(&tr);
        return 1;
    }
    struct lt_sim_vstats tot = {0};
    int rc = write_all(o, &p, &tr, &tot, &err);
    lt_replay_jobs_release(&tr);
    double cpu = cpu_seconds() - cpu0;
    if (rc < 0) {
        cli_error("replay", "%s", err.msg);
        cli_error("replay", "%llu requests were recorded in %s before the error",
                  (unsigned long long)tot.requests, o->out_path);
        return 1;
    }
    if (!quiet)
        fprintf(stderr,
                "loadtrace replay: virtual time, profile %s: %llu requests, %llu ok, %llu "
                "output tokens, %llu cached prompt tokens, %.1f s of model time in %.2f s of "
                "CPU -> %s\n",
                p.name, (unsigned long long)tot.requests, (unsigned long long)tot.ok,
                (unsigned long long)tot.out_tokens, (unsigned long long)tot.cached_tokens,
                (double)tot.model_end_us / 1e6, cpu, o->out_path);
    int status = 0;
    if (summary && strcmp(o->out_path, "-") != 0) {
        struct lt_analyze_opts ao;
        lt_analyze_opts_init(&ao);
        if (lt_analyze_print_summary(o->out_path, &ao, stdout, &err) < 0) {
            cli_error("replay", "summary: %s", err.msg);
            status = 1;
        }
    }
    return status;
}
