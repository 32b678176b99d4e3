/*
 * The capacity section of analyze: what a capacity search (replay
 * --find-max) found, read back from its probes' run records (each carries
 * its load and the SLO) and verdict records (the share that met it with
 * its 95 % interval, and the verdict; an older file's run records carry
 * those too), so the report needs nothing but the results file: the answer
 * per engine (live, virtual), and SLO attainment against load with the
 * target line, in text and JSON (the chart is analyze_plot.c's).
 */
#include "analyze/analyze.h"
#include "analyze/analyze_json.h"

#include <math.h>
#include <string.h>

/* Errors a load causes (a request left waiting too long); every other
 * class is a fault: a 500, a refused or cut connection, a bad stream. */
static bool load_error(const char *name)
{
    return !strcmp(name, "timeout") || !strcmp(name, "first_token_timeout");
}

void lt_analyze_probe_judged(const struct lt_analyze_run *r, bool cut, struct lt_analyze_judged *j)
{
    uint64_t faults = r->errs_other;
    for (uint32_t k = 0; k < r->n_errs; k++)
        if (!load_error(r->errs[k].name) && !(cut && !strcmp(r->errs[k].name, "aborted")))
            faults += r->errs[k].n;
    j->faults = faults < r->measured ? faults : r->measured;
    j->cancelled = r->cancelled;
    uint64_t out = j->faults + j->cancelled;
    j->judged = out < r->measured ? r->measured - out : 0;
}

/* A probe's judged requests, as the search counted them (its run record
 * says why when it was stopped early). */
static void judged_of(const struct lt_analyze_run *r, struct lt_analyze_judged *j)
{
    lt_analyze_probe_judged(r, r->probe.why[0] != '\0', j);
}

static bool failing(const char *verdict)
{
    return !strcmp(verdict, "fails") || !strcmp(verdict, "saturated");
}

bool lt_analyze_capacity(const struct lt_analyze *a, const char *engine,
                         struct lt_analyze_capacity *c)
{
    memset(c, 0, sizeof *c);
    c->max_run = -1;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        const struct lt_analyze_probe *p = &r->probe;
        if (!lt_analyze_is_probe(r) || strcmp(p->engine, engine) != 0)
            continue;
        c->probes++;
        c->axis = p->search;
        c->slo = p->slo;
        c->target = p->target;
        if (!strcmp(p->verdict, "meets") && p->load > c->max_ok) {
            c->max_ok = p->load;
            c->max_run = (int)i;
            /* requests/s meeting the SLO: the share that met it of the
             * judged requests (not of the cancelled or the faults), over
             * the probe's wall time */
            struct lt_analyze_judged j;
            judged_of(r, &j);
            c->goodput = r->wall_s > 0 ? p->attain * (double)j.judged / r->wall_s : 0;
            /* a virtual probe against a time-scaled sim ran the model at a
             * rate below its (live) load: its goodput in live units too */
            if (!strcmp(p->search, "rate") && r->rate > 0)
                c->goodput *= p->load / r->rate;
            /* a window of the trace (a speed, not a rate) keeps its own
             * pace, a burst's perhaps: the load's share that met the SLO */
            if (!strcmp(p->search, "rate") && r->speed > 0)
                c->goodput = p->attain * p->load;
        } else if (failing(p->verdict) && (c->min_fail == 0 || p->load < c->min_fail)) {
            c->min_fail = p->load;
        }
    }
    return c->probes > 0;
}

static const char *const engines[] = {"live", "virtual"};

/* The probes lt_analyze_finish left out, and why, a line for each run
 * of them of one engine left out for one reason (the model's probes of
 * the whole trace are many); under a heading of their own when no probe
 * counts. */
static void left_out_text(const struct lt_analyze *a, FILE *out, bool heading)
{
    for (uint32_t i = 0, j; i < a->n_runs; i = j) {
        const struct lt_analyze_probe *p = &a->runs[i]->probe;
        j = i + 1;
        if (!p->search[0] || !p->left_out)
            continue;
        while (j < a->n_runs && a->runs[j]->probe.left_out == p->left_out &&
               !strcmp(a->runs[j]->probe.engine, p->engine))
            j++;
        if (heading)
            fprintf(out,
                    "\nCapacity (%s; SLO %s for %.3g of requests): no probe decided anything\n",
                    p->search, p->slo, p->target);
        heading = false;
        if (j == i + 1)
            fprintf(out, "  left out: run %u, %s probe at %.4g, %s\n", a->runs[i]->id, p->engine,
                    p->load, p->left_out);
        else
            fprintf(out, "  left out: runs %u-%u, %u %s probes, %s\n", a->runs[i]->id,
                    a->runs[j - 1]->id, j - i, p->engine, p->left_out);
    }
}

void lt_analyze_capacity_text(const struct lt_analyze *a, FILE *out)
{
    struct lt_analyze_capacity c;
    bool any = false;
    for (int e = 0; e < 2; e++) {
        if (!lt_analyze_capacity(a, engines[e], &c))
            continue;
        if (!any)
            fprintf(out, "\nCapacity (%s; SLO %s for %.3g of requests)\n", c.axis, c.slo, c.target);
        any = true;
        const char *unit = !strcmp(c.axis, "rate") ? " req/s" : " in flight";
        fprintf(out, "  %-7s  max meeting: ", engines[e]);
        if (c.max_ok > 0)
            fprintf(out, "%.6g%s", c.max_ok, unit);
        else
            fprintf(out, "none");
        fprintf(out, ", lowest failing: ");
        if (c.min_fail > 0)
            fprintf(out, "%.6g%s", c.min_fail, unit);
        else
            fprintf(out, "none");
        fprintf(out, ", goodput %.3g req/s at the max, %u probes\n", c.goodput, c.probes);
    }
    if (!any) {
        left_out_text(a, out, true);
        return;
    }
    fprintf(out, "  %4s %-7s %10s %8s %8s %8s %17s  %s\n", "run", "engine", "load", "n", "judged",
            "attain", "95 % interval", "verdict");
    bool apart = false;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        const struct lt_analyze_probe *p = &r->probe;
        if (!lt_analyze_is_probe(r))
            continue;
        struct lt_analyze_judged j;
        judged_of(r, &j);
        apart |= j.judged != r->measured;
        bool straddles = p->lo < p->target && p->hi > p->target;
        fprintf(out, "  %4u %-7s %10.4g %8llu %8llu %8.3f   [%.3f, %.3f]  %s%s\n", r->id, p->engine,
                p->load, (unsigned long long)r->measured, (unsigned long long)j.judged, p->attain,
                p->lo, p->hi, p->verdict, straddles ? " (interval straddles the target)" : "");
        if (p->why[0])
            fprintf(out, "       %s\n", p->why);
    }
    if (apart)
        fprintf(out, "  judged: the requests attain is the share of, n less the cancelled (their "
                     "client left) and the faults (failures that are not the load's)\n");
    left_out_text(a, out, false);
}

/* A probe's object opened, with its run, engine and load. */
static void json_probe_head(FILE *out, const struct lt_analyze_run *r, bool *first)
{
    fprintf(out, "%s\n      {\"run\": %u, \"engine\": ", *first ? "" : ",", r->id);
    *first = false;
    lt_analyze_jstr(out, r->probe.engine);
    fprintf(out, ", \"load\": ");
    lt_analyze_jnum(out, r->probe.load);
}

void lt_analyze_capacity_json(const struct lt_analyze *a, FILE *out)
{
    struct lt_analyze_capacity c;
    bool any = false;
    for (int e = 0; e < 2; e++) {
        if (!lt_analyze_capacity(a, engines[e], &c))
            continue;
        if (!any) {
            fprintf(out, "{\"axis\": ");
            lt_analyze_jstr(out, c.axis);
            fprintf(out, ", \"slo\": ");
            lt_analyze_jstr(out, c.slo);
            fprintf(out, ", \"attain_target\": ");
            lt_analyze_jnum(out, c.target);
        }
        any = true;
        fprintf(out, ",\n    \"%s\": {\"max_ok\": ", engines[e]);
        lt_analyze_jnum(out, c.max_ok > 0 ? c.max_ok : NAN);
        fprintf(out, ", \"min_fail\": ");
        lt_analyze_jnum(out, c.min_fail > 0 ? c.min_fail : NAN);
        fprintf(out, ", \"goodput\": ");
        lt_analyze_jnum(out, c.goodput);
        fprintf(out, ", \"probes\": %u}", c.probes);
    }
    if (!any) {
        fprintf(out, "null");
        return;
    }
    fprintf(out, ",\n    \"probes\": [");
    bool first = true;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        const struct lt_analyze_probe *p = &r->probe;
        if (!lt_analyze_is_probe(r))
            continue;
        json_probe_head(out, r, &first);
        struct lt_analyze_judged j;
        judged_of(r, &j);
        fprintf(out,
                ", \"n\": %llu, \"cancelled\": %llu, \"faults\": %llu, \"judged\": %llu, "
                "\"attain\": ",
                (unsigned long long)r->measured, (unsigned long long)j.cancelled,
                (unsigned long long)j.faults, (unsigned long long)j.judged);
        lt_analyze_jnum(out, p->attain);
        fprintf(out, ", \"attain_lo\": ");
        lt_analyze_jnum(out, p->lo);
        fprintf(out, ", \"attain_hi\": ");
        lt_analyze_jnum(out, p->hi);
        fprintf(out, ", \"verdict\": ");
        lt_analyze_jstr(out, p->verdict);
        if (p->why[0]) {
            fprintf(out, ", \"why\": ");
            lt_analyze_jstr(out, p->why);
        }
        fputc('}', out);
    }
    fprintf(out, "],\n    \"left_out\": [");
    first = true;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        const struct lt_analyze_probe *p = &r->probe;
        if (!p->search[0] || !p->left_out)
            continue;
        json_probe_head(out, r, &first);
        fprintf(out, ", \"why\": ");
        lt_analyze_jstr(out, p->left_out);
        fputc('}', out);
    }
    fprintf(out, "]}");
}
