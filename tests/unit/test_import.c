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

#include "base/lt_buf.h"
#include "workload/session_infer_internal.h"
#include "workload/trace_import.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sink_state {
    struct lt_buf out;
    struct lt_buf hdr;
};

static int on_header(void *ud, const struct lt_header *h, struct lt_err *err)
{
    struct sink_state *s = ud;
    return lt_trace_json_header(&s->hdr, h);
}

static int on_record(void *ud, const struct lt_record *r, struct lt_err *err)
{
    struct sink_state *s = ud;
    int rc = lt_trace_json_record(&s->out, r);
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
    {"azure day the month lacks", LT_IMPORT_AZURE, false, 0, AZ "2023-02-30 00:00:00,7,5\n", NULL,
     "x:2: column \"TIMESTAMP\": \"2023-02-30 00:00:00\" is not a date and time"},
    {"azure 29 February of a common year", LT_IMPORT_AZURE, false, 0,
     AZ "2024-02-29 00:00:00,7,5\n2023-02-29 00:00:00,7,5\n", NULL, "x:3: column"},
    {"azure 31 April", LT_IMPORT_AZURE, false, 0, AZ "2023-04-31 23:59:59,7,5\n", NULL,
     "is not a date and time"},
    {"azure leap day", LT_IMPORT_AZURE, false, 0,
     AZ "2000-02-29 23:59:59,7,5\n2000-03-01 00:00:00,7,5\n",
     "{\"t\":0,\"in\":7,\"out\":5}\n{\"t\":1000000,\"in\":7,\"out\":5}\n", NULL},
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
     "{\"t\":1000000,\"session\":0,\"session_id\":\"abc\",\"in\":1,\"out\":1}\n"
     "{\"t\":2000000,\"session\":1,\"session_id\":\"007\",\"in\":1,\"out\":1}\n",
     NULL},
    /* UUIDs, as BurstGPT's later releases write them: numbered 0, 1, ... in
     * order of first appearance, the name kept; an empty one is no session */
    {"burstgpt session uuids", LT_IMPORT_BURSTGPT, true, 0,
     "Session ID,Timestamp,Request tokens,Response tokens\n"
     "6f1c2d3e-0000-4000-8000-00000000000b,3,1,1\n"
     "6f1c2d3e-0000-4000-8000-00000000000a,1,1,1\n"
     ",2,1,1\n"
     "6f1c2d3e-0000-4000-8000-00000000000b,4,1,1\n",
     "{\"t\":0,\"session\":1,\"session_id\":\"6f1c2d3e-0000-4000-8000-00000000000a\",\"in\":1,"
     "\"out\":1}\n"
     "{\"t\":1000000,\"in\":1,\"out\":1,\"Session ID\":\"\"}\n"
     "{\"t\":2000000,\"session\":0,\"session_id\":\"6f1c2d3e-0000-4000-8000-00000000000b\","
     "\"in\":1,\"out\":1}\n"
     "{\"t\":3000000,\"session\":0,\"session_id\":\"6f1c2d3e-0000-4000-8000-00000000000b\","
     "\"in\":1,\"out\":1}\n",
     NULL},
    {"jsonl session names", LT_IMPORT_JSONL, false, 0,
     "{\"t\":1,\"session\":\"alice\"}\n{\"t\":2,\"session\":\"bob\"}\n"
     "{\"t\":3,\"session_id\":\"alice\"}\n{\"t\":4,\"session\":7,\"session_id\":\"x\"}\n",
     "{\"t\":1,\"session\":0,\"session_id\":\"alice\"}\n{\"t\":2,\"session\":1,\"session_id\":"
     "\"bob\"}\n{\"t\":3,\"session\":0,\"session_id\":\"alice\"}\n"
     "{\"t\":4,\"session\":7,\"session_id\":\"x\"}\n",
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
    {"jsonl cancellation", LT_IMPORT_JSONL, false, 0,
     "{\"t\":1,\"out\":9,\"cancel_tokens\":4,\"cancel_after\":2500000}\n",
     "{\"t\":1,\"out\":9,\"cancel_after\":2500000,\"cancel_tokens\":4}\n", NULL},
    {"jsonl negative cancel_after", LT_IMPORT_JSONL, false, 0, "{\"t\":1,\"cancel_after\":-1}\n",
     NULL, "x:1: key \"cancel_after\": must not be negative"},
    {"jsonl nulls are absent", LT_IMPORT_JSONL, false, 0,
     "{\"t\":1,\"model\":null,\"in\":null,\"orig\":{\"ttft\":null},\"zz\":null}\n",
     "{\"t\":1,\"zz\":null}\n", NULL},
    {"jsonl integral reals", LT_IMPORT_JSONL, false, 0, "{\"t\":1e3,\"in\":2.0}\n",
     "{\"t\":1000,\"in\":2}\n", NULL},
    {"jsonl fractional token count", LT_IMPORT_JSONL, false, 0, "{\"t\":1,\"in\":2.5}\n", NULL,
     "x:1: key \"in\": must be a whole number"},
    {"jsonl NUL in model", LT_IMPORT_JSONL, false, 0, "{\"t\":1,\"model\":\"a\\u0000b\"}\n", NULL,
     "x:1: key \"model\": must not contain NUL"},
    /* times are range-checked before any arithmetic, which would overflow */
    {"burstgpt time too large", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Request tokens,Response tokens\n1,1,1\n12345678901234.1,1,1\n", NULL,
     "x:3: column \"Timestamp\": 12345678901234.1 s is out of range"},
    {"burstgpt time too small", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Request tokens,Response tokens\n-9223372036854,1,1\n9223372036854,1,1\n", NULL,
     "x:2: column \"Timestamp\": -9223372036854 s is out of range"},
    {"burstgpt time at the limit", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Request tokens,Response tokens\n-4611686018427,1,1\n4611686018427,1,1\n",
     "{\"t\":0,\"in\":1,\"out\":1}\n{\"t\":9223372036854000000,\"in\":1,\"out\":1}\n", NULL},
    {"mooncake time too large", LT_IMPORT_MOONCAKE, false, 0,
     "{\"timestamp\": 9.2e15, \"input_length\": 1, \"output_length\": 1}\n", NULL,
     "x:1: key \"timestamp\": 9200000000000000 ms is out of range"},
    /* a time beyond 2^53 is not exact as a real */
    {"jsonl t beyond 2^53 as a real", LT_IMPORT_JSONL, false, 0, "{\"t\":9007199254740993.0}\n",
     NULL, "x:1: key \"t\": 9007199254740992 is a real number of 2^53 or more, which is not exact"},
    {"jsonl t beyond 2^53 as an integer", LT_IMPORT_JSONL, false, 0, "{\"t\":9007199254740993}\n",
     "{\"t\":9007199254740993}\n", NULL},
    {"jsonl byte order mark", LT_IMPORT_JSONL, false, 0, "\xEF\xBB\xBF{\"t\":1}\n{\"t\":2}\n",
     "{\"t\":1}\n{\"t\":2}\n", NULL},
    {"csv byte order mark", LT_IMPORT_BURSTGPT, false, 0,
     "\xEF\xBB\xBFTimestamp,Request tokens,Response tokens\n1,1,1\n",
     "{\"t\":0,\"in\":1,\"out\":1}\n", NULL},
    /* strings are UTF-8, as JSON output needs */
    {"csv field not UTF-8", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Model,Request tokens,Response tokens,Note\n1,m,1,1,caf\xe9\n", NULL,
     "x:2: column \"Note\": not valid UTF-8"},
    {"csv model not UTF-8", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Model,Request tokens,Response tokens\n1,\xff,1,1\n", NULL,
     "x:2: column \"Model\": not valid UTF-8"},
    {"csv column name not UTF-8", LT_IMPORT_AZURE, false, 0, AZ_COLS ",\xc3\n", NULL,
     "x:1: the name of column 4 is not valid UTF-8"},
    {"csv UTF-8 kept", LT_IMPORT_BURSTGPT, false, 0,
     "Timestamp,Request tokens,Response tokens,Note\n1,1,1,caf\xc3\xa9\n",
     "{\"t\":0,\"in\":1,\"out\":1,\"Note\":\"caf\xc3\xa9\"}\n", NULL},
};

/* Formats read by a map (--map, and TraceLab's built-in ones). */
struct map_case {
    struct imp_case c;
    const char *map;
};

static const struct map_case map_cases[] = {
    /* --map: units, sums, alternatives, quoted names; what it does not
     * name is kept; a session by any id is numbered and named */
    {{"csv map seconds and sums", LT_IMPORT_CSV, false, 0,
      "ts,pre,new,gen,conv,\"a,b\"\n10.5,100,20,7,c1,x\n12,0,5,1,c2,y\n12.000001,120,4,2,c1,z\n",
      "{\"t\":0,\"session\":0,\"session_id\":\"c1\",\"in\":120,\"cached\":100,\"out\":7,\"a,b\":"
      "\"x\"}\n"
      "{\"t\":1500000,\"session\":1,\"session_id\":\"c2\",\"in\":5,\"cached\":0,\"out\":1,\"a,b\":"
      "\"y\"}\n"
      "{\"t\":1500001,\"session\":0,\"session_id\":\"c1\",\"in\":124,\"cached\":120,\"out\":2,\"a,"
      "b\":"
      "\"z\"}\n",
      NULL},
     "t=ts:s,in=pre+new,cached=pre,out=gen,session=conv"},
    {{"csv map ms, us, iso", LT_IMPORT_CSV, false, 0,
      "a,b,c,n\n1.5,7,2025-01-01T00:00:00.25Z,1\n2,9,2025-01-01 00:00:01,2\n",
      "{\"t\":0,\"think\":1500,\"in\":8}\n{\"t\":750000,\"think\":2000,\"in\":11}\n", NULL},
     "t=c:iso,think=a:ms,in=b+missing|n"},
    {{"csv map alternatives", LT_IMPORT_CSV, false, 0, "id,arrival_time,x\nA,1,1\nB,2,1\n",
      "{\"t\":0,\"session\":0,\"session_id\":\"A\",\"in\":1}\n"
      "{\"t\":1000,\"session\":1,\"session_id\":\"B\",\"in\":1}\n",
      NULL},
     "session=session_id|id,t=arrival_time:ms,in=x"},
    {{"csv map failed and model", LT_IMPORT_CSV, false, 0, "t,ok,m\n1,true,gpt\n2,0,\n",
      "{\"t\":0,\"model\":\"gpt\",\"failed\":true}\n{\"t\":1000000}\n", NULL},
     "t=t:s,failed=ok,model=m"},
    {{"csv map bad time", LT_IMPORT_CSV, false, 0, "t\n1\nx\n", NULL,
      "x:3: map t: \"x\" is not a time in seconds"},
     "t=t:s"},
    {{"csv map missing column", LT_IMPORT_CSV, false, 0, "t\n1\n", NULL,
      "--map names column \"in\", which the header line does not have (it has \"t\")"},
     "t=t:s,in=in"},
    {{"csv map sum too large", LT_IMPORT_CSV, false, 0, "t,a,b\n1,4294967295,1\n", NULL,
      "x:2: map in: the sum is above 4294967295"},
     "t=t:s,in=a+b"},
    {{"jsonl map nested", LT_IMPORT_JSONL, false, 0,
      "{\"created\":1700000000,\"model\":\"gpt-4o\",\"usage\":{\"prompt_tokens\":50,"
      "\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":32},"
      "\"completion_tokens_details\":{\"reasoning_tokens\":4}},\"user\":17}\n"
      "{\"created\":1700000002,\"model\":\"gpt-4o\",\"usage\":{\"prompt_tokens\":5,"
      "\"completion_tokens\":1},\"user\":\"bob\"}\n",
      "{\"t\":0,\"session\":0,\"session_id\":\"17\",\"model\":\"gpt-4o\",\"in\":50,\"cached\":32,"
      "\"out\":9,\"reasoning\":4,\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":9,"
      "\"prompt_tokens_details\":{\"cached_tokens\":32},\"completion_tokens_details\":{"
      "\"reasoning_tokens\":4}}}\n"
      "{\"t\":2000000,\"session\":1,\"session_id\":\"bob\",\"model\":\"gpt-4o\",\"in\":5,\"out\":1,"
      "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n",
      NULL},
     "t=created:s,model=model,session=user,in=usage.prompt_tokens,"
     "cached=usage.prompt_tokens_details.cached_tokens,out=usage.completion_tokens,"
     "reasoning=usage.completion_tokens_details.reasoning_tokens"},
    {{"jsonl map array sum and think_after", LT_IMPORT_JSONL, false, 0,
      "{\"s\":\"a\",\"t\":0,\"w\":[{\"ms\":100},{\"ms\":20.5}]}\n{\"s\":\"b\",\"t\":1,\"w\":[]}\n"
      "{\"s\":\"a\",\"t\":2}\n{\"s\":\"a\",\"t\":3}\n",
      "{\"t\":0,\"session\":0,\"session_id\":\"a\",\"w\":[{\"ms\":100},{\"ms\":20.5}]}\n"
      "{\"t\":1000,\"session\":1,\"session_id\":\"b\",\"w\":[]}\n"
      "{\"t\":2000,\"session\":0,\"session_id\":\"a\",\"think\":120500}\n"
      "{\"t\":3000,\"session\":0,\"session_id\":\"a\"}\n",
      NULL},
     "session=s,t=t:ms,think_after=w[].ms:ms"},
    {{"jsonl map no t", LT_IMPORT_JSONL, false, 0, "{\"a\":1}\n", NULL, "x:1: map t: no value"},
     "t=ts:s"},
    /* TraceLab: rounds are turns, the tool wait after a round is the next
     * round's think, the prefix is cached context; sorted by arrival */
    {{"tracelab csv", LT_IMPORT_TRACELAB, false, 0,
      "id,input_len,output_len,arrival_time,round_idx,tool_wait_after_ms,prefix_len\n"
      "s1,100,20,0.000000,0,1500.000000,0\n"
      "s1,30,10,0.000000,1,250.500000,120\n"
      "s1,5,1,0.000000,2,0.000000,160\n"
      "s0,50,5,-10.000000,0,0.000000,0\n",
      "{\"t\":0,\"session\":1,\"session_id\":\"s0\",\"turn\":0,\"in\":50,\"cached\":0,\"out\":5}\n"
      "{\"t\":10000,\"session\":0,\"session_id\":\"s1\",\"turn\":0,\"in\":100,\"cached\":0,\"out\":"
      "20}\n"
      "{\"t\":10000,\"session\":0,\"session_id\":\"s1\",\"turn\":1,\"think\":1500000,\"in\":150,"
      "\"cached\":120,\"out\":10}\n"
      "{\"t\":10000,\"session\":0,\"session_id\":\"s1\",\"turn\":2,\"think\":250500,\"in\":165,"
      "\"cached\":160,\"out\":1}\n",
      NULL},
     NULL},
    {{"tracelab jsonl", LT_IMPORT_TRACELAB_JSONL, false, 0,
      "{\"session_id\":\"u\",\"round_index\":0,\"model\":\"m\",\"prefix_tokens\":0,"
      "\"newly_append_tokens\":40,\"output_tokens\":8,\"reasoning_output_tokens\":3,"
      "\"tools\":[{\"tool_wall_latency_ms\":700},{\"tool_wall_latency_ms\":300}],"
      "\"timing_events\":[{\"event_type\":\"reasoning\",\"timestamp\":\"2025-06-01T10:00:00Z\"}]}\n"
      "{\"session_id\":\"u\",\"round_index\":1,\"model\":\"m\",\"prefix_tokens\":48,"
      "\"newly_append_tokens\":6,\"output_tokens\":2,\"reasoning_output_tokens\":null,"
      "\"timing_events\":[{\"timestamp\":\"2025-06-01T10:00:03.5Z\"}]}\n",
      "{\"t\":0,\"session\":0,\"session_id\":\"u\",\"turn\":0,\"model\":\"m\",\"in\":40,\"cached\":"
      "0,"
      "\"out\":8,\"reasoning\":3,\"tracelab-jsonl:tools\":[{\"tool_wall_latency_ms\":700},{"
      "\"tool_wall_latency_ms\":300}],\"timing_events\":[{\"event_type\":\"reasoning\","
      "\"timestamp\":\"2025-06-01T10:00:00Z\"}]}\n"
      "{\"t\":3500000,\"session\":0,\"session_id\":\"u\",\"turn\":1,\"think\":1000000,\"model\":"
      "\"m\",\"in\":54,\"cached\":48,\"out\":2,\"timing_events\":[{\"timestamp\":"
      "\"2025-06-01T10:00:03.5Z\"}]}\n",
      NULL},
     NULL}};

static void run_case(const struct imp_case *k, const char *map)
{
    struct sink_state s;
    lt_buf_init(&s.out, 1 << 20);
    lt_buf_init(&s.hdr, 1 << 20);
    lt_buf_puts(&s.out, "");
    struct lt_import_sink sink = {on_header, on_record, &s};
    struct lt_import_opts o = {.format = k->fmt,
                               .name = "x",
                               .sort = k->sort,
                               .block_tokens = k->block_tokens,
                               .map = map};
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

static void test_table(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], NULL);
    for (size_t i = 0; i < sizeof map_cases / sizeof map_cases[0]; i++)
        run_case(&map_cases[i].c, map_cases[i].map);
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
    /* the reader's depth limit (32, the record's map included), not 64 as
     * it was: import wrote what its reader refused) */
    assert_non_null(strstr(err.msg, "x:1: key \"x\": nested deeper than 31 levels"));
}

/* Import writes only what its reader reads: a record
 * past a reader limit is refused (or, with skip_bad, skipped and counted),
 * and every file written reads back whole. */
static int read_all(const char *path, uint64_t *n, struct lt_err *err)
{
    struct lt_reader *r = lt_reader_open(path, NULL, err);
    if (!r)
        return err->code;
    const struct lt_item *it;
    int rc;
    *n = 0;
    while ((rc = lt_reader_next(r, &it, err)) == 1)
        (*n)++;
    lt_reader_close(r);
    return rc;
}

static void import_one(const char *line, bool skip_bad, int want_rc, const char *want_msg,
                       uint64_t want_records)
{
    char in[] = "/tmp/lt-test-import-XXXXXX", out[64];
    int fd = mkstemp(in);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"t\":1}\n", f);
    fputs(line, f);
    fputs("\n{\"t\":3}\n", f);
    fclose(f);
    snprintf(out, sizeof out, "%s.lt.zst", in);
    struct lt_import_opts o = {.format = LT_IMPORT_JSONL, .skip_bad = skip_bad};
    struct lt_import_stats st;
    struct lt_err err = {0};
    int rc = lt_import_file(in, out, &o, NULL, &st, &err);
    if (rc != want_rc || (want_msg && !strstr(err.msg, want_msg)))
        print_error("rc %d: %s\n", rc, err.msg);
    assert_int_equal(rc, want_rc);
    if (want_msg)
        assert_non_null(strstr(err.msg, want_msg));
    if (rc == 0) {
        uint64_t n = 0;
        struct lt_err rerr = {0};
        rc = read_all(out, &n, &rerr);
        if (rc != 0)
            print_error("%s\n", rerr.msg);
        assert_int_equal(rc, 0);
        assert_int_equal(n, want_records);
        assert_int_equal(st.records, want_records);
        assert_int_equal(st.skipped, skip_bad ? 3 - want_records : 0);
    } else {
        assert_int_equal(access(out, F_OK), -1); /* nothing half written is left */
    }
    unlink(in);
    unlink(out);
}

static char *nested(int levels)
{
    char *s = malloc(64 + 2 * (size_t)levels);
    int n = sprintf(s, "{\"t\":2,\"x\":");
    for (int i = 0; i < levels; i++)
        s[n++] = '[';
    s[n++] = '1';
    for (int i = 0; i < levels; i++)
        s[n++] = ']';
    strcpy(s + n, "}");
    return s;
}

static char *long_array(const char *key, size_t n)
{
    char *s = malloc(64 + 2 * n);
    size_t k = (size_t)sprintf(s, "{\"t\":2,\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        s[k++] = '0', s[k++] = ',';
    strcpy(s + k - 1, "]}");
    return s;
}

static void test_reader_limits(void **state)
{
    char *s = nested(31); /* the deepest the reader takes */
    import_one(s, false, 0, NULL, 3);
    free(s);
    s = nested(33);
    import_one(s, false, LT_EFORMAT, ":2: key \"x\": nested deeper than 31 levels", 0);
    import_one(s, true, 0, NULL, 2);
    free(s);
    s = long_array("calls", 1000000);
    import_one(s, false, 0, NULL, 3);
    free(s);
    s = long_array("calls", 1000001);
    import_one(s, false, LT_ELIMIT, ":2: ", 0);
    import_one(s, true, 0, NULL, 2);
    free(s);
    s = long_array("y", 1000001);
    import_one(s, false, LT_EFORMAT, ":2: key \"y\": has more than 1,000,000 elements", 0);
    free(s);
    size_t big = (16u << 20) + 10;
    s = malloc(big + 64);
    size_t k = (size_t)sprintf(s, "{\"t\":2,\"text\":\"");
    memset(s + k, 'a', big);
    strcpy(s + k + big, "\"}");
    import_one(s, false, LT_ELIMIT, "is larger than 16 MiB packed", 0);
    import_one(s, true, 0, NULL, 2);
    free(s);
}

/* --infer-sessions on Mooncake-style chains with known answers: A's turns
 * extend each other, B shares A's first (system prompt) block only, C is
 * alone, and a second continuation of A's turn 1 is a branch of its own. */
static void test_infer_sessions(void **state)
{
    static const char in[] =
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
        "{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 7]}\n"
        "{\"timestamp\": 2, \"input_length\": 1600, \"output_length\": 1, \"hash_ids\": [1, 2, 3, "
        "4]}\n"
        "{\"timestamp\": 3, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1, 7, "
        "8]}\n"
        "{\"timestamp\": 4, \"input_length\": 2100, \"output_length\": 1, \"hash_ids\": [1, 2, 3, "
        "4, "
        "5]}\n"
        "{\"timestamp\": 5, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [9]}\n"
        "{\"timestamp\": 6, \"input_length\": 2100, \"output_length\": 1, \"hash_ids\": [1, 2, 3, "
        "4, "
        "10]}\n"
        "{\"timestamp\": 7, \"input_length\": 10, \"output_length\": 1}\n";
    static const char *const want[] = {"\"session\":0,\"turn\":0", "\"session\":1,\"turn\":0",
                                       "\"session\":0,\"turn\":1", "\"session\":1,\"turn\":1",
                                       "\"session\":0,\"turn\":2", "\"session\":2,\"turn\":0",
                                       "\"session\":3,\"turn\":0", NULL};
    struct sink_state s;
    lt_buf_init(&s.out, 1 << 20);
    lt_buf_init(&s.hdr, 1 << 20);
    lt_buf_puts(&s.out, "");
    struct lt_import_sink sink = {on_header, on_record, &s};
    struct lt_import_opts o = {.format = LT_IMPORT_MOONCAKE, .name = "x", .infer_sessions = true};
    struct lt_import_stats st;
    struct lt_err err = {0};
    assert_int_equal(lt_import_mem(in, strlen(in), &o, &sink, &st, &err), 0);
    const char *line = s.out.p;
    for (int i = 0; i < 8; i++) {
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        char one[512];
        snprintf(one, sizeof one, "%.*s", (int)(end - line), line);
        if (want[i] ? !strstr(one, want[i]) : strstr(one, "\"session\"") != NULL)
            print_error("record %d: %s, want %s\n", i, one, want[i] ? want[i] : "no session");
        if (want[i])
            assert_non_null(strstr(one, want[i]));
        else
            assert_null(strstr(one, "\"session\""));
        line = end + 1;
    }
    assert_int_equal(st.chains, 4);
    assert_int_equal(st.chained, 3);
    /* [1,7] after [1,2], and [1,2,3,4,10] after [1,2,3,4,5]: not longer */
    assert_int_equal(st.infer_shorter, 2);
    assert_int_equal(st.infer_tied, 0);
    assert_int_equal(st.infer_branched, 0);
    assert_int_equal(st.turns_hist[0], 2); /* sessions 2 and 3 */
    assert_int_equal(st.turns_hist[1], 2); /* 0 (3 turns) and 1 (2) */
    assert_int_equal(st.turns_max, 3);
    lt_buf_release(&s.out);
    lt_buf_release(&s.hdr);
}

/* The linking rule itself, request by request: a last block that grew,
 * a full prefix, ties, branches, ids that do not form a prefix, shapes
 * that would make a cycle, and a long chain whose last block grows on
 * every turn. Each row: blocks, prompt, and the session/turn it must get. */
static void test_infer_rules(void **state)
{
    static const struct {
        uint64_t b[6];
        uint32_t n, in;
        uint64_t session;
        uint32_t turn;
    } rows[] = {
        {{1, 2, 3}, 3, 1100, 0, 0},
        {{1, 2, 4, 5}, 4, 1700, 0, 1},    /* 3 grew into 4 */
        {{1, 2, 4, 6, 7}, 5, 2300, 0, 2}, /* 5 grew into 6 */
        {{1, 2}, 2, 800, 1, 0},           /* shorter than all of chain 0 */
        {{9, 2, 3}, 3, 1300, 2, 0},       /* 2 and 3 are ids of [1,2,..], not of [9] */
        {{9, 2, 3, 8}, 4, 1400, 2, 1},    /* ... but [9,2,3] itself it extends */
        {{50, 51, 52}, 3, 1200, 3, 0},
        {{50, 51, 53}, 3, 1300, 3, 1},     /* each extends the other but the last ... */
        {{50, 51, 52}, 3, 1400, 3, 2},     /* ... linked forward in order, never back */
        {{50, 51, 57, 58}, 4, 1500, 3, 3}, /* the open one of three */
        {{60, 61}, 2, 600, 4, 0},
        {{70, 61}, 2, 700, 5, 0},
        {{60, 61, 62}, 3, 1100, 4, 1},
        {{60, 61, 63}, 3, 1150, 4, 2}, /* 62 grew: it continues [60,61,62] */
        {{60, 61}, 2, 900, 6, 0},      /* the first prompt again: it extends nothing */
        {{60, 64}, 2, 950, 6, 1},      /* of the two [60,61], the open one */
        {{80, 81}, 2, 600, 7, 0},
        {{80, 82}, 2, 600, 8, 0}, /* not longer than [80,81] */
        {{80, 83}, 2, 700, 9, 0}, /* extends both but their last, both open: a tie */
        {{100, 101}, 2, 600, 10, 0},
        {{100, 101, 102}, 3, 1100, 10, 1},
        {{100, 101, 102}, 3, 1100, 11, 0}, /* again: [100,101] was continued, a branch */
    };
    struct session_infer si;
    lt__session_infer_init(&si);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint64_t session = 99;
        uint32_t turn = 99;
        assert_int_equal(
            lt__session_infer_add(&si, rows[i].b, rows[i].n, true, rows[i].in, &session, &turn), 0);
        if (session != rows[i].session || turn != rows[i].turn)
            print_error("row %zu: session %llu turn %u, want %llu/%u\n", i,
                        (unsigned long long)session, turn, (unsigned long long)rows[i].session,
                        rows[i].turn);
        assert_int_equal(session, rows[i].session);
        assert_int_equal(turn, rows[i].turn);
    }
    struct lt_import_stats st;
    lt__session_infer_stats(&si, &st);
    assert_int_equal(st.chains, 12);
    assert_int_equal(st.chained, 10);
    assert_int_equal(st.infer_branched, 1);
    assert_int_equal(st.infer_tied, 1);
    assert_int_equal(st.infer_shorter, 1);
    assert_int_equal(st.turns_hist[0], 6);
    assert_int_equal(st.turns_hist[1], 5);
    assert_int_equal(st.turns_hist[2], 1); /* chain 3: 4 turns */
    assert_int_equal(st.turns_max, 4);
    lt__session_infer_release(&si);

    /* 200 turns after a shared system prompt block 0, each turn's last
     * block growing into a new id, and between them 5,000 first turns that
     * share block 0 only: those extend each other but for their last block,
     * so each ties with the ones before (but the first two); the chain
     * stays one session. */
    lt__session_infer_init(&si);
    uint64_t b[203];
    for (uint32_t k = 0; k < 200; k++) {
        for (uint32_t j = 0; j <= k + 1; j++)
            b[j] = j;
        b[k + 2] = 1000000 + k;
        uint64_t session;
        uint32_t turn;
        assert_int_equal(
            lt__session_infer_add(&si, b, k + 3, true, 512 * (k + 2) + 10, &session, &turn), 0);
        assert_int_equal(session, 0);
        assert_int_equal(turn, k);
        for (uint64_t r = 0; r < 25; r++) {
            uint64_t o[2] = {0, 2000000 + k * 25 + r};
            assert_int_equal(lt__session_infer_add(&si, o, 2, true, 700, &session, &turn), 0);
            assert_int_equal(turn, 0);
        }
    }
    /* a prompt of 100,000 blocks after those of 200 at most, and its next
     * turn: the prefix hashes of each fit (ASan checks the bounds) */
    enum { LONG = 100000 };
    uint64_t *lb = calloc(LONG + 1, sizeof *lb);
    assert_non_null(lb);
    for (uint32_t j = 0; j <= LONG; j++)
        lb[j] = 5000000 + j;
    uint64_t ls;
    uint32_t lt;
    assert_int_equal(lt__session_infer_add(&si, lb, LONG, true, 512u * LONG - 5, &ls, &lt), 0);
    assert_int_equal(lt, 0);
    uint64_t ls0 = ls;
    lb[LONG - 1] = 7; /* the last block grew */
    assert_int_equal(lt__session_infer_add(&si, lb, LONG + 1, true, 512u * LONG + 5, &ls, &lt), 0);
    assert_int_equal(ls, ls0);
    assert_int_equal(lt, 1);
    free(lb);
    lt__session_infer_stats(&si, &st);
    assert_int_equal(st.chained, 199 + 1);
    assert_int_equal(st.chains, 1 + 5000 + 1);
    assert_int_equal(st.infer_shorter, 1);
    assert_int_equal(st.infer_tied, 4998);
    assert_int_equal(st.turns_max, 200);
    assert_int_equal(st.turns_hist[0], 5000);
    assert_int_equal(st.turns_hist[1], 1); /* the long one's two turns */
    assert_int_equal(st.turns_hist[7], 1);
    lt__session_infer_release(&si);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),         cmocka_unit_test(test_infer_sessions),
        cmocka_unit_test(test_infer_rules),   cmocka_unit_test(test_headers),
        cmocka_unit_test(test_skip_bad),      cmocka_unit_test(test_deep),
        cmocka_unit_test(test_reader_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
