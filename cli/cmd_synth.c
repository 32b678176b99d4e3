/*
 * loadtrace synth: write a synthetic trace from distributions, or fitted to
 * a real trace (--fit) at any rate and length. Parsing only; the work is
 * workload/trace_synth.c, and docs/synth.md explains every option.
 */
#include "cli/cli_util.h"
#include "base/lt_path.h"
#include "cli/commands.h"
#include "workload/media_mix.h"
#include "workload/servegen.h"
#include "workload/trace_synth.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int bad(const char *what, const char *arg)
{
    cli_error("synth", "bad %s '%s' (see loadtrace synth --help)", what, arg);
    return 2;
}

/* Up to max comma-separated numbers ("P[,F]", "P,T[,K]"); their count, or
 * -1 if anything else is there. */
static int parse_doubles(const char *s, double *v, int max)
{
    int n = 0;
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(s, &end);
        if (end == s || errno || !isfinite(x) || n == max)
            return -1;
        v[n++] = x;
        if (!*end)
            return n;
        if (*end != ',')
            return -1;
        s = end + 1;
    }
}

enum {
    O_ARR = 256,
    O_RATE,
    O_DUR,
    O_REQ,
    O_SHAPE,
    O_ROUND,
    O_IN,
    O_OUT,
    O_REASON,
    O_TURNS,
    O_THINK,
    O_PREFIX,
    O_BT,
    O_MODEL,
    O_API,
    O_FIT,
    O_FITN,
    O_SEED,
    O_SERVEGEN,
    O_WINDOW,
    O_IMAGES
};

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. A new option is a row here and
 * a case in synth_opt. */
static const struct cli_opt synth_opts_table[] = {
    CLI_HEADING("arrivals:"),
    {"arrivals", 0, "A", O_ARR,
     "constant | poisson | gamma:CV (gaps with sd/mean = CV);\n"
     "with --fit also gamma:fit (the real CV) and empirical (the\n"
     "real gaps, replayed in runs of up to 1024 consecutive\n"
     "ones). Default: poisson; with --fit, empirical"},
    {"rate", 0, "R", O_RATE,
     "mean requests per second, at most 1e6 (with --fit: default\n"
     "the real rate)"},
    {"duration", 0, "D", O_DUR, "last arrival at most D after the first (500ms, 90s, 10m, 2h)"},
    {"requests", 0, "N", O_REQ, "stop after N requests (with --fit and neither: the real count)"},
    {"shape", 0, "S", O_SHAPE,
     "flat (default) | ramp:R0,R1 (rate goes linearly from R0 to R1\n"
     "req/s over the duration; no --rate) | diurnal:PERIOD,AMPLITUDE\n"
     "(rate R * (1 + AMPLITUDE * sin(2 pi t / PERIOD)), e.g. 24h,0.5)"},
    {"round", 0, "D", O_ROUND,
     "round arrivals down to a multiple of D (real traces often\n"
     "are: Mooncake to 1ms); with --fit the real rounding is the\n"
     "default, --round 0 turns it off"},
    CLI_HEADING("lengths (tokens; required without --fit):"),
    {"in", 0, "L", O_IN, "prompt tokens (of each turn's new message)"},
    {"out", 0, "L", O_OUT,
     "output tokens\n"
     "L is fixed:N | uniform:A,B (A..B inclusive) |\n"
     "lognormal:MEDIAN,SIGMA (exp of a normal with mean ln MEDIAN\n"
     "and sd SIGMA, rounded, at least 1)"},
    {"reasoning", 0, "P[,F]", O_REASON,
     "a share P of requests reason, with F of their output\n"
     "(default F 0.5) being reasoning tokens"},
    CLI_HEADING("sessions and prefixes:"),
    {"turns", 0, "L", O_TURNS,
     "make sessions of L turns (same forms as lengths); each turn's\n"
     "prompt is the whole conversation so far plus --in new tokens"},
    {"think", 0, "D", O_THINK, "mean think time between turns (exponential; default 10s)"},
    {"prefix", 0, "P,T[,K]", O_PREFIX,
     "a share P of sessions start with one of K shared system\n"
     "prompts of T tokens (default K 1)"},
    {"block-tokens", 0, "N", O_BT, "prefix block size for block ids (default 512; 0 = no blocks)"},
    {"model", 0, "NAME", O_MODEL, "model written on every record"},
    {"api", 0, "NAME", O_API, "api written on every record (chat, completions)"},
    CLI_HEADING("fit to a real trace:"),
    {"fit", 0, "FILE", O_FIT,
     "sample FILE's records (lengths jointly, reasoning, tool calls,\n"
     "message shapes, whole sessions with their timing, prefix\n"
     "blocks with their reuse structure)"},
    {"fit-sample", 0, "N", O_FITN, "keep at most N records of FILE in memory (default 100000)"},
    CLI_HEADING("other:"),
    {"images", 0, "P:N:WxH[:FMT]", O_IMAGES,
     "a share P of requests carry N (or A-B) images of W x H\n"
     "pixels, png or jpeg (default jpeg); their tokens (2 + one\n"
     "per 28 x 28 pixels) count in the prompt (docs/synth.md)"},
    {"servegen", 0, "DIR", O_SERVEGEN,
     "draw from a ServeGen workload folder (alibaba/ServeGen, e.g.\n"
     "data/reason/deepseek-r1): its clients' per-window rates, gap\n"
     "families and CVs, and length distributions (docs/synth.md)"},
    {"window", 0, "S", O_WINDOW,
     "with --servegen: start the slice at S seconds of the day\n"
     "(default: the first window with traffic); --duration is its\n"
     "length (default 600 s), --rate scales it to R req/s,\n"
     "--requests N stops after N"},
    {"seed", 0, "N", O_SEED, "random seed (default 1)"},
    {"output", 'o', "F", 'o', "the trace to write (- = standard output)"},
    {"quiet", 'q', NULL, 'q', "no summary line on stderr"},
    {0}};

const struct cli_spec cmd_synth_spec = {
    .cmd = "synth",
    .synopsis =
        "usage: loadtrace synth [options] -o OUT.lt.zst\n"
        "       loadtrace synth --fit REAL.lt.zst [--rate R] [--duration D | --requests N] -o OUT\n"
        "       loadtrace synth --servegen DIR [--window S] [--duration D] [--rate R]\n"
        "                       [--requests N] -o OUT\n"
        "\n"
        "Write a synthetic trace. The same options and --seed give the same bytes.\n"
        "\n",
    .opts = synth_opts_table,
    .col = 19,
    .epilogue = "The header's `created` is 1970-01-01T00:00:00Z (or SOURCE_DATE_EPOCH) so that\n"
                "output depends on the options only.\n",
};

/* What the options say besides the library's: where the trace goes. */
struct synth_cli {
    struct lt_synth_opts o;
    const char *out, *servegen;
    int64_t window_us;
    bool quiet, round_set;
};

/* --reasoning P[,F] and --prefix P,T[,K]: their numbers, checked. */
static int share_opt(struct lt_synth_opts *o, int id, const char *arg)
{
    double v[3];
    if (id == O_REASON) {
        int n = parse_doubles(arg, v, 2);
        if (n < 1 || v[0] < 0 || v[0] > 1 || (n == 2 && (v[1] < 0 || v[1] > 1)))
            return bad("--reasoning", arg);
        o->reasoning_share = v[0];
        if (n == 2)
            o->reasoning_frac = v[1];
        return 0;
    }
    int n = parse_doubles(arg, v, 3);
    if (n < 2 || v[0] < 0 || v[0] > 1 || v[1] < 1 || v[1] > 1e8 ||
        (n == 3 && (v[2] < 1 || v[2] > 1e9)))
        return bad("--prefix", arg);
    o->prefix_share = v[0];
    o->prefix_tokens = (uint32_t)v[1];
    o->prefix_count = n == 3 ? (uint32_t)v[2] : 1;
    return 0;
}

/* A length's form (--in, --out, --turns). */
static int len_opt(struct lt_len_spec *l, const char *opt, const char *arg)
{
    struct lt_err err = {0};
    return lt_len_spec_parse(arg, l, &err) < 0 ? bad(opt, arg) : 0;
}

static int synth_opt(void *ud, int id, char *arg)
{
    struct synth_cli *sc = ud;
    struct lt_synth_opts *o = &sc->o;
    struct lt_err err = {0};
    uint64_t u;
    switch (id) {
    case O_ARR:
        if (lt_arrivals_parse(arg, LT_ARR_FIT, &o->arrivals, &o->cv, &err) < 0) {
            cli_error("synth", "--arrivals %s", err.msg);
            return 2;
        }
        break;
    case O_RATE:
        return cli_parse_double_in("synth", "--rate", arg, 0, INFINITY, &o->rate) ? 0 : 2;
    case O_DUR:
        return cli_parse_duration_in("synth", "--duration", arg, 1, &o->duration_us) ? 0 : 2;
    case O_REQ:
        return cli_parse_u64_in("synth", "--requests", arg, 1, UINT64_MAX, &o->requests) ? 0 : 2;
    case O_SHAPE:
        if (lt_shape_parse(arg, &o->shape, &o->shape_a, &o->shape_b, &err) < 0)
            return bad("--shape", arg);
        break;
    case O_ROUND:
        sc->round_set = true;
        return cli_parse_duration_in("synth", "--round", arg, 0, &o->round_us) ? 0 : 2;
    case O_IN:
        return len_opt(&o->in, "--in", arg);
    case O_OUT:
        return len_opt(&o->out, "--out", arg);
    case O_TURNS:
        return len_opt(&o->turns, "--turns", arg);
    case O_REASON:
    case O_PREFIX:
        return share_opt(o, id, arg);
    case O_THINK:
        return cli_parse_duration_in("synth", "--think", arg, 0, &o->think_us) ? 0 : 2;
    case O_BT:
        if (!cli_parse_u64_in("synth", "--block-tokens", arg, 0, 1u << 24, &u))
            return 2;
        o->block_tokens = (uint32_t)u;
        break;
    case O_MODEL:
        o->model = arg;
        break;
    case O_API:
        o->api = arg;
        break;
    case O_FIT:
        o->fit = arg;
        break;
    case O_FITN:
        return cli_parse_u64_in("synth", "--fit-sample", arg, 1, UINT64_MAX, &o->fit_sample) ? 0
                                                                                             : 2;
    case O_SEED:
        return cli_parse_u64_in("synth", "--seed", arg, 0, UINT64_MAX, &o->seed) ? 0 : 2;
    case O_SERVEGEN:
        sc->servegen = arg;
        break;
    case O_WINDOW:
        return cli_parse_duration_in("synth", "--window", arg, 0, &sc->window_us) ? 0 : 2;
    case O_IMAGES:
        if (lt_media_mix_parse(arg, &o->images, &err) < 0) {
            cli_error("synth", "%s", err.msg);
            return 2;
        }
        break;
    case 'o':
        sc->out = arg;
        break;
    case 'q':
        sc->quiet = true;
        break;
    }
    return 0;
}

/* The header's `created`: SOURCE_DATE_EPOCH when set, so that a build can
 * pin it; else the library's fixed epoch. */
static void created_from_env(struct lt_synth_opts *o, char *buf, size_t cap)
{
    uint64_t u;
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (!sde || !cli_parse_u64(sde, &u))
        return;
    time_t t = (time_t)u;
    struct tm tm;
    if (gmtime_r(&t, &tm) && strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        o->created = buf;
}

/* The command line without the output name, so that the same synthesis
 * written to two names gives the same bytes. */
static void command_line(int argc, char **argv, char *command, size_t cap)
{
    size_t len = 0;
    command[0] = '\0';
    for (int i = 0; i < argc && len < cap; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            i++;
            continue;
        }
        if (!strncmp(argv[i], "-o", 2) || !strncmp(argv[i], "--output=", 9))
            continue;
        len += (size_t)snprintf(command + len, cap - len, "%s%s", i ? " " : "loadtrace ", argv[i]);
    }
}

/* synth --servegen: the slice of a ServeGen workload. */
static int run_servegen(const struct synth_cli *sc)
{
    const struct lt_synth_opts *o = &sc->o;
    if (o->fit) {
        cli_error("synth", "--servegen or --fit, not both");
        return 2;
    }
    struct lt_servegen_opts so = {.dir = sc->servegen,
                                  .start_s = sc->window_us >= 0 ? sc->window_us / 1000000 : -1,
                                  .duration_s = o->duration_us / 1000000,
                                  .rate = o->rate,
                                  .requests = o->requests,
                                  .seed = o->seed,
                                  .created = o->created,
                                  .command = o->command};
    struct lt_servegen_stats sst;
    struct lt_err err = {0};
    if (lt_servegen_run(&so, sc->out, &sst, &err) < 0) {
        cli_error("synth", "%s", err.msg);
        return err.code == LT_EINVAL ? 2 : 1;
    }
    if (!sc->quiet)
        fprintf(stderr,
                "loadtrace synth: servegen %s: %u clients (%u with traffic), %lld s from "
                "%lld s; recorded %.4g req/s, scaled x%.4g; wrote %llu records to %s\n",
                sc->servegen, sst.clients, sst.active, (long long)sst.duration_s,
                (long long)sst.start_s, sst.recorded_rate, sst.scale,
                (unsigned long long)sst.records, sc->out);
    return 0;
}

/* synth from distributions, or fitted to a real trace. */
static int run_synth(const struct synth_cli *sc)
{
    const struct lt_synth_opts *o = &sc->o;
    struct lt_synth_stats st;
    struct lt_err err = {0};
    if (lt_synth_run(o, sc->out, &st, &err) < 0) {
        cli_error("synth", "%s", err.msg);
        return err.code == LT_EINVAL ? 2 : 1;
    }
    if (sc->quiet)
        return 0;
    if (o->fit)
        fprintf(stderr,
                "loadtrace synth: fitted %s: %llu records, %.4g req/s, unit CV %.3g; "
                "sampled %llu records in %llu units\n",
                o->fit, (unsigned long long)st.fit_records, st.fit_rate, st.fit_cv,
                (unsigned long long)st.fit_pool, (unsigned long long)st.fit_units);
    fprintf(stderr,
            "loadtrace synth: wrote %llu records (%llu units) to %s; arrivals %s, CV %.3g, "
            "%.4g units/s",
            (unsigned long long)st.records, (unsigned long long)st.units, sc->out, st.arrivals,
            st.cv, st.unit_rate);
    if (st.round_us > 1)
        fprintf(stderr, ", rounded to %lld us", (long long)st.round_us);
    fputc('\n', stderr);
    return 0;
}

int cmd_synth(int argc, char **argv)
{
    struct synth_cli sc = {.o = {.seed = 1,
                                 .block_tokens = 512,
                                 .think_us = 10000000,
                                 .reasoning_frac = 0.5,
                                 .round_us = -1},
                           .window_us = -1};
    int prc = cli_opts_parse(&cmd_synth_spec, argc, argv, synth_opt, &sc);
    if (prc >= 0)
        return prc;
    if (optind != argc || !sc.out) {
        cli_error("synth", optind != argc ? "unexpected argument '%s'" : "%s",
                  optind != argc ? argv[optind] : "give the output file with -o");
        return 2;
    }
    if (!sc.round_set)
        sc.o.round_us = sc.o.fit ? -1 : 0;
    struct lt_err perr = {0};
    if (lt_path_not_input(sc.out, &sc.o.fit, 1, &perr) < 0) {
        cli_error("synth", "%s", perr.msg);
        return 2;
    }
    char created[32], command[1024];
    created_from_env(&sc.o, created, sizeof created);
    command_line(argc, argv, command, sizeof command);
    sc.o.command = command;
    if (cli_dry_run())
        return 0;
    if (sc.servegen || sc.window_us >= 0) {
        if (!sc.servegen) {
            cli_error("synth", "--window goes with --servegen");
            return 2;
        }
        return run_servegen(&sc);
    }
    return run_synth(&sc);
}
