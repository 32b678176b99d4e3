/*
 * Unit tests of the importers through lt_import_mem (no files): a table of
 * inputs, each with the records it must give (as `cat` prints them, one a
 * line) or the error it must name, plus the header each format writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "traces/lt_buf.h"
#include "traces/trace_import.h"
#include "traces/trace_json.h"

#include <string.h>

struct sink_state {
    struct lt_buf out;
    struct lt_buf hdr;
};

static int on_header(void *ud, const struct lt_header *h, struct lt_err *err)
{
    struct sink_state *s = ud;
    return lt_json_header(&s->hdr, h);
}

static int on_record(void *ud, const struct lt_record *r, struct lt_err *err)
{
    struct sink_state *s = ud;
    int rc = lt_json_record(&s->out, r);
    return rc ? rc : lt_buf_puts(&s->out, "\n");
}

struct imp_case {
    const char *name;
    enum lt_import_format fmt;
    bool sort;
    uint32_t block_tokens;
    const char *in;
    const char *want; /* records, or NULL for an error */
    const char *msg;  /* part of the error message */
};

#define AZ_COLS "TIMESTAMP,ContextTokens,GeneratedTokens"
#define AZ AZ_COLS "\r\n"
#define BG "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"

static const struct imp_case cases[] = {
    {"azure", LT_IMPORT_AZURE, false, 0,
     AZ "2023-11-16 18:17:03.9799600,4808,10\r\n2023-11-16 18:17:04.0319600,3180,8",
     "{\"t\":0,\"in\":4808,\"out\":10}\n{\"t\":52000,\"in\":3180,\"out\":8}\n", NULL},
    {"azure 7th digit rounds", LT_IMPORT_AZURE, false, 0,
     AZ "2023-01-01 00:00:00.0000004,1,1\n2023-01-01 00:00:00.0000015,1,1\n",
     "{\"t\":0,\"in\":1,\"out\":1}\n{\"t\":2,\"in\":1,\"out\":1}\n", NULL},
    {"azure columns by name, extra kept", LT_IMPORT_AZURE, false, 0,
     "GeneratedTokens,Note,timestamp,ContextTokens,N\n5,\"a, b\",2023-01-01 00:00:00,7,012\n",
     "{\"t\":0,\"in\":7,\"out\":5,\"Note\":\"a, b\",\"N\":\"012\"}\n", NULL},
    {"azure spaces and .0", LT_IMPORT_AZURE, false, 0, AZ " 2023-01-01 00:00:00 , 7.0 ,5\n",
     "{\"t\":0,\"in\":7,\"out\":5}\n", NULL},
    {"azure blank lines ignored", LT_IMPORT_AZURE, false, 0,
     AZ "\r\n2023-01-01 00:00:00,7,5\r\n\r\n", "{\"t\":0,\"in\":7,\"out\":5}\n", NULL},
    {"extra names that are record keys get a prefix", LT_IMPORT_AZURE, false, 0,
     AZ_COLS ",in,model\n2023-01-01 00:00:00,7,5,1,m\n",
     "{\"t\":0,\"in\":7,\"out\":5,\"azure:in\":1,\"azure:model\":\"m\"}\n", NULL},
    {"mooncake key t gets a prefix", LT_IMPORT_MOONCAKE, false, 0,
     "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"t\": 3}\n",
     "{\"t\":0,\"in\":1,\"out\":1,\"mooncake:t\":3}\n", NULL},
    {"azure header only", LT_IMPORT_AZURE, false, 0, AZ, "", NULL},
    {"azure bad fraction", LT_IMPORT_AZURE, false, 0, AZ "2023-01-01 00:00:00.,7,5\n", NULL,
     "x:2: column \"TIMESTAMP\": \"2023-01-01 00:00:00.\" is not a date and time"},
    {"burstgpt failed and total", LT_IMPORT_BURSTGPT, false, 0,
     BG "5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,0,0,0,API log\n50,,3,4,8,x\n",
     "{\"t\":0,\"model\":\"ChatGPT\",\"in\":472,\"out\":18,\"Log Type\":\"Conversation log\"}\n"
     "{\"t\":40000000,\"model\":\"GPT-4\",\"in\":0,\"out\":0,\"failed\":true,\"Log Type\":\"API "
     "log\"}\n"
     "{\"t\":45000000,\"in\":3,\"out\":4,\"Log Type\":\"x\",\"Total tokens\":8}\n",
     NULL},
    {"burstgpt fractional seconds", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Request tokens,Response tokens\n0.5,1,1\n1.2345675,1,1\n",
     "{\"t\":0,\"in\":1,\"out\":1}\n{\"t\":734568,\"in\":1,\"out\":1}\n", NULL},
    {"burstgpt session ids", LT_IMPORT_BURSTGPT, false, 0,
     "Session ID,Timestamp,Request tokens,Response tokens\n17,1,1,1\nabc,2,1,1\n007,3,1,1\n",
     "{\"t\":0,\"session\":17,\"in\":1,\"out\":1}\n"
     "{\"t\":1000000,\"in\":1,\"out\":1,\"Session ID\":\"abc\"}\n"
     "{\"t\":2000000,\"in\":1,\"out\":1,\"Session ID\":\"007\"}\n",
     NULL},
    {"burstgpt missing column", LT_IMPORT_BURSTGPT, false, 0, "Timestamp,Model\n1,x\n", NULL,
     "x:1: no column \"Request tokens\""},
    {"burstgpt sorted", LT_IMPORT_BURSTGPT, true, 0,
     "Timestamp,Request tokens,Response tokens\n9,1,1\n3,2,1\n9,3,1\n",
     "{\"t\":0,\"in\":2,\"out\":1}\n{\"t\":6000000,\"in\":1,\"out\":1}\n"
     "{\"t\":6000000,\"in\":3,\"out\":1}\n",
     NULL},
    {"mooncake", LT_IMPORT_MOONCAKE, false, 0,
     "{\"timestamp\": 10, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1]}\n"
     "{\"timestamp\": 12.5, \"input_length\": 1, \"output_length\": 2, \"hash_ids\": [], "
     "\"x\": [1]}\n",
     "{\"t\":0,\"in\":600,\"out\":2,\"blocks\":[0,1]}\n"
     "{\"t\":2500,\"in\":1,\"out\":2,\"blocks\":[],\"x\":[1]}\n",
     NULL},
    {"mooncake bad hash id", LT_IMPORT_MOONCAKE, false, 0,
     "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, -2]}\n", NULL,
     "x:1: key \"hash_ids\": element 1 must be a whole number"},
    {"jsonl big numbers", LT_IMPORT_JSONL, false, 512,
     "{\"t\":1,\"session\":18446744073709551615,\"blocks\":[9223372036854775808],"
     "\"s\":\"18446744073709551615\",\"n\":[18446744073709551615]}\n",
     "{\"t\":1,\"session\":18446744073709551615,\"blocks\":[9223372036854775808],"
     "\"s\":\"18446744073709551615\",\"n\":[18446744073709551615]}\n",
     NULL},
    {"jsonl big number and \\u0000", LT_IMPORT_JSONL, false, 0,
     "{\"t\":1,\"session\":18446744073709551615,\"text\":\"a\\u0000\"}\n", NULL,
     "x:1: integers above 9223372036854775807 in a line that also holds \\u0000"},
    {"jsonl blocks need a size", LT_IMPORT_JSONL, false, 0, "{\"t\":1}\n{\"t\":2,\"blocks\":[]}\n",
     NULL, "x:2: a record with \"blocks\", but no header line says how many tokens"},
    {"jsonl nulls are absent", LT_IMPORT_JSONL, false, 0,
     "{\"t\":1,\"model\":null,\"in\":null,\"orig\":{\"ttft\":null},\"zz\":null}\n",
     "{\"t\":1,\"zz\":null}\n", NULL},
    {"jsonl integral reals", LT_IMPORT_JSONL, false, 0, "{\"t\":1e3,\"in\":2.0}\n",
     "{\"t\":1000,\"in\":2}\n", NULL},
    {"jsonl fractional token count", LT_IMPORT_JSONL, false, 0, "{\"t\":1,\"in\":2.5}\n", NULL,
     "x:1: key \"in\": must be a whole number"},
    {"jsonl NUL in model", LT_IMPORT_JSONL, false, 0, "{\"t\":1,\"model\":\"a\\u0000b\"}\n", NULL,
     "x:1: key \"model\": must not contain NUL"},
};

static void test_table(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct imp_case *k = &cases[i];
        struct sink_state s;
        lt_buf_init(&s.out, 1 << 20);
        lt_buf_init(&s.hdr, 1 << 20);
        lt_buf_puts(&s.out, "");
        struct lt_import_sink sink = {on_header, on_record, &s};
        struct lt_import_opts o = {
            .format = k->fmt, .name = "x", .sort = k->sort, .block_tokens = k->block_tokens};
        struct lt_import_stats st;
        struct lt_err err = {0};
        int rc = lt_import_mem(k->in, strlen(k->in), &o, &sink, &st, &err);
        if (k->want) {
            if (rc != 0)
                print_error("case \"%s\": %s\n", k->name, err.msg);
            assert_int_equal(rc, 0);
            if (strcmp(s.out.p, k->want))
                print_error("case \"%s\": got\n%s", k->name, s.out.p);
            assert_string_equal(s.out.p, k->want);
            assert_non_null(s.hdr.p); /* a header, also with no records */
        } else {
            if (rc == 0 || !strstr(err.msg, k->msg))
                print_error("case \"%s\": rc %d, message \"%s\"\n", k->name, rc, err.msg);
            assert_true(rc < 0);
            assert_non_null(strstr(err.msg, k->msg));
        }
        lt_buf_release(&s.out);
        lt_buf_release(&s.hdr);
    }
}

static void test_headers(void **state)
{
    static const struct {
        enum lt_import_format fmt;
        const char *in;
        const char *want;
    } h[] = {
        {LT_IMPORT_AZURE, AZ "2023-11-16 18:17:03.9799600,1,1\n",
         "\"source\":\"import:azure\",\"meta\":{\"file\":\"f.csv\",\"format\":\"azure\","
         "\"start\":\"2023-11-16T18:17:03.979960Z\"}}"},
        {LT_IMPORT_BURSTGPT, "Timestamp,Request tokens,Response tokens\n",
         "\"source\":\"import:burstgpt\",\"meta\":{\"file\":\"f.csv\",\"format\":\"burstgpt\"}}"},
        {LT_IMPORT_MOONCAKE, "",
         "\"source\":\"import:mooncake\",\"block_tokens\":512,\"meta\":{\"file\":\"f.csv\","
         "\"format\":\"mooncake\"}}"},
        {LT_IMPORT_JSONL,
         "{\"format\":\"loadtrace\",\"version\":1,\"kind\":\"trace\",\"created\":\"C\","
         "\"source\":\"S\",\"block_tokens\":64,\"meta\":{\"a\":[1]},\"z\":true}\n",
         "\"created\":\"C\",\"source\":\"S\",\"block_tokens\":64,\"meta\":{\"a\":[1]},"
         "\"z\":true}"},
    };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        struct sink_state s;
        lt_buf_init(&s.out, 1 << 20);
        lt_buf_init(&s.hdr, 1 << 20);
        struct lt_import_sink sink = {on_header, on_record, &s};
        struct lt_import_opts o = {.format = h[i].fmt, .name = "dir/f.csv"};
        struct lt_err err = {0};
        assert_int_equal(lt_import_mem(h[i].in, strlen(h[i].in), &o, &sink, NULL, &err), 0);
        if (!strstr(s.hdr.p, h[i].want))
            print_error("header %zu: %s\n", i, s.hdr.p);
        assert_non_null(strstr(s.hdr.p, h[i].want));
        lt_buf_release(&s.out);
        lt_buf_release(&s.hdr);
    }
}

/* --skip-bad: bad rows are reported and counted, good ones kept. */
static int skips;
static void on_skip(void *ud, const char *msg)
{
    skips++;
    assert_non_null(strstr(msg, "x:"));
}

static void test_skip_bad(void **state)
{
    static const char in[] = "{\"t\":1}\n{\"t\":x}\n{\"t\":2,\"in\":-1}\n{\"t\":3}\n";
    struct sink_state s;
    lt_buf_init(&s.out, 1 << 20);
    lt_buf_init(&s.hdr, 1 << 20);
    struct lt_import_sink sink = {on_header, on_record, &s};
    struct lt_import_opts o = {
        .format = LT_IMPORT_JSONL, .name = "x", .skip_bad = true, .on_skip = on_skip};
    struct lt_import_stats st;
    struct lt_err err = {0};
    skips = 0;
    assert_int_equal(lt_import_mem(in, sizeof in - 1, &o, &sink, &st, &err), 0);
    assert_int_equal(skips, 2);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(st.records, 2);
    assert_int_equal(st.first_t, 1);
    assert_int_equal(st.last_t, 3);
    assert_string_equal(s.out.p, "{\"t\":1}\n{\"t\":3}\n");
    lt_buf_release(&s.out);
    lt_buf_release(&s.hdr);
}

/* Unknown keys are copied, but not to any depth. */
static void test_deep(void **state)
{
    char in[256];
    int n = snprintf(in, sizeof in, "{\"t\":1,\"x\":");
    for (int i = 0; i < 70; i++)
        in[n++] = '[';
    for (int i = 0; i < 70; i++)
        in[n++] = ']';
    memcpy(in + n, "}\n", 3);
    struct lt_import_sink sink = {NULL, NULL, NULL};
    struct lt_import_opts o = {.format = LT_IMPORT_JSONL, .name = "x"};
    struct lt_err err = {0};
    assert_int_equal(lt_import_mem(in, strlen(in), &o, &sink, NULL, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "x:1: key \"x\": nested deeper than 64 levels"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_skip_bad),
        cmocka_unit_test(test_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
