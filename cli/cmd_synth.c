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

static const char synth_usage[] =
    "usage: loadtrace synth [options] -o OUT.lt.zst\n"
    "       loadtrace synth --fit REAL.lt.zst [--rate R] [--duration D | --requests N] -o OUT\n"
    "       loadtrace synth --servegen DIR [--window S] [--duration D] [--rate R]\n"
    "                       [--requests N] -o OUT\n"
    "\n"
    "Write a synthetic trace. The same options and --seed give the same bytes.\n"
    "\n"
    "arrivals:\n"
    "  --arrivals A     constant | poisson | gamma:CV (gaps with sd/mean = CV);\n"
    "                   with --fit also gamma:fit (the real CV) and empirical (the\n"
    "                   real gaps, replayed in runs of up to 1024 consecutive\n"
    "                   ones). Default: poisson; with --fit, empirical\n"
    "  --rate R         mean requests per second, at most 1e6 (with --fit: default\n"
    "                   the real rate)\n"
    "  --duration D     last arrival at most D after the first (500ms, 90s, 10m, 2h)\n"
    "  --requests N     stop after N requests (with --fit and neither: the real count)\n"
    "  --shape S        flat (default) | ramp:R0,R1 (rate goes linearly from R0 to R1\n"
    "                   req/s over the duration; no --rate) | diurnal:PERIOD,AMPLITUDE\n"
    "                   (rate R * (1 + AMPLITUDE * sin(2 pi t / PERIOD)), e.g. 24h,0.5)\n"
    "  --round D        round arrivals down to a multiple of D (real traces often\n"
    "                   are: Mooncake to 1ms); with --fit the real rounding is the\n"
    "                   default, --round 0 turns it off\n"
    "lengths (tokens; required without --fit):\n"
    "  --in L           prompt tokens (of each turn's new message)\n"
    "  --out L          output tokens\n"
    "                   L is fixed:N | uniform:A,B (A..B inclusive) |\n"
    "                   lognormal:MEDIAN,SIGMA (exp of a normal with mean ln MEDIAN\n"
    "                   and sd SIGMA, rounded, at least 1)\n"
    "  --reasoning P[,F]  a share P of requests reason, with F of their output\n"
    "                   (default F 0.5) being reasoning tokens\n"
    "sessions and prefixes:\n"
    "  --turns L        make sessions of L turns (same forms as lengths); each turn's\n"
    "                   prompt is the whole conversation so far plus --in new tokens\n"
    "  --think D        mean think time between turns (exponential; default 10s)\n"
    "  --prefix P,T[,K] a share P of sessions start with one of K shared system\n"
    "                   prompts of T tokens (default K 1)\n"
    "  --block-tokens N prefix block size for block ids (default 512; 0 = no blocks)\n"
    "  --model NAME     model written on every record\n"
    "  --api NAME       api written on every record (chat, completions)\n"
    "fit to a real trace:\n"
    "  --fit FILE       sample FILE's records (lengths jointly, reasoning, tool calls,\n"
    "                   message shapes, whole sessions with their timing, prefix\n"
    "                   blocks with their reuse structure)\n"
    "  --fit-sample N   keep at most N records of FILE in memory (default 100000)\n"
    "other:\n"
    "  --images P:N:WxH[:FMT]  a share P of requests carry N (or A-B) images of W x H\n"
    "                   pixels, png or jpeg (default jpeg); their tokens (2 + one\n"
    "                   per 28 x 28 pixels) count in the prompt (docs/synth.md)\n"
    "  --servegen DIR   draw from a ServeGen workload folder (alibaba/ServeGen, e.g.\n"
    "                   data/reason/deepseek-r1): its clients' per-window rates, gap\n"
    "                   families and CVs, and length distributions (docs/synth.md)\n"
    "  --window S       with --servegen: start the slice at S seconds of the day\n"
    "                   (default: the first window with traffic); --duration is its\n"
    "                   length (default 600 s), --rate scales it to R req/s,\n"
    "                   --requests N stops after N\n"
    "  --seed N         random seed (default 1)\n"
    "  -o, --output F   the trace to write (- = standard output)\n"
    "  -q, --quiet      no summary line on stderr\n"
    "  -h, --help       this text\n"
    "\n"
    "The header's `created` is 1970-01-01T00:00:00Z (or SOURCE_DATE_EPOCH) so that\n"
    "output depends on the options only.\n";

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

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_synth_options[] = {{"arrivals", required_argument, NULL, O_ARR},
                                           {"rate", required_argument, NULL, O_RATE},
                                           {"duration", required_argument, NULL, O_DUR},
                                           {"requests", required_argument, NULL, O_REQ},
                                           {"shape", required_argument, NULL, O_SHAPE},
                                           {"round", required_argument, NULL, O_ROUND},
                                           {"in", required_argument, NULL, O_IN},
                                           {"out", required_argument, NULL, O_OUT},
                                           {"reasoning", required_argument, NULL, O_REASON},
                                           {"turns", required_argument, NULL, O_TURNS},
                                           {"think", required_argument, NULL, O_THINK},
                                           {"prefix", required_argument, NULL, O_PREFIX},
                                           {"block-tokens", required_argument, NULL, O_BT},
                                           {"model", required_argument, NULL, O_MODEL},
                                           {"api", required_argument, NULL, O_API},
                                           {"fit", required_argument, NULL, O_FIT},
                                           {"fit-sample", required_argument, NULL, O_FITN},
                                           {"seed", required_argument, NULL, O_SEED},
                                           {"servegen", required_argument, NULL, O_SERVEGEN},
                                           {"window", required_argument, NULL, O_WINDOW},
                                           {"images", required_argument, NULL, O_IMAGES},
                                           {"output", required_argument, NULL, 'o'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};

int cmd_synth(int argc, char **argv)
{
    struct lt_synth_opts o = {.seed = 1,
                              .block_tokens = 512,
                              .think_us = 10000000,
                              .reasoning_frac = 0.5,
                              .round_us = -1};
    struct lt_err err = {0};
    const char *out = NULL, *servegen = NULL;
    int64_t window_us = -1;
    bool quiet = false, round_set = false;
    uint64_t u;
    double v[3];
    int c, n;
    while ((c = getopt_long(argc, argv, "o:qh", cmd_synth_options, NULL)) != -1) {
        switch (c) {
        case O_ARR:
            if (lt_arrivals_parse(optarg, LT_ARR_FIT, &o.arrivals, &o.cv, &err) < 0) {
                cli_error("synth", "--arrivals %s", err.msg);
                return 2;
            }
            break;
        case O_RATE:
            if (!cli_parse_double_in("synth", "--rate", optarg, 0, INFINITY, &o.rate))
                return 2;
            break;
        case O_DUR:
            if (!cli_parse_duration_in("synth", "--duration", optarg, 1, &o.duration_us))
                return 2;
            break;
        case O_REQ:
            if (!cli_parse_u64_in("synth", "--requests", optarg, 1, UINT64_MAX, &o.requests))
                return 2;
            break;
        case O_SHAPE:
            if (lt_shape_parse(optarg, &o.shape, &o.shape_a, &o.shape_b, &err) < 0)
                return bad("--shape", optarg);
            break;
        case O_ROUND:
            if (!cli_parse_duration_in("synth", "--round", optarg, 0, &o.round_us))
                return 2;
            round_set = true;
            break;
        case O_IN:
            if (lt_len_spec_parse(optarg, &o.in, &err) < 0)
                return bad("--in", optarg);
            break;
        case O_OUT:
            if (lt_len_spec_parse(optarg, &o.out, &err) < 0)
                return bad("--out", optarg);
            break;
        case O_REASON:
            n = parse_doubles(optarg, v, 2);
            if (n < 1 || v[0] < 0 || v[0] > 1 || (n == 2 && (v[1] < 0 || v[1] > 1)))
                return bad("--reasoning", optarg);
            o.reasoning_share = v[0];
            if (n == 2)
                o.reasoning_frac = v[1];
            break;
        case O_TURNS:
            if (lt_len_spec_parse(optarg, &o.turns, &err) < 0)
                return bad("--turns", optarg);
            break;
        case O_THINK:
            if (!cli_parse_duration_in("synth", "--think", optarg, 0, &o.think_us))
                return 2;
            break;
        case O_PREFIX:
            n = parse_doubles(optarg, v, 3);
            if (n < 2 || v[0] < 0 || v[0] > 1 || v[1] < 1 || v[1] > 1e8 ||
                (n == 3 && (v[2] < 1 || v[2] > 1e9)))
                return bad("--prefix", optarg);
            o.prefix_share = v[0];
            o.prefix_tokens = (uint32_t)v[1];
            o.prefix_count = n == 3 ? (uint32_t)v[2] : 1;
            break;
        case O_BT:
            if (!cli_parse_u64_in("synth", "--block-tokens", optarg, 0, 1u << 24, &u))
                return 2;
            o.block_tokens = (uint32_t)u;
            break;
        case O_MODEL:
            o.model = optarg;
            break;
        case O_API:
            o.api = optarg;
            break;
        case O_FIT:
            o.fit = optarg;
            break;
        case O_FITN:
            if (!cli_parse_u64_in("synth", "--fit-sample", optarg, 1, UINT64_MAX, &o.fit_sample))
                return 2;
            break;
        case O_SEED:
            if (!cli_parse_u64_in("synth", "--seed", optarg, 0, UINT64_MAX, &o.seed))
                return 2;
            break;
        case O_SERVEGEN:
            servegen = optarg;
            break;
        case O_WINDOW:
            if (!cli_parse_duration_in("synth", "--window", optarg, 0, &window_us))
                return 2;
            break;
        case O_IMAGES: {
            struct lt_err e;
            if (lt_media_mix_parse(optarg, &o.images, &e) < 0) {
                cli_error("synth", "%s", e.msg);
                return 2;
            }
            break;
        }
        case 'o':
            out = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            fputs(synth_usage, stdout);
            return 0;
        default:
            return cli_bad_option("synth", cmd_synth_options, argv);
        }
    }
    if (optind != argc || !out) {
        cli_error("synth", optind != argc ? "unexpected argument '%s'" : "%s",
                  optind != argc ? argv[optind] : "give the output file with -o");
        return 2;
    }
    if (!round_set)
        o.round_us = o.fit ? -1 : 0;
    struct lt_err perr = {0};
    if (lt_path_not_input(out, &o.fit, 1, &perr) < 0) {
        cli_error("synth", "%s", perr.msg);
        return 2;
    }

    char created[32];
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && cli_parse_u64(sde, &u)) {
        time_t t = (time_t)u;
        struct tm tm;
        if (gmtime_r(&t, &tm) && strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm))
            o.created = created;
    }
    char command[1024];
    size_t len = 0;
    command[0] = '\0';
    /* The command line without the output name, so that the same synthesis
     * written to two names gives the same bytes. */
    for (int i = 0; i < argc && len < sizeof command; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            i++;
            continue;
        }
        if (!strncmp(argv[i], "-o", 2) || !strncmp(argv[i], "--output=", 9))
            continue;
        len += (size_t)snprintf(command + len, sizeof command - len, "%s%s", i ? " " : "loadtrace ",
                                argv[i]);
    }
    o.command = command;

    if (cli_dry_run())
        return 0;
    if (servegen || window_us >= 0) {
        if (!servegen || o.fit) {
            cli_error("synth", "%s",
                      !servegen ? "--window goes with --servegen"
                                : "--servegen or --fit, not both");
            return 2;
        }
        struct lt_servegen_opts so = {.dir = servegen,
                                      .start_s = window_us >= 0 ? window_us / 1000000 : -1,
                                      .duration_s = o.duration_us / 1000000,
                                      .rate = o.rate,
                                      .requests = o.requests,
                                      .seed = o.seed,
                                      .created = o.created,
                                      .command = command};
        struct lt_servegen_stats sst;
        if (lt_servegen_run(&so, out, &sst, &err) < 0) {
            cli_error("synth", "%s", err.msg);
            return err.code == LT_EINVAL ? 2 : 1;
        }
        if (!quiet)
            fprintf(stderr,
                    "loadtrace synth: servegen %s: %u clients (%u with traffic), %lld s from "
                    "%lld s; recorded %.4g req/s, scaled x%.4g; wrote %llu records to %s\n",
                    servegen, sst.clients, sst.active, (long long)sst.duration_s,
                    (long long)sst.start_s, sst.recorded_rate, sst.scale,
                    (unsigned long long)sst.records, out);
        return 0;
    }
    struct lt_synth_stats st;
    if (lt_synth_run(&o, out, &st, &err) < 0) {
        cli_error("synth", "%s", err.msg);
        return err.code == LT_EINVAL ? 2 : 1;
    }
    if (!quiet) {
        if (o.fit)
            fprintf(stderr,
                    "loadtrace synth: fitted %s: %llu records, %.4g req/s, unit CV %.3g; "
                    "sampled %llu records in %llu units\n",
                    o.fit, (unsigned long long)st.fit_records, st.fit_rate, st.fit_cv,
                    (unsigned long long)st.fit_pool, (unsigned long long)st.fit_units);
        fprintf(stderr,
                "loadtrace synth: wrote %llu records (%llu units) to %s; arrivals %s, CV %.3g, "
                "%.4g units/s",
                (unsigned long long)st.records, (unsigned long long)st.units, out, st.arrivals,
                st.cv, st.unit_rate);
        if (st.round_us > 1)
            fprintf(stderr, ", rounded to %lld us", (long long)st.round_us);
        fputc('\n', stderr);
    }
    return 0;
}
