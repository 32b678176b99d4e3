/*
 * The Prometheus text parser and the server-name mapping (metrics/).
 *
 * The fixture pages (tests/metrics/fixtures) are written in each server's
 * own names; every number checked here was written into the fixture by hand
 * (the totals over engines and GPUs worked out on paper), never taken from
 * the code's output. The parser cases are tables: accepted pages with what
 * they must hold, and refused pages with the line and the words of the
 * error.
 */
#include "metrics/prom_map.h"
#include "metrics/prom_text.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", LT_METRICS_FIXTURES, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    *len = (size_t)n;
    return b;
}

/* Parse a fixture and map it with the built-in table. */
static void load(const char *name, struct lt_prom_page *pg, struct lt_prom_values *v)
{
    size_t len;
    char *b = slurp(name, &len);
    struct lt_err err = {0};
    lt_prom_page_init(pg, NULL);
    int rc = lt_prom_parse(pg, b, len, name, &err);
    if (rc != 0)
        fail_msg("%s: %s", name, err.msg);
    free(b);
    lt_prom_map_apply(NULL, pg, v);
}

static void near(double a, double b, int line)
{
    if (!(fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1)))
        fail_msg("line %d: %.17g, want %.17g", line, a, b);
}
#define NEAR(a, b) near((a), (b), __LINE__)

static void expect(const struct lt_prom_values *v, enum lt_prom_canon c, double want)
{
    if (!lt_prom_map_has(v, c))
        fail_msg("%s is absent", lt_prom_map_canon_name(c));
    if (fabs(v->v[c] - want) > 1e-9 * (fabs(want) > 1 ? fabs(want) : 1))
        fail_msg("%s = %.17g, want %.17g", lt_prom_map_canon_name(c), v->v[c], want);
}

static void absent(const struct lt_prom_values *v, enum lt_prom_canon c)
{
    if (lt_prom_map_has(v, c))
        fail_msg("%s is present (from %s), the server has no such metric",
                 lt_prom_map_canon_name(c), v->source[c]);
}

static const struct lt_prom_hist *hist(const struct lt_prom_values *v, enum lt_prom_canon c)
{
    if (!lt_prom_map_has(v, c))
        fail_msg("histogram %s is absent", lt_prom_map_canon_name(c));
    return &v->hist[c - LT_PM_SCALARS];
}

/* le of bucket k and its cumulative count. */
static void bucket(const struct lt_prom_hist *h, size_t k, double le, double cum)
{
    assert_true(k < h->nbuckets);
    NEAR(h->le[k], le);
    NEAR(h->cum[k], cum);
}

static void check_hist_shape(const struct lt_prom_hist *h)
{
    for (size_t k = 1; k < h->nbuckets; k++) {
        assert_true(h->le[k - 1] < h->le[k]);
        assert_true(h->cum[k - 1] <= h->cum[k]);
    }
    assert_true(isinf(h->le[h->nbuckets - 1]));
    NEAR(h->cum[h->nbuckets - 1], h->count);
}

static void test_vllm_v0(void **state)
{
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    load("vllm-v0.prom", &pg, &v);
    assert_int_equal(v.server, LT_PROM_SERVER_VLLM);
    expect(&v, LT_PM_RUNNING, 23);
    expect(&v, LT_PM_WAITING, 7);
    expect(&v, LT_PM_KV_USAGE, 0.4137);
    assert_string_equal(v.source[LT_PM_KV_USAGE], "vllm:gpu_cache_usage_perc");
    expect(&v, LT_PM_PREEMPTIONS, 3);
    expect(&v, LT_PM_PROMPT_TOKENS, 1234567);
    expect(&v, LT_PM_GEN_TOKENS, 46202);
    expect(&v, LT_PM_PREFIX_HIT_RATE, 0.2875);
    absent(&v, LT_PM_PREFIX_QUERIES);
    absent(&v, LT_PM_PREFIX_HITS);
    absent(&v, LT_PM_GPU_UTIL);
    const struct lt_prom_hist *h = hist(&v, LT_PM_TTFT);
    assert_int_equal(h->nbuckets, 17);
    bucket(h, 3, 0.02, 4);
    bucket(h, 7, 0.1, 151);
    bucket(h, 11, 1.0, 405);
    NEAR(h->sum, 71.93);
    NEAR(h->count, 412);
    check_hist_shape(h);
    h = hist(&v, LT_PM_ITL);
    assert_string_equal(v.source[LT_PM_ITL], "vllm:time_per_output_token_seconds");
    assert_int_equal(h->nbuckets, 14);
    bucket(h, 1, 0.025, 30211);
    NEAR(h->sum, 1187.3);
    NEAR(h->count, 45790);
    check_hist_shape(h);
    h = hist(&v, LT_PM_E2E);
    assert_int_equal(h->nbuckets, 11);
    bucket(h, 2, 5.0, 301);
    NEAR(h->sum, 1431.6);
    NEAR(h->count, 412);
    check_hist_shape(h);
    /* the parser's view: a histogram is one family, _created is its own */
    const struct lt_prom_family *f = lt_prom_page_family(&pg, "vllm:time_to_first_token_seconds");
    assert_non_null(f);
    assert_int_equal(f->type, LT_PROM_HISTOGRAM);
    assert_int_equal(f->nsamples, 17 + 2);
    assert_string_equal(f->help, "Histogram of time to first token in seconds.");
    f = lt_prom_page_family(&pg, "vllm:time_to_first_token_seconds_created");
    assert_non_null(f);
    assert_int_equal(f->type, LT_PROM_UNTYPED);
    f = lt_prom_page_family(&pg, "vllm:cache_config_info");
    assert_int_equal(f->nsamples, 1);
    assert_int_equal(pg.samples[0].nlabels, 10);
    assert_string_equal(lt_prom_sample_label(&pg.samples[0], "swap_space_bytes"), "4294967296");
    lt_prom_page_release(&pg);
}

static void test_vllm_v1(void **state)
{
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    load("vllm-v1.prom", &pg, &v);
    assert_int_equal(v.server, LT_PROM_SERVER_VLLM);
    /* two engines (data parallel): counts add, the KV fraction averages;
     * deprecated duplicates (gpu_cache_usage_perc, gpu_prefix_cache_*,
     * time_per_output_token) are not counted a second time */
    expect(&v, LT_PM_RUNNING, 12 + 10);
    expect(&v, LT_PM_WAITING, 3 + 5);
    expect(&v, LT_PM_KV_USAGE, (0.52 + 0.38) / 2);
    assert_string_equal(v.source[LT_PM_KV_USAGE], "vllm:kv_cache_usage_perc");
    expect(&v, LT_PM_PREEMPTIONS, 5);
    expect(&v, LT_PM_PROMPT_TOKENS, 1560000);
    expect(&v, LT_PM_GEN_TOKENS, 290000);
    expect(&v, LT_PM_PREFIX_QUERIES, 1560000);
    expect(&v, LT_PM_PREFIX_HITS, 610000);
    assert_string_equal(v.source[LT_PM_PREFIX_HITS], "vllm:prefix_cache_hits_total");
    absent(&v, LT_PM_PREFIX_HIT_RATE);
    const struct lt_prom_hist *h = hist(&v, LT_PM_TTFT);
    assert_int_equal(h->nbuckets, 23);
    bucket(h, 7, 0.1, 150 + 140);
    bucket(h, 2, 0.01, 0 + 1);
    NEAR(h->sum, 95.5 + 88.25);
    NEAR(h->count, 400 + 380);
    check_hist_shape(h);
    h = hist(&v, LT_PM_ITL);
    assert_string_equal(v.source[LT_PM_ITL], "vllm:inter_token_latency_seconds");
    assert_int_equal(h->nbuckets, 20);
    NEAR(h->sum, 3740.0 + 3490.5);
    NEAR(h->count, 149600 + 139620);
    check_hist_shape(h);
    h = hist(&v, LT_PM_E2E);
    assert_int_equal(h->nbuckets, 22);
    NEAR(h->sum, 2210.4 + 2100.0);
    NEAR(h->count, 780);
    check_hist_shape(h);
    lt_prom_page_release(&pg);
}

static void test_sglang(void **state)
{
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    load("sglang.prom", &pg, &v);
    assert_int_equal(v.server, LT_PROM_SERVER_SGLANG);
    expect(&v, LT_PM_RUNNING, 31);
    expect(&v, LT_PM_WAITING, 4);
    expect(&v, LT_PM_KV_USAGE, 0.28);
    expect(&v, LT_PM_PROMPT_TOKENS, 8128902);
    expect(&v, LT_PM_GEN_TOKENS, 7557572);
    expect(&v, LT_PM_PREFIX_HITS, 2450000);
    expect(&v, LT_PM_PREFIX_QUERIES, 8128902);
    expect(&v, LT_PM_PREFIX_HIT_RATE, 0.007507552643049313);
    absent(&v, LT_PM_PREEMPTIONS);
    const struct lt_prom_hist *h = hist(&v, LT_PM_TTFT);
    assert_int_equal(h->nbuckets, 21);
    NEAR(h->sum, 2.3518979474117756e+06);
    NEAR(h->count, 7500);
    check_hist_shape(h);
    h = hist(&v, LT_PM_ITL); /* the older name, time_per_output_token */
    assert_string_equal(v.source[LT_PM_ITL], "sglang:time_per_output_token_seconds");
    assert_int_equal(h->nbuckets, 22);
    NEAR(h->count, 7550072);
    NEAR(h->sum, 866460.1);
    h = hist(&v, LT_PM_E2E);
    assert_int_equal(h->nbuckets, 23);
    NEAR(h->sum, 3.116e+05);
    lt_prom_page_release(&pg);
}

static void test_llamacpp(void **state)
{
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    load("llamacpp.prom", &pg, &v); /* CRLF line ends */
    assert_int_equal(v.server, LT_PROM_SERVER_LLAMACPP);
    assert_int_equal(pg.nsamples, 12);
    expect(&v, LT_PM_RUNNING, 2);
    expect(&v, LT_PM_WAITING, 1);
    expect(&v, LT_PM_KV_USAGE, 0.137);
    expect(&v, LT_PM_PROMPT_TOKENS, 33065);
    expect(&v, LT_PM_GEN_TOKENS, 7801);
    absent(&v, LT_PM_PREEMPTIONS);
    absent(&v, LT_PM_PREFIX_HITS);
    absent(&v, LT_PM_TTFT);
    absent(&v, LT_PM_ITL);
    absent(&v, LT_PM_E2E);
    assert_string_equal(lt_prom_page_family(&pg, "llamacpp:requests_deferred")->help,
                        "Number of requests deferred.");
    lt_prom_page_release(&pg);
}

static void test_tgi(void **state)
{
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    load("tgi.prom", &pg, &v);
    assert_int_equal(v.server, LT_PROM_SERVER_TGI);
    expect(&v, LT_PM_RUNNING, 14);
    expect(&v, LT_PM_WAITING, 6);
    expect(&v, LT_PM_PROMPT_TOKENS, 1874210);
    expect(&v, LT_PM_GEN_TOKENS, 311970);
    absent(&v, LT_PM_KV_USAGE);
    absent(&v, LT_PM_TTFT);
    absent(&v, LT_PM_PREEMPTIONS);
    const struct lt_prom_hist *h = hist(&v, LT_PM_E2E);
    assert_int_equal(h->nbuckets, 36);
    NEAR(h->le[0], 0.00015);
    NEAR(h->sum, 9120.55);
    NEAR(h->count, 1285);
    check_hist_shape(h);
    h = hist(&v, LT_PM_ITL);
    assert_int_equal(h->nbuckets, 36);
    NEAR(h->sum, 38.37);
    check_hist_shape(h);
    lt_prom_page_release(&pg);
}

static void test_dcgm(void **state)
{
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    load("dcgm.prom", &pg, &v);
    assert_int_equal(v.server, LT_PROM_SERVER_DCGM);
    expect(&v, LT_PM_GPU_UTIL, (0.87 + 0.64) / 2);
    expect(&v, LT_PM_GPU_MEM_USED, (71234.0 + 70110.0) * 1048576.0);
    expect(&v, LT_PM_GPU_POWER, 287.512 + 243.25);
    expect(&v, LT_PM_GPU_ENERGY, (81234567890.0 + 79876543210.0) / 1000);
    absent(&v, LT_PM_RUNNING);
    assert_int_equal(v.ngpus, 2);
    assert_false(v.gpus_truncated);
    assert_string_equal(v.gpus[0].id, "0");
    NEAR(v.gpus[0].v[LT_PM_GPU_UTIL], 0.87);
    NEAR(v.gpus[0].v[LT_PM_GPU_MEM_USED], 71234.0 * 1048576.0);
    NEAR(v.gpus[1].v[LT_PM_GPU_POWER], 243.25);
    NEAR(v.gpus[1].v[LT_PM_GPU_ENERGY], 79876543.21);
    assert_true(v.gpus[1].present & (1u << LT_PM_GPU_ENERGY));
    lt_prom_page_release(&pg);
}

/* --- hostile fixtures: refused with the line, never a crash ------------- */

static void test_hostile_fixtures(void **state)
{
    static const struct {
        const char *file;
        int rc;
        const char *where, *words;
    } cases[] = {
        {"bad-html.prom", LT_EFORMAT, "bad-html.prom:1: ", "HTML"},
        {"bad-truncated.prom", LT_ETRUNC, "bad-truncated.prom:7: ", "ends inside this line"},
        {"bad-escape.prom", LT_EFORMAT, "bad-escape.prom:3: ", "escape \\t"},
        {"bad-huge-label.prom", LT_ELIMIT, "bad-huge-label.prom:2: ", "longer than 4096 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *b = slurp(cases[i].file, &len);
        struct lt_prom_page pg;
        struct lt_err err = {0};
        lt_prom_page_init(&pg, NULL);
        int rc = lt_prom_parse(&pg, b, len, cases[i].file, &err);
        if (rc != cases[i].rc || strncmp(err.msg, cases[i].where, strlen(cases[i].where)) != 0 ||
            !strstr(err.msg, cases[i].words))
            fail_msg("%s: rc %d, '%s'", cases[i].file, rc, err.msg);
        assert_int_equal(pg.nsamples, 0);
        free(b);
        lt_prom_page_release(&pg);
    }
}

/* --- parser cases --------------------------------------------------------- */

static int parse(struct lt_prom_page *pg, const char *text, struct lt_err *err)
{
    return lt_prom_parse(pg, text, strlen(text), "t", err);
}

static void test_values_and_timestamps(void **state)
{
    static const struct {
        const char *line;
        double value;
        int has_ts;
        int64_t ts;
    } cases[] = {
        {"a 1\n", 1, 0, 0},
        {"a -2.5e-3\n", -2.5e-3, 0, 0},
        {"a 1.5E+10\n", 1.5e10, 0, 0},
        {"a .5\n", 0.5, 0, 0},
        {"a 0x1p-2\n", 0.25, 0, 0},
        {"a +Inf\n", INFINITY, 0, 0},
        {"a -Inf\n", -INFINITY, 0, 0},
        {"a Inf\n", INFINITY, 0, 0},
        {"a 7 1395066363000\n", 7, 1, 1395066363000},
        {"a 7 -1\n", 7, 1, -1},
        {"a\t3\t42  \n", 3, 1, 42},
        {"  a 3\r\n", 3, 0, 0},
        {"a{} 4\n", 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_prom_page pg;
        struct lt_err err = {0};
        lt_prom_page_init(&pg, NULL);
        if (parse(&pg, cases[i].line, &err) != 0)
            fail_msg("'%s': %s", cases[i].line, err.msg);
        assert_int_equal(pg.nsamples, 1);
        const struct lt_prom_sample *s = &pg.samples[0];
        assert_string_equal(s->name, "a");
        if (isinf(cases[i].value))
            assert_true(isinf(s->value) && (s->value > 0) == (cases[i].value > 0));
        else
            NEAR(s->value, cases[i].value);
        assert_int_equal(s->has_ts, cases[i].has_ts);
        assert_true(s->ts_ms == cases[i].ts);
        lt_prom_page_release(&pg);
    }
    struct lt_prom_page pg;
    struct lt_err err = {0};
    lt_prom_page_init(&pg, NULL);
    assert_int_equal(parse(&pg, "a NaN\nb nan\n", &err), 0);
    assert_true(isnan(pg.samples[0].value) && isnan(pg.samples[1].value));
    lt_prom_page_release(&pg);
}

static void test_escapes(void **state)
{
    struct lt_prom_page pg;
    struct lt_err err = {0};
    lt_prom_page_init(&pg, NULL);
    const char *text = "# HELP m A \\\\ back\\nslash \"quoted\" text\n"
                       "# TYPE m gauge\n"
                       "m{path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\" , e=\"\",} 1\n"
                       "m { sp = \"x\" } 2\n";
    if (parse(&pg, text, &err) != 0)
        fail_msg("%s", err.msg);
    const struct lt_prom_family *f = lt_prom_page_family(&pg, "m");
    assert_string_equal(f->help, "A \\ back\nslash \"quoted\" text");
    assert_int_equal(f->type, LT_PROM_GAUGE);
    assert_int_equal(pg.nsamples, 2);
    const struct lt_prom_sample *s = &pg.samples[0];
    assert_int_equal(s->nlabels, 4);
    assert_string_equal(lt_prom_sample_label(s, "path"), "C:\\dir");
    assert_string_equal(lt_prom_sample_label(s, "q"), "say \"hi\"");
    assert_string_equal(lt_prom_sample_label(s, "nl"), "a\nb");
    assert_string_equal(lt_prom_sample_label(s, "e"), "");
    assert_string_equal(lt_prom_sample_label(&pg.samples[1], "sp"), "x");
    /* a label value with '}' ',' '=' and '#' in it */
    assert_int_equal(parse(&pg, "x{a=\"}{,=# \"} 5\n", &err), 0);
    assert_string_equal(lt_prom_sample_label(&pg.samples[0], "a"), "}{,=# ");
    lt_prom_page_release(&pg);
}

static void test_histogram_and_summary(void **state)
{
    struct lt_prom_page pg;
    struct lt_err err = {0};
    lt_prom_page_init(&pg, NULL);
    const char *text = "# A comment that says nothing\n"
                       "\n"
                       "# TYPE h histogram\n"
                       "h_bucket{le=\"0.5\"} 1\n"
                       "h_bucket{le=\"1e0\"} 3\n"
                       "h_bucket{le=\"+Inf\"} 4\n"
                       "h_sum 2.5\n"
                       "h_count 4\n"
                       "# TYPE s summary\n"
                       "s{quantile=\"0.5\"} 0.2\n"
                       "s{quantile=\"0.99\"} NaN\n"
                       "s_sum 9\n"
                       "s_count 30\n"
                       "# TYPE c_total counter\n"
                       "c_total 5\n"
                       "h_created 1.7e9\n"
                       "s_bucket 1\n";
    if (parse(&pg, text, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(pg.nsamples, 12);
    const struct lt_prom_family *h = lt_prom_page_family(&pg, "h");
    assert_int_equal(h->type, LT_PROM_HISTOGRAM);
    assert_int_equal(h->nsamples, 5);
    assert_int_equal(pg.samples[0].role, LT_PROM_BUCKET);
    NEAR(pg.samples[1].bound, 1.0);
    assert_true(isinf(pg.samples[2].bound));
    assert_int_equal(pg.samples[3].role, LT_PROM_SUM);
    assert_int_equal(pg.samples[4].role, LT_PROM_COUNT);
    assert_int_equal(pg.samples[3].line, 7);
    assert_int_equal(lt_prom_page_family(&pg, "s")->nsamples, 4);
    assert_int_equal(pg.samples[5].role, LT_PROM_QUANTILE);
    NEAR(pg.samples[6].bound, 0.99);
    assert_int_equal(pg.samples[7].role, LT_PROM_SUM);
    assert_int_equal(lt_prom_page_family(&pg, "c_total")->type, LT_PROM_COUNTER);
    /* neither is a part of h or s: a summary has no buckets */
    assert_int_equal(lt_prom_page_family(&pg, "h_created")->nsamples, 1);
    assert_int_equal(lt_prom_page_family(&pg, "s_bucket")->type, LT_PROM_UNTYPED);
    assert_int_equal(pg.nfamilies, 5);
    /* an empty page is a page */
    assert_int_equal(parse(&pg, "", &err), 0);
    assert_int_equal(pg.nsamples, 0);
    lt_prom_page_release(&pg);
}

static void test_errors(void **state)
{
    static const struct {
        const char *text;
        int rc;
        unsigned line;
        const char *words;
    } cases[] = {
        {"<html><body>hi</body></html>\n", LT_EFORMAT, 1, "HTML"},
        {"a 1\n  <p>x</p>\n", LT_EFORMAT, 2, "HTML"},
        {"{\"error\": \"not found\"}\n", LT_EFORMAT, 1, "must be a sample"},
        {"a 1\nb 2", LT_ETRUNC, 2, "no final newline"},
        {"a\n", LT_EFORMAT, 1, "no value"},
        {"a \n", LT_EFORMAT, 1, "no value"},
        {"a one\n", LT_EFORMAT, 1, "not a number: 'one'"},
        {"a nan(0x1)\n", LT_EFORMAT, 1, "not a number"},
        {"a 1e999\n", LT_EFORMAT, 1, "not a number"},
        {"a 1 2.5\n", LT_EFORMAT, 1, "timestamp"},
        {"a 1 2 3\n", LT_EFORMAT, 1, "text after the timestamp"},
        {"a 1 99999999999999999999\n", LT_EFORMAT, 1, "timestamp"},
        {"a{b=\"c\\t\"} 1\n", LT_EFORMAT, 1, "escape \\t"},
        {"a{b=\"c\\\"} 1\n", LT_EFORMAT, 1, "no closing quote"},
        {"a{b=\"c\"\n", LT_EFORMAT, 1, "no closing '}'"},
        {"a{b=c} 1\n", LT_EFORMAT, 1, "does not start with '\"'"},
        {"a{b} 1\n", LT_EFORMAT, 1, "not followed by '='"},
        {"a{b=\"1\" c=\"2\"} 1\n", LT_EFORMAT, 1, "separated by ','"},
        {"a{b=\"1\",b=\"2\"} 1\n", LT_EFORMAT, 1, "appears twice"},
        {"a{1b=\"1\"} 1\n", LT_EFORMAT, 1, "label name"},
        {"a{b:c=\"1\"} 1\n", LT_EFORMAT, 1, "not followed by '='"},
        {"a-b 1\n", LT_EFORMAT, 1, "followed by '{' or a blank"},
        {"# HELP a x\\y\n", LT_EFORMAT, 1, "escape \\y"},
        {"# HELP a x\\\n", LT_EFORMAT, 1, "lone backslash"},
        {"# HELP a one\n# HELP a two\n", LT_EFORMAT, 2, "second HELP"},
        {"# TYPE a gauge\n# TYPE a gauge\n", LT_EFORMAT, 2, "second TYPE"},
        {"a 1\n# TYPE a gauge\n", LT_EFORMAT, 2, "after the samples"},
        {"# TYPE a thing\n", LT_EFORMAT, 1, "unknown type 'thing'"},
        {"# TYPE a gauge extra\n", LT_EFORMAT, 1, "text after its type"},
        {"# TYPE\n", LT_EFORMAT, 1, "followed by a metric name"},
        {"# TYPE 1a gauge\n", LT_EFORMAT, 1, "not followed by a metric name"},
        {"# TYPE h histogram\nh 1\n", LT_EFORMAT, 2, "is a histogram"},
        {"# TYPE h histogram\nh_bucket 1\n", LT_EFORMAT, 2, "no le label"},
        {"# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", LT_EFORMAT, 2, "le label of h_bucket"},
        {"# TYPE h histogram\nh_bucket{le=\"NaN\"} 1\n", LT_EFORMAT, 2, "not a number"},
        {"# TYPE s summary\ns 1\n", LT_EFORMAT, 2, "no quantile label"},
        {"a{x=\"1\",y=\"2\"} 1\nb 1\na{y=\"2\",x=\"1\"} 2\n", LT_EFORMAT, 3,
         "a repeats the series of line 1"},
        {"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_bucket{le=\"1\"} 1\n", LT_EFORMAT, 4,
         "h_bucket repeats the series of line 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_prom_page pg;
        struct lt_err err = {0};
        lt_prom_page_init(&pg, NULL);
        int rc = parse(&pg, cases[i].text, &err);
        char where[32];
        snprintf(where, sizeof where, "t:%u: ", cases[i].line);
        if (rc != cases[i].rc || strncmp(err.msg, where, strlen(where)) != 0 ||
            !strstr(err.msg, cases[i].words))
            fail_msg("case %zu '%s': rc %d, '%s'", i, cases[i].text, rc, err.msg);
        assert_int_equal(pg.nsamples, 0);
        lt_prom_page_release(&pg);
    }
}

static void test_nul(void **state)
{
    static const char text[] = "a 1\n\n\0b 2\n";
    struct lt_prom_page pg;
    struct lt_err err = {0};
    lt_prom_page_init(&pg, NULL);
    assert_int_equal(lt_prom_parse(&pg, text, sizeof text - 1, "t", &err), LT_EFORMAT);
    assert_string_equal(err.msg, "t:3: a NUL byte, which text never has");
    lt_prom_page_release(&pg);
}

static void test_limits(void **state)
{
    static const struct {
        struct lt_prom_limits lim;
        const char *text;
        unsigned line;
        const char *words;
    } cases[] = {
        {{.page_bytes = 8}, "a 1\nb 2\nc 3\n", 1, "larger than 8 bytes"},
        {{.samples = 2}, "a 1\nb 2\nc 3\n", 3, "more than 2 samples"},
        {{.families = 2}, "a 1\nb 2\nc 3\n", 3, "more than 2 metric families"},
        {{.labels_per_sample = 2}, "a{x=\"1\",y=\"2\",z=\"3\"} 1\n", 1, "more than 2 labels"},
        {{.labels = 3},
         "a{x=\"1\",y=\"2\"} 1\nb{x=\"1\",y=\"2\"} 1\n",
         2,
         "more than 3 labels on one page"},
        {{.name_bytes = 4}, "abcde 1\n", 1, "metric name is longer than 4"},
        {{.name_bytes = 4}, "a{abcde=\"1\"} 1\n", 1, "label name is longer than 4"},
        {{.value_bytes = 4}, "a{x=\"12345\"} 1\n", 1, "longer than 4 bytes"},
        {{.value_bytes = 4}, "a{x=\"\\\\\\\\\\\\\\\\\"} 1\n", 0, NULL}, /* 4 after unescaping */
        {{.help_bytes = 3}, "# HELP a four\n", 1, "HELP text is longer than 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_prom_page pg;
        struct lt_err err = {0};
        lt_prom_page_init(&pg, &cases[i].lim);
        int rc = parse(&pg, cases[i].text, &err);
        if (!cases[i].words) {
            if (rc != 0)
                fail_msg("case %zu: %s", i, err.msg);
            lt_prom_page_release(&pg);
            continue;
        }
        char where[32];
        snprintf(where, sizeof where, "t:%u: ", cases[i].line);
        if (rc != LT_ELIMIT || strncmp(err.msg, where, strlen(where)) != 0 ||
            !strstr(err.msg, cases[i].words))
            fail_msg("case %zu: rc %d, '%s'", i, rc, err.msg);
        lt_prom_page_release(&pg);
    }
}

/* A page parsed twice into one struct: the second replaces the first. */
static void test_reuse(void **state)
{
    struct lt_prom_page pg;
    struct lt_err err = {0};
    lt_prom_page_init(&pg, NULL);
    assert_int_equal(parse(&pg, "# TYPE a gauge\na{x=\"1\"} 1\n", &err), 0);
    assert_int_equal(parse(&pg, "b 2\n", &err), 0);
    assert_int_equal(pg.nfamilies, 1);
    assert_null(lt_prom_page_family(&pg, "a"));
    assert_non_null(lt_prom_page_family(&pg, "b"));
    assert_int_equal(parse(&pg, "<html>\n", &err), LT_EFORMAT);
    assert_null(lt_prom_page_family(&pg, "b"));
    lt_prom_page_release(&pg);
}

/* --- mapping files -------------------------------------------------------- */

/* Gauges outside their range are flagged and left out, whatever page they
 * come on: no queue is negative or holds 1e308 requests, and no KV cache is
 * 750 % full. Values at the ends of their range are kept. */
static void test_out_of_range(void **state)
{
    static const struct {
        const char *page;
        enum lt_prom_canon c;
        double bad; /* NAN: the value is kept */
        double kept;
    } cases[] = {
        {"vllm:num_requests_waiting -5\n", LT_PM_WAITING, -5, 0},
        {"vllm:num_requests_waiting 1e308\n", LT_PM_WAITING, 1e308, 0},
        {"vllm:num_requests_waiting 1000000001\n", LT_PM_WAITING, 1000000001, 0},
        {"vllm:num_requests_waiting 0\n", LT_PM_WAITING, NAN, 0},
        {"vllm:num_requests_running 1000000000\n", LT_PM_RUNNING, NAN, 1e9},
        {"vllm:num_requests_running -1\n", LT_PM_RUNNING, -1, 0},
        {"vllm:kv_cache_usage_perc 7.5\n", LT_PM_KV_USAGE, 7.5, 0},
        {"vllm:kv_cache_usage_perc 1\n", LT_PM_KV_USAGE, NAN, 1},
        {"vllm:kv_cache_usage_perc -0.1\n", LT_PM_KV_USAGE, -0.1, 0},
        {"sglang:token_usage 1.2\nsglang:num_running_reqs 1\n", LT_PM_KV_USAGE, 1.2, 0},
        {"vllm:num_preemptions_total -3\n", LT_PM_PREEMPTIONS, -3, 0},
        {"vllm:generation_tokens_total 1e15\n", LT_PM_GEN_TOKENS, NAN, 1e15},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_prom_page pg;
        static struct lt_prom_values v;
        struct lt_err err = {0};
        lt_prom_page_init(&pg, NULL);
        if (lt_prom_parse(&pg, cases[i].page, strlen(cases[i].page), "page", &err) != 0)
            fail_msg("%s", err.msg);
        lt_prom_map_apply(NULL, &pg, &v);
        bool flagged = (v.out_of_range >> cases[i].c) & 1u;
        if (isnan(cases[i].bad)) {
            if (flagged || !lt_prom_map_has(&v, cases[i].c) || v.v[cases[i].c] != cases[i].kept)
                fail_msg("case %zu (%s): not kept as %g", i, cases[i].page, cases[i].kept);
        } else if (!flagged || lt_prom_map_has(&v, cases[i].c) ||
                   v.bad[cases[i].c] != cases[i].bad) {
            fail_msg("case %zu (%s): not flagged with %g (flags %x, present %x, bad %g)", i,
                     cases[i].page, cases[i].bad, v.out_of_range, v.present, v.bad[cases[i].c]);
        }
        lt_prom_page_release(&pg);
    }
    double lo, hi;
    lt_prom_map_canon_range(LT_PM_KV_USAGE, &lo, &hi);
    assert_true(lo == 0 && hi >= 1 && hi < 1.001);
}

static void test_map_file(void **state)
{
    struct lt_prom_map *m;
    struct lt_err err = {0};
    assert_int_equal(lt_prom_map_new(&m, &err), 0);
    const char *file = "# my server\n"
                       "\n"
                       "requests_waiting = myserver_queue_depth{pool=\"prefill\"}\n"
                       "  kv_cache_usage = myserver_kv_used_pct * 0.01  \n"
                       "ttft_seconds = myserver_ttft_ms * 0.001\n"
                       "preemptions_total = none\n"
                       "requests_running = vllm:num_requests_running{engine=\"1\"}\n";
    if (lt_prom_map_load_mem(m, file, strlen(file), "my.map", &err) != 0)
        fail_msg("%s", err.msg);
    const char *page = "myserver_queue_depth{pool=\"prefill\"} 5\n"
                       "myserver_queue_depth{pool=\"decode\"} 9\n"
                       "myserver_kv_used_pct 61\n"
                       "# TYPE myserver_ttft_ms histogram\n"
                       "myserver_ttft_ms_bucket{le=\"100\"} 3\n"
                       "myserver_ttft_ms_bucket{le=\"+Inf\"} 4\n"
                       "myserver_ttft_ms_sum 350\n"
                       "myserver_ttft_ms_count 4\n"
                       "vllm:num_preemptions_total{engine=\"0\"} 7\n"
                       "vllm:num_requests_running{engine=\"0\"} 2\n"
                       "vllm:num_requests_running{engine=\"1\"} 3\n"
                       "vllm:num_requests_waiting 100\n";
    struct lt_prom_page pg;
    static struct lt_prom_values v;
    lt_prom_page_init(&pg, NULL);
    if (lt_prom_parse(&pg, page, strlen(page), "page", &err) != 0)
        fail_msg("%s", err.msg);
    lt_prom_map_apply(m, &pg, &v);
    expect(&v, LT_PM_WAITING, 5); /* the file wins over vllm:num_requests_waiting */
    expect(&v, LT_PM_KV_USAGE, 0.61);
    expect(&v, LT_PM_RUNNING, 3);
    absent(&v, LT_PM_PREEMPTIONS); /* `none` turns the built-in name off */
    const struct lt_prom_hist *h = hist(&v, LT_PM_TTFT);
    assert_int_equal(h->nbuckets, 2);
    NEAR(h->le[0], 0.1);
    NEAR(h->cum[0], 3);
    NEAR(h->sum, 0.35);
    NEAR(h->count, 4);
    /* a second file overrides the first */
    const char *file2 = "requests_waiting = myserver_queue_depth{pool=\"decode\"}\n";
    assert_int_equal(lt_prom_map_load_mem(m, file2, strlen(file2), "two.map", &err), 0);
    lt_prom_map_apply(m, &pg, &v);
    expect(&v, LT_PM_WAITING, 9);
    /* without the map, the built-in names */
    lt_prom_map_apply(NULL, &pg, &v);
    expect(&v, LT_PM_WAITING, 100);
    expect(&v, LT_PM_PREEMPTIONS, 7);
    expect(&v, LT_PM_RUNNING, 5);
    lt_prom_page_release(&pg);
    lt_prom_map_free(m);
    lt_prom_map_free(NULL);
}

static void test_map_file_errors(void **state)
{
    static const struct {
        const char *text;
        int rc;
        const char *words;
    } cases[] = {
        {"# ok\nrequests_running myserver_running\n", LT_EFORMAT, "my.map:2: a rule is"},
        {"queue_len = x\n", LT_EFORMAT, "my.map:1: 'queue_len' is not a canonical name"},
        {"requests_running = 1abc\n", LT_EFORMAT, "my.map:1: the series '1abc' is not valid"},
        {"requests_running = x{a=\"1\\q\"}\n", LT_EFORMAT, "my.map:1: the series"},
        {"requests_running = x{a=\"1\"\n", LT_EFORMAT,
         "my.map:1: the series 'x{a=\"1\"' is not valid"},
        {"requests_running =\n", LT_EFORMAT, "my.map:1: the series '' is not valid"},
        {"kv_cache_usage = x * 0\n", LT_EFORMAT, "my.map:1: the factor '0' is not a positive"},
        {"kv_cache_usage = x * -1e-2\n", LT_EFORMAT, "is not a positive number"},
        {"requests_running = x{a=\"1\",b=\"1\",c=\"1\",d=\"1\",e=\"1\",f=\"1\",g=\"1\",h=\"1\","
         "i=\"1\"}\n",
         LT_ELIMIT, "more than 8 labels"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_prom_map *m;
        struct lt_err err = {0};
        assert_int_equal(lt_prom_map_new(&m, &err), 0);
        int rc = lt_prom_map_load_mem(m, cases[i].text, strlen(cases[i].text), "my.map", &err);
        if (rc != cases[i].rc || !strstr(err.msg, cases[i].words))
            fail_msg("case %zu: rc %d, '%s'", i, rc, err.msg);
        lt_prom_map_free(m);
    }
    /* a long line, and a missing file */
    char big[LT_PROM_MAP_LINE_MAX + 100];
    memset(big, 'x', sizeof big - 2);
    big[sizeof big - 2] = '\n';
    big[sizeof big - 1] = '\0';
    struct lt_prom_map *m;
    struct lt_err err = {0};
    assert_int_equal(lt_prom_map_new(&m, &err), 0);
    assert_int_equal(lt_prom_map_load_mem(m, big, strlen(big), "my.map", &err), LT_ELIMIT);
    assert_int_equal(lt_prom_map_load(m, "/nonexistent/my.map", &err), LT_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/my.map: cannot open"));
    lt_prom_map_free(m);
}

static void test_names(void **state)
{
    for (int c = 0; c < LT_PM_COUNT; c++)
        assert_int_equal(lt_prom_map_canon_find(lt_prom_map_canon_name((enum lt_prom_canon)c)), c);
    assert_string_equal(lt_prom_map_canon_unit(LT_PM_GPU_ENERGY), "J");
    assert_int_equal(lt_prom_map_canon_agg(LT_PM_KV_USAGE), LT_PROM_AGG_MEAN);
    assert_string_equal(lt_prom_map_server_name(LT_PROM_SERVER_LLAMACPP), "llama.cpp");
    assert_string_equal(lt_prom_type_name(LT_PROM_SUMMARY), "summary");
    struct lt_prom_page pg;
    struct lt_err err = {0};
    lt_prom_page_init(&pg, NULL);
    assert_int_equal(parse(&pg, "up 1\n", &err), 0);
    assert_int_equal(lt_prom_map_detect(&pg), LT_PROM_SERVER_UNKNOWN);
    lt_prom_page_release(&pg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_v0),
        cmocka_unit_test(test_vllm_v1),
        cmocka_unit_test(test_sglang),
        cmocka_unit_test(test_llamacpp),
        cmocka_unit_test(test_tgi),
        cmocka_unit_test(test_dcgm),
        cmocka_unit_test(test_hostile_fixtures),
        cmocka_unit_test(test_values_and_timestamps),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_histogram_and_summary),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_nul),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_map_file),
        cmocka_unit_test(test_map_file_errors),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
