/*
 * loadtrace sim: run the simulated OpenAI-compatible LLM server in the
 * foreground until SIGINT or SIGTERM. The server itself is sim/ (it is
 * embedded by replay and demo too); this file only reads options, starts
 * it, waits for a signal and stops it so the --log is complete.
 */
#include "base/lt_path.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "sim/sim.h"
#include "sim/sim_fit.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

struct sim_cli_opts {
    struct lt_sim_opts sim;
    char host[256];
    const char *port_file;
    bool quiet;
    bool fit; /* sim --fit RESULTS... -o PROFILE */
    const char *fit_out;
    double step_gap_ms;
    /* --max-running and --set: keys of the profile overridden, applied in
     * order after it is loaded (a sweep's grid varies them) */
    const char *set_key[32];
    const char *set_val[32];
    char set_buf[32][64];
    int n_set;
    struct lt_sim_profile prof;
    char **files;
    int nfiles;
};

static int parse_listen(struct sim_cli_opts *o, const char *arg)
{
    const char *colon = strrchr(arg, ':');
    if (!colon)
        return -1;
    const char *h = arg;
    size_t hl = (size_t)(colon - arg);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    uint64_t port;
    if (hl == 0 || hl >= sizeof o->host || !cli_parse_u64(colon + 1, &port) || port > 65535)
        return -1;
    memcpy(o->host, h, hl);
    o->host[hl] = '\0';
    o->sim.host = o->host;
    o->sim.port = (uint16_t)port;
    return 0;
}

static int add_set(struct sim_cli_opts *o, const char *key, const char *value)
{
    if (o->n_set == (int)(sizeof o->set_key / sizeof o->set_key[0])) {
        cli_error("sim", "too many profile overrides (at most 32)");
        return -1;
    }
    snprintf(o->set_buf[o->n_set], sizeof o->set_buf[0], "%s", key);
    o->set_key[o->n_set] = o->set_buf[o->n_set];
    o->set_val[o->n_set] = value;
    o->n_set++;
    return 0;
}

/* The profile with the overrides applied, checked, used instead of the
 * name: an unknown key or a bad value is a usage error before anything
 * listens. */
static int apply_sets(struct sim_cli_opts *o)
{
    if (!o->n_set)
        return -1;
    struct lt_err err = {0};
    if (lt_sim_profile_load(&o->prof, o->sim.profile ? o->sim.profile : "default", &err) < 0) {
        cli_error("sim", "%s", err.msg);
        return 2;
    }
    for (int i = 0; i < o->n_set; i++)
        if (lt_sim_profile_set(&o->prof, o->set_key[i], o->set_val[i], &err) < 0) {
            cli_error("sim", "--set %s=%s: %s", o->set_key[i], o->set_val[i], err.msg);
            return 2;
        }
    if (lt_sim_profile_check(&o->prof, &err) < 0) {
        cli_error("sim", "the profile with its overrides: %s", err.msg);
        return 2;
    }
    o->sim.profile_data = &o->prof;
    return -1;
}

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. A new option is a row here and
 * a case in sim_opt. */
static const struct cli_opt sim_opts_table[] = {
    {"listen", 0, "HOST:PORT", 'l',
     "address to serve on (default 127.0.0.1:8000; port 0 =\n"
     "any free port, see --port-file)"},
    {"port-file", 0, "FILE", 'P', "write the port number to FILE once listening"},
    {"profile", 0, "NAME|FILE", 'p',
     "server description: default (Qwen3.5-397B on 8x RTX PRO\n"
     "6000), fast (no delays), or a profile file"},
    {"dialect", 0, "LIST", 'd',
     "stream variations, comma-separated: vllm (default),\n"
     "no-role-chunk, usage-in-last, reasoning (field name\n"
     "instead of reasoning_content), close (close the\n"
     "connection after every response), no-tokenize\n"
     "(no /tokenize, as servers without one), llamacpp\n"
     "(llama-server's /props, /slots, slot erase 501),\n"
     "slot-erase (llamacpp with the slot erase allowed)"},
    {"faults", 0, "SPEC", 'f',
     "inject failures, e.g. 500=0.01,429=0.05:2,refuse=0.01:1s,\n"
     "disconnect=0.02:10,stall=0.02:2s:5,malformed=0.01:3,\n"
     "slow=0.05:1s,seed=7 (probabilities; see docs/sim.md);\n"
     "GET /metrics: metrics-html=P, metrics-big=P:BYTES,\n"
     "metrics-slow=P:DUR"},
    {"log", 0, "FILE", 'L',
     "write one JSON line per request: arrival, prompt tokens\n"
     "as counted, every token's emission time, fault applied"},
    {"time-scale", 0, "X", 't',
     "run the model X times faster than real time (reported\n"
     "times stay real)"},
    {"max-running", 0, "N", 'M',
     "most requests in the batch, overriding the profile's\n"
     "max_running"},
    {"set", 0, "KEY=VALUE", 'S',
     "override any profile key (docs/sim.md), e.g.\n"
     "--set kv_tokens=200000; may be repeated"},
    {"seed", 0, "N", 's', "seed of output lengths and faults (default 1)"},
    {"max-body", 0, "BYTES", 'b', "request body limit (default 4194304)"},
    {"max-pending", 0, "BYTES", 'B',
     "all request bodies in memory at once; beyond, a 503\n"
     "(default 268435456, or 4 x --max-body if more)"},
    {"max-connections", 0, "N", 'c', "open connections limit (default 16384)"},
    {"threads", 0, "N", 'T',
     "network threads (default 1): a step's tokens are\n"
     "written by N threads at once, which keeps their\n"
     "times closer to the model's when batches are large\n"
     "and the machine has the cores"},
    {"quiet", 'q', NULL, 'q', "no startup and summary lines on stderr"},
    {"fit", 0, NULL, 'F', "fit a profile to the results files given (see above)"},
    {"", 'o', "FILE", 'o', "with --fit: the profile file to write"},
    {"step-gap", 0, "MS", 'G',
     "with --fit: tokens closer than this share a step\n"
     "(default 0.1)"},
    {0}};

const struct cli_spec cmd_sim_spec = {
    .cmd = "sim",
    .synopsis = "usage: loadtrace sim [--listen HOST:PORT] [--profile NAME|FILE] [--dialect LIST]\n"
                "                     [--faults SPEC] [--log FILE] [--time-scale X] [options]\n"
                "\n"
                "Serve a simulated OpenAI-compatible LLM whose tokens stream at the times a\n"
                "continuous-batching model says (docs/sim.md): GET /health, GET /v1/models,\n"
                "POST /v1/chat/completions, POST /v1/completions, POST /v1/responses (OpenAI\n"
                "Responses), POST /v1/messages (Anthropic Messages), POST /tokenize, GET /metrics\n"
                "(vLLM's names, the model's true values), POST /reset_prefix_cache.\n"
                "Stops cleanly on SIGINT or SIGTERM.\n"
                "\n"
                "       loadtrace sim --fit RESULTS.lt.zst [...] -o FILE [--profile BASE]\n"
                "                     [--time-scale X] [--step-gap MS]\n"
                "\n"
                "Fit a profile's step costs to live replays of a server (every token's time):\n"
                "prints each cost with its standard error, the ones the data cannot identify\n"
                "and what load would, and the residuals; writes a profile file. --time-scale:\n"
                "the server was a sim run that much faster than real time. Keys the fit does\n"
                "not touch come from --profile (default: default).\n"
                "\n",
    .opts = sim_opts_table,
    .col = 24,
};

/* --set KEY=VALUE: one more override. */
static int set_opt(struct sim_cli_opts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof o->set_buf[0]) {
        cli_error("sim", "--set wants KEY=VALUE, got '%s'", arg);
        return 2;
    }
    char key[64];
    memcpy(key, arg, (size_t)(eq - arg));
    key[eq - arg] = '\0';
    return add_set(o, key, eq + 1) < 0 ? 2 : 0;
}

/* The options that size the server: its limits and threads. */
static int limit_opt(struct lt_sim_opts *so, int id, const char *arg)
{
    uint64_t u;
    switch (id) {
    case 'b':
        if (!cli_parse_u64_in("sim", "--max-body", arg, 1024, (uint64_t)1 << 31, &u))
            return 2;
        so->max_body = (size_t)u;
        break;
    case 'B':
        if (!cli_parse_u64(arg, &u) || u < 1024 || u > ((uint64_t)1 << 40)) {
            cli_error("sim", "--max-pending wants 1024 to 1099511627776 bytes, got '%s'", arg);
            return 2;
        }
        so->max_pending = (size_t)u;
        break;
    case 'c':
        if (!cli_parse_u64_in("sim", "--max-connections", arg, 1, 1000000, &u))
            return 2;
        so->max_connections = (unsigned)u;
        break;
    case 'T':
        if (!cli_parse_u64_in("sim", "--threads", arg, 1, 256, &u))
            return 2;
        so->threads = (unsigned)u;
        break;
    }
    return 0;
}

static int sim_opt(void *ud, int id, char *arg)
{
    struct sim_cli_opts *o = ud;
    uint64_t u;
    switch (id) {
    case 'l':
        if (parse_listen(o, arg) < 0) {
            cli_error("sim", "--listen wants HOST:PORT, got '%s'", arg);
            return 2;
        }
        break;
    case 'P':
        o->port_file = arg;
        break;
    case 'p':
        o->sim.profile = arg;
        break;
    case 'd':
        o->sim.dialect = arg;
        break;
    case 'f':
        o->sim.faults = arg;
        break;
    case 'L':
        o->sim.log_path = arg;
        break;
    case 't':
        return cli_parse_double_in("sim", "--time-scale", arg, 0, INFINITY, &o->sim.time_scale) ? 0
                                                                                                : 2;
    case 's':
        return cli_parse_u64_in("sim", "--seed", arg, 0, UINT64_MAX, &o->sim.seed) ? 0 : 2;
    case 'b':
    case 'B':
    case 'c':
    case 'T':
        return limit_opt(&o->sim, id, arg);
    case 'q':
        o->quiet = true;
        break;
    case 'F':
        o->fit = true;
        break;
    case 'o':
        o->fit_out = arg;
        break;
    case 'G':
        return cli_parse_double_in("sim", "--step-gap", arg, 0, 1e6, &o->step_gap_ms) ? 0 : 2;
    case 'M':
        if (!cli_parse_u64_in("sim", "--max-running", arg, 1, 1000000, &u))
            return 2;
        return add_set(o, "max_running", arg) < 0 ? 2 : 0;
    case 'S':
        return set_opt(o, arg);
    }
    return 0;
}

/* sim --fit's operands and output: -1 to go on, else the exit status. */
static int check_fit(struct sim_cli_opts *o, int argc, char **argv)
{
    if (optind == argc || !o->fit_out) {
        cli_error("sim", "--fit wants results files and -o PROFILE");
        return 2;
    }
    o->files = argv + optind;
    o->nfiles = argc - optind;
    /* The profile replaces -o whole: never a results file it reads, nor
     * the base profile, under any name (a symbolic link included). */
    struct lt_err err = {0};
    if (lt_path_not_input(o->fit_out, (const char *const *)o->files, (size_t)o->nfiles, &err) < 0 ||
        (o->sim.profile &&
         lt_path_not_input(o->fit_out, (const char *const *)&o->sim.profile, 1, &err) < 0)) {
        cli_error("sim", "%s", err.msg);
        return 2;
    }
    return -1;
}

static int parse_args(struct sim_cli_opts *o, int argc, char **argv)
{
    o->sim.host = "127.0.0.1";
    o->sim.port = 8000;
    o->sim.seed = 1;
    int prc = cli_opts_parse(&cmd_sim_spec, argc, argv, sim_opt, o);
    if (prc >= 0)
        return prc;
    if (o->fit)
        return check_fit(o, argc, argv);
    if (o->fit_out || o->step_gap_ms > 0) {
        cli_error("sim", "-o and --step-gap go with --fit");
        return 2;
    }
    if (optind != argc) {
        cli_error("sim", "unexpected argument '%s'", argv[optind]);
        cli_opts_usage(&cmd_sim_spec, stderr);
        return 2;
    }
    return apply_sets(o);
}

/* Many open streams need many descriptors: take what the hard limit allows. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void print_resid(const char *what, const struct lt_sim_fit_resid *r)
{
    if (!r->n) {
        printf("  %-28s no steps\n", what);
        return;
    }
    printf("  %-28s %8llu rows  mean %9.3f ms  rms %8.3f ms  |err| p50 %5.1f%%  p90 %5.1f%%\n",
           what, (unsigned long long)r->n, r->mean_ms, r->rms_ms, 100 * r->p50_rel,
           100 * r->p90_rel);
}

/* sim --fit: the library fits; this prints what it found. */
/* The runs the fit read, each classed, and the cache it found them in. */
static void print_runs(const struct lt_sim_fit *f)
{
    printf("\n  runs (classed before fitting; the costs come from the stable ones):\n");
    for (uint32_t k = 0; k < f->nrun; k++) {
        const struct lt_sim_fit_run *r = &f->run[k];
        printf("    file %u run %u: %-14s %s (%llu requests; %s)\n", r->file + 1, r->id, r->cls,
               r->used ? "used" : "not used", (unsigned long long)r->requests, r->why);
        char th[32] = "-";
        if (r->trace_hit >= 0)
            snprintf(th, sizeof th, "%.1f %%", 100 * r->trace_hit);
        printf("      cache at start: %s; prompt tokens cached %.1f %%, the trace allows %s%s\n",
               r->cache_state[0] ? r->cache_state : "not recorded", 100 * r->cached_share, th,
               r->cache_warm ? "  WARM: an earlier run warmed the cache; a virtual run starts "
                               "cold (restart the server, or --reset-prefix-cache where it "
                               "works)"
                             : "");
        if (r->has_metrics)
            printf("      the server's counters: prefill %.4g ms per prompt token (%llu tokens), "
                   "generation %.4g ms per token, %.2f busy slots per decode (%llu decodes)\n",
                   r->m_prefill_ms_per_token, (unsigned long long)r->m_prompt_tokens,
                   r->m_gen_ms_per_token, r->m_busy_per_decode, (unsigned long long)r->m_decodes);
    }
}

/* What the fit warns of, and what the server said of itself. */
static void print_notes(const struct lt_sim_fit *f)
{
    if (f->metrics_spread > 1.25)
        printf("  UNSTEADY: the server's own prefill cost per token differed %.2f-fold between "
               "the runs used (its counters): its speed changed between runs (a machine shared "
               "with other work?), which no fit can predict; refit on a quiet machine\n",
               f->metrics_spread);
    if (f->cached_same)
        printf("  cached_ms_per_token: kept from the base: most prompts had about as many "
               "cached tokens (mean %.1f +- %.1f; a chat template's common start), which cannot be "
               "told from a per-prompt cost; needs prompts that share prefixes of different "
               "lengths\n",
               f->cached_mean, f->cached_sd);
    if (f->cached_median)
        printf("  shared_prefix_tokens %u: the server's word (the cached tokens it reported in "
               "its responses, the median): a start every prompt shares, cached in a slot after "
               "its first request\n",
               f->cached_median);
    if (f->outside_identified) {
        printf("  outside the server's compute: %.4g +- %.2g ms a request: timelines less timings "
               "(an idle TTFT less the server's prompt_ms, %.4g ms at the median, less the "
               "client's round trip)\n",
               f->outside_server_ms, f->outside_server_se, f->outside_ms);
        printf("  loop_ms_per_request %.4g: timelines (what each admission held up the other "
               "slots in the decode windows beyond its prompt time, %.4g +- %.2g%s): the server's "
               "main loop's work on a request, which holds up the step that admits it\n",
               f->loop_ms, f->loop_win_ms, f->loop_win_se,
               f->loop_win_identified ? "" : ", not identified");
        printf("  front_ms_per_request %.4g: timelines less timings (the rest, beside the loop: "
               "it delays that request only)\n",
               f->front_fixed_ms);
    } else if (f->prefill_from_timings) {
        printf("  loop_ms_per_request, front_ms_per_request 0: not identified (an idle TTFT less "
               "the server's prompt_ms, %.4g ms at the median, is within two of the client's round "
               "trips or its noise%s)\n",
               f->outside_ms, f->word.rtt_ms > 0 ? "" : "; the round trip was not measured");
    }
    if (f->speed_identified)
        printf("  speed_cv %.3g, speed_tau_ms %.4g measured: timelines (%llu decodes alone, "
               "closed loops at 1, %.4g ms long on average: their mean gaps' logs spread %.3g, their "
               "halves correlated %.3f): the server's speed wanders; the profile keeps steady steps "
               "(on llama-server they did as well on held-out loads, and give one answer, not a "
               "draw), set both keys for a twin "
               "that wanders with it\n",
               f->speed_cv, f->speed_tau_ms, (unsigned long long)f->speed_n, f->speed_decode_ms,
               f->speed_req_sd, f->speed_rho);
    else if (f->speed_n >= 1)
        printf("  speed_cv 0: not identified (%llu decodes alone, closed loops at 1; their "
               "halves' correlation %.3f is not two standard errors above 0, or there were "
               "fewer than 12)\n",
               (unsigned long long)f->speed_n, f->speed_rho);
    if (f->pf_tokens_max)
        printf("  prefill fitted on prompts of %u to %u uncached tokens: a prediction whose "
               "prompts are longer (or shorter) extrapolates %s\n",
               f->pf_tokens_min, f->pf_tokens_max,
               f->ctx_identified ? "the curve" : "the line (a curve the runs did not show)");
    if (f->front_identified)
        printf("  front_ms_per_token %.4g: timelines less %s (the TTFT slope %.4g +- %.2g "
               "less the server's own prefill per token, %.4g): its work per prompt token in "
               "front of the engine (template, tokenizing), which delays a first token and holds "
               "up no step\n",
               f->front_ms_per_token, f->prefill_from_timings ? "timings" : "metrics",
               f->ttft_slope, f->ttft_slope_se, f->profile.prefill_ms_per_token);
    else if (f->prefill_from_metrics && f->ttft_slope_identified)
        printf("  prefill_ms_per_token from the TTFT slope (a check): %.4g +- %.2g; the rest of "
               "an idle TTFT is the server's work in front of its engine (HTTP, template, "
               "tokenizing) and the client\n",
               f->ttft_slope, f->ttft_slope_se);
    if (f->guess)
        printf("  GUESS: every run was backlogged: the costs are read through queues and are a "
               "guess; replay a load below saturation\n");
    const struct lt_sim_fit_word *w = &f->word;
    if (w->kind[0] || w->slots || w->model[0] || w->rtt_ms > 0) {
        printf("  the server's word: %s%s%s", w->kind[0] ? w->kind : "server",
               w->model[0] ? " serving " : "", w->model);
        if (w->slots)
            printf(", %u slots", w->slots);
        if (w->ctx)
            printf(", context %u%s", w->ctx, w->slots ? " per slot" : "");
        if (w->vocab)
            printf(", vocabulary %u", w->vocab);
        printf("; client round trip %.4g ms\n", w->rtt_ms);
    }
}

/* Each cost with its standard error, or why the data cannot identify it. */
static void print_costs(const struct lt_sim_fit *f)
{
    printf("\n  %-24s %12s %12s  %s\n", "cost (ms)", "value", "std error", "from");
    for (int c = 0; c < LT_SIM_FIT_NCOST; c++) {
        const struct lt_sim_fit_param *p = &f->cost[c];
        if (p->identified)
            printf("  %-24s %12.6g %12.2g  %s%s\n", p->key, p->value, p->se, p->source,
                   p->value < 0 ? "  (negative: written as 0)" : "");
        else
            printf("  %-24s %12.6g %12s  not identified (%s); needs %s\n", p->key, p->value, "-",
                   p->kept ? "kept from the base profile" : "0, folded into the others", p->needs);
    }
    if (f->ctx_identified)
        printf("  %-24s %12.6g %12.2g  %s against prompt length at an idle server, "
               "a curve: a long prompt's tokens dearer)\n",
               "prefill_ms_per_token_ctx", f->ctx_ms, f->ctx_se,
               f->prefill_from_timings ? "timings (llama.cpp prompt_ms" : "timelines (TTFT");
    else
        printf("  %-24s %12d %12s  not identified (the idle TTFTs were a line in the prompt's "
               "length: the curve came out %.3g +- %.2g); needs prompts of different lengths at an "
               "idle server\n",
               "prefill_ms_per_token_ctx", 0, "-", f->ctx_try_ms, f->ctx_try_se);
    for (int b = 0; b < LT_SIM_FIT_NBEND; b++)
        if (f->bend_identified[b])
            printf("  %-24s %12.6g %12.2g  timelines (a step of %d decoders against the line)\n",
                   "step bend", f->bend[b], f->bend_se[b], b + 2);
    if (f->bent) {
        printf("  step_ms_by_batch        ");
        for (uint32_t d = 0; d < f->profile.n_step_ms_by_batch; d++)
            printf(" %.4g", f->profile.step_ms_by_batch[d]);
        printf("  timelines (the decode step's cost at a batch of 1 to %u: not a line)\n",
               f->profile.n_step_ms_by_batch);
    } else if (f->bends_refused) {
        printf("  step_ms_by_batch: off (the cost by batch size came out falling with the batch, "
               "which no server's step does: the runs' speeds differed, a machine shared with "
               "other work?; the line is kept)\n");
    } else if (f->word.slots && f->word.slots <= LT_SIM_FIT_NBEND + 1) {
        printf("  step_ms_by_batch: off (the step cost was a line in the batch, within 3 "
               "standard errors, at every batch size seen)\n");
    }
    printf("\n");
}

/* The limits and sizes, and where each came from. */
static void print_limits(const struct lt_sim_fit *f)
{
    if (!strcmp(f->max_running_src, "server"))
        printf("  max_running %u: the server's word (slots; the largest batch seen was %u)\n",
               f->profile.max_running, f->max_batch);
    else if (f->max_running_identified)
        printf("  max_running %u: requests queued behind a batch this size (%llu steps; "
               "%.4g at each size below)\n",
               f->profile.max_running, (unsigned long long)f->queued_at_max, f->queued_below);
    else if (f->queued_at_max >= 3)
        printf("  max_running %u: not identified (requests seemed to wait behind the largest "
               "batch seen, %u, in %llu steps, but about as often beside the sizes below it, "
               "%.4g each, which a limit does not allow: they reached the server late, as from a "
               "client starved of CPU; a load that queues for longer would identify it)\n",
               f->profile.max_running, f->max_batch, (unsigned long long)f->queued_at_max,
               f->queued_below);
    else
        printf("  max_running %u: not identified (nothing queued behind the largest batch "
               "seen, %u; a load beyond it would identify it)\n",
               f->profile.max_running, f->max_batch);
    if (f->profile.slot_runs)
        printf("  slot_runs 1: the server's word (llama.cpp with %u slots, a KV stream each: a "
               "step pays a pass per run of consecutive busy slots, the slots read back by the "
               "server's rule; step_ms_by_batch is a pass's cost by its size)\n",
               f->profile.max_running);
    printf("  prefill_seqs %u (%s; most prompts finished in one step: %u)\n",
           f->profile.prefill_seqs, f->prefill_seqs_src, f->max_prefill);
    printf("  kv_tokens %llu (%s), max_model_len %u (%s), vocab %u (%s), model %s (%s)\n",
           (unsigned long long)f->profile.kv_tokens, f->kv_src, f->profile.max_model_len,
           f->ctx_src, f->profile.vocab, f->vocab_src, f->profile.model, f->model_src);
    printf("  batch_tokens, cache: not identified from timelines (kept from the base profile)\n");
    if (f->client_bounded)
        printf("  client share of TTFT %.4g ms: held at %s (the free fit said %.4g ms; the "
               "measured round trip is %.3g ms): the rest of a TTFT is the server's\n",
               f->client_ms, f->client_ms > 0 ? "its measured bound" : "0", f->client_free_ms,
               f->word.rtt_ms);
    else if (f->client_identified)
        printf("  client share of TTFT %.4g ms +- %.2g (send and first chunk's delivery; not in "
               "the profile)\n",
               f->client_ms, f->client_se);
    else
        printf("  client share of TTFT: not identified (no request found the server idle)\n");
}

static int run_fit(const struct sim_cli_opts *o)
{
    struct lt_err err = {0};
    struct lt_sim_fit_opts fo = {.time_scale = o->sim.time_scale, .step_gap_ms = o->step_gap_ms};
    if (lt_sim_profile_load(&fo.base, o->sim.profile ? o->sim.profile : "default", &err) < 0) {
        cli_error("sim", "%s", err.msg);
        return 2;
    }
    struct lt_sim_fit *f = malloc(sizeof *f);
    if (!f) {
        cli_error("sim", "out of memory");
        return 1;
    }
    int rc = lt_sim_fit_files((const char *const *)o->files, o->nfiles, &fo, f, &err);
    if (rc >= 0)
        rc = lt_sim_fit_write(f, o->fit_out, &err);
    if (rc < 0) {
        cli_error("sim", "%s", err.msg);
        free(f);
        return 1;
    }
    printf("fitted %llu requests (%llu tokens) in %llu runs of %llu files: %llu steps, %llu "
           "used\n",
           (unsigned long long)f->requests, (unsigned long long)f->tokens,
           (unsigned long long)f->runs, (unsigned long long)f->files, (unsigned long long)f->steps,
           (unsigned long long)f->steps_used);
    if (f->segments > f->runs || f->rows_stride > 1)
        printf("  read in %llu segments (at most %llu requests held at once); %llu of %llu "
               "request rows fitted (1 in %llu, chosen by a hash; %llu dropped at segment "
               "edges): memory stays bounded\n",
               (unsigned long long)f->segments, (unsigned long long)f->held_max,
               (unsigned long long)f->rows_kept, (unsigned long long)f->rows_offered,
               (unsigned long long)f->rows_stride, (unsigned long long)f->rows_cut);
    print_runs(f);
    print_notes(f);
    print_costs(f);
    print_limits(f);
    printf("\nresiduals (observed - fitted, model time, per request):\n");
    print_resid("decode time (E2E - TTFT)", &f->decode);
    print_resid("TTFT at an idle server", &f->prefill);
    printf("\nwrote %s\n", o->fit_out);
    free(f);
    return 0;
}

int cmd_sim(int argc, char **argv)
{
    struct sim_cli_opts o = {0};
    int pr = parse_args(&o, argc, argv);
    if (pr >= 0)
        return pr;
    if (cli_dry_run())
        return 0;
    if (o.fit)
        return run_fit(&o);
    raise_fd_limit();
    signal(SIGPIPE, SIG_IGN);
    /* Block the stop signals before any thread exists, so every thread
     * inherits the mask and only sigwait below sees them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct lt_err err = {0};
    struct lt_sim *s = lt_sim_start(&o.sim, &err);
    if (!s) {
        cli_error("sim", "%s", err.msg);
        return 1;
    }
    uint16_t port = lt_sim_port(s);
    if (o.port_file && cli_write_port_file(o.port_file, port) < 0) {
        cli_error("sim", "cannot write the port to %s", o.port_file);
        lt_sim_stop(s);
        return 1;
    }
    if (!o.quiet)
        fprintf(stderr, "loadtrace sim: serving %s on http://%s:%u (profile %s, time scale %g)\n",
                lt_sim_profile(s)->model, o.sim.host, port, lt_sim_profile(s)->name,
                o.sim.time_scale > 0 ? o.sim.time_scale : 1.0);
    if (!o.quiet && o.sim.log_path)
        fprintf(stderr,
                "loadtrace sim: logging every request to %s: a JSON line each, with every "
                "token's time (about 20 bytes a token): it grows with the session; the size is "
                "said at the end\n",
                o.sim.log_path);
    int sig = 0;
    sigwait(&set, &sig);
    struct lt_sim_stats st;
    lt_sim_stats(s, &st);
    int rc = lt_sim_stop_err(s, &err);
    if (!o.quiet)
        fprintf(stderr,
                "loadtrace sim: stopped by signal %d after %llu requests (at most %llu open), "
                "%llu chunks, %llu faults; chunk lateness p50 %.0f us, p99 %.0f us\n",
                sig, (unsigned long long)(st.requests + st.streams_open),
                (unsigned long long)st.streams_peak, (unsigned long long)st.chunks,
                (unsigned long long)st.faults, st.late_p50_us, st.late_p99_us);
    struct stat lst;
    if (!o.quiet && o.sim.log_path && stat(o.sim.log_path, &lst) == 0)
        fprintf(stderr, "loadtrace sim: the log %s holds %.1f MB (%llu bytes)\n", o.sim.log_path,
                (double)lst.st_size / 1e6, (unsigned long long)lst.st_size);
    if (rc < 0) {
        cli_error("sim", "%s", err.msg);
        return 1;
    }
    return 0;
}
