/*
 * Unit tests of the embeddable server (sim/sim.h), as replay and demo use
 * it: start on a free loopback port, answer, run two at once, refuse bad
 * options and a port in use, stop with a stream still open, and leave a
 * complete log behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/sim.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct body {
    char buf[65536];
    size_t len;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    struct body *b = ud;
    size_t len = sz * n;
    if (b->len + len < sizeof b->buf) {
        memcpy(b->buf + b->len, p, len);
        b->len += len;
        b->buf[b->len] = '\0';
    }
    return len;
}

/* One request; returns the HTTP status, body in b. */
static long fetch(uint16_t port, const char *path, const char *post, struct body *b)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    CURL *h = curl_easy_init();
    b->len = 0;
    b->buf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    if (post)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return code;
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (; (s = strstr(s, needle)) != NULL; s++)
        n++;
    return n;
}

static void test_start_two_and_stop(void **state)
{
    struct lt_err err = {0};
    struct lt_sim_opts o = {.profile = "fast", .seed = 1};
    struct lt_sim *a = lt_sim_start(&o, &err);
    assert_non_null(a);
    struct lt_sim *b = lt_sim_start(&o, &err);
    assert_non_null(b);
    assert_true(lt_sim_port(a) != 0 && lt_sim_port(b) != 0);
    assert_true(lt_sim_port(a) != lt_sim_port(b));
    struct body r;
    assert_int_equal(fetch(lt_sim_port(a), "/health", NULL, &r), 200);
    assert_int_equal(fetch(lt_sim_port(b), "/v1/models", NULL, &r), 200);
    assert_non_null(strstr(r.buf, "loadtrace-sim-fast"));
    assert_int_equal(fetch(lt_sim_port(a), "/v1/completions",
                           "{\"prompt\":\"a b\",\"max_tokens\":12,\"ignore_eos\":true,"
                           "\"stream\":true}",
                           &r),
                     200);
    assert_int_equal(count(r.buf, "\"text\":"), 12);
    assert_int_equal(count(r.buf, "data: [DONE]"), 1);
    /* the same port again: taken */
    struct lt_sim_opts same = o;
    same.port = lt_sim_port(a);
    assert_null(lt_sim_start(&same, &err));
    assert_non_null(strstr(err.msg, "cannot listen"));
    struct lt_sim_stats st;
    lt_sim_stats(a, &st);
    assert_int_equal(st.chunks, 12);
    assert_true(st.late_p50_us <= st.late_p99_us && st.late_p99_us <= st.late_max_us);
    lt_sim_stop(a);
    lt_sim_stop(b);
    lt_sim_stop(NULL);
}

static void test_bad_options(void **state)
{
    struct lt_err err = {0};
    struct lt_sim_opts o = {.profile = "nosuch"};
    assert_null(lt_sim_start(&o, &err));
    assert_non_null(strstr(err.msg, "unknown profile"));
    o = (struct lt_sim_opts){.dialect = "weird"};
    assert_null(lt_sim_start(&o, &err));
    o = (struct lt_sim_opts){.faults = "500=3"};
    assert_null(lt_sim_start(&o, &err));
    o = (struct lt_sim_opts){.host = "no.such.host.invalid"};
    assert_null(lt_sim_start(&o, &err));
    o = (struct lt_sim_opts){.log_path = "/nonexistent-dir/x.log"};
    assert_null(lt_sim_start(&o, &err));
}

static void test_stop_with_open_stream_logs(void **state)
{
    const char *dir = getenv("LT_TMP");
    char log[512];
    snprintf(log, sizeof log, "%s/server.log", dir ? dir : "/tmp");
    struct lt_err err = {0};
    struct lt_sim_opts o = {.profile = "default", .log_path = log, .time_scale = 100};
    struct lt_sim *s = lt_sim_start(&o, &err);
    assert_non_null(s);
    uint16_t port = lt_sim_port(s);
    /* a finished request, then a long stream left open at stop */
    struct body r;
    assert_int_equal(
        fetch(port, "/v1/chat/completions",
              "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}", &r),
        200);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/completions", port);
    CURLM *m = curl_multi_init();
    CURL *h = curl_easy_init();
    struct body sb = {.len = 0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(
        h, CURLOPT_POSTFIELDS,
        "{\"prompt\":\"x\",\"max_tokens\":100000,\"ignore_eos\":true,\"stream\":true}");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
    curl_multi_add_handle(m, h);
    int running = 1;
    for (int i = 0; i < 400 && count(sb.buf, "\"text\"") < 3 && running; i++) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    assert_true(count(sb.buf, "\"text\"") >= 3);
    assert_int_equal(lt_sim_stop_err(s, &err), 0);
    for (int i = 0; i < 100 && running; i++) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    assert_int_equal(running, 0); /* the stream was cut */
    curl_multi_remove_handle(m, h);
    curl_easy_cleanup(h);
    curl_multi_cleanup(m);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[1 << 16];
    int lines = 0, complete = 0, cut = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        complete += strstr(line, "\"complete\":true") != NULL;
        cut += strstr(line, "\"complete\":false") != NULL;
    }
    fclose(f);
    assert_int_equal(lines, 3); /* the header and two requests */
    assert_int_equal(complete, 1);
    assert_int_equal(cut, 1);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_two_and_stop),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_stop_with_open_stream_logs),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
