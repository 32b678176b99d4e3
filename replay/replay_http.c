/*
 * Blocking HTTP helpers (model discovery and calibration probes). The
 * event loop in replay.c does the real traffic; these run before it starts,
 * so simplicity wins over concurrency here.
 */
#include "base/lt_time.h"
#include "replay/replay_http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int lt_replay_http_headers(struct curl_slist **out, const char *api_key, const char *const *user,
                           size_t n, struct lt_err *err)
{
    return lt_replay_http_headers_for(out, false, true, api_key, user, n, err);
}

int lt_replay_http_headers_for(struct curl_slist **out, bool anthropic, bool bearer_too,
                               const char *api_key, const char *const *user, size_t n,
                               struct lt_err *err)
{
    struct curl_slist *l = NULL, *t;
    int rc = 0;
    char auth[1024];
#define ADD(s)                                                                                     \
    do {                                                                                           \
        if (!(t = curl_slist_append(l, (s)))) {                                                    \
            rc = lt_errset(err, LT_ENOMEM, "out of memory");                                       \
            goto out;                                                                              \
        }                                                                                          \
        l = t;                                                                                     \
    } while (0)
    ADD("Content-Type: application/json");
    ADD("Expect:"); /* no 100-continue round trip for long prompts */
    if (api_key && *api_key) {
        if (strlen(api_key) > sizeof auth - 32 || strpbrk(api_key, "\r\n")) {
            rc = lt_errset(err, LT_EINVAL, "the API key is too long or contains a line break");
            goto out;
        }
        if (anthropic) {
            snprintf(auth, sizeof auth, "x-api-key: %s", api_key);
            ADD(auth);
        }
        if (!anthropic || bearer_too) {
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
            ADD(auth);
        }
    }
    bool version = false;
    for (size_t i = 0; i < n; i++)
        version |= !strncasecmp(user[i], "anthropic-version:", 18);
    if (anthropic && !version)
        ADD("anthropic-version: 2023-06-01");
    for (size_t i = 0; i < n; i++) {
        const char *c = strchr(user[i], ':');
        if (!c || c == user[i] || strpbrk(user[i], "\r\n")) {
            rc = lt_errset(err, LT_EINVAL, "--header '%s' is not 'Name: value'", user[i]);
            goto out;
        }
        ADD(user[i]);
    }
#undef ADD
out:
    /* The key must not linger in memory longer than needed. */
    memset(auth, 0, sizeof auth);
    if (rc < 0) {
        curl_slist_free_all(l);
        l = NULL;
    }
    *out = l;
    return rc;
}

void lt_replay_http_setup(CURL *e, const struct lt_replay_http *h)
{
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, h->insecure ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, h->insecure ? 0L : 2L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "loadtrace/" LT_VERSION);
    /* HTTP/2 over TLS: let a new transfer wait for a connection being set
     * up, so streams share it instead of each opening its own. */
    if (!strncmp(h->base, "https://", 8))
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    if (h->no_proxy)
        curl_easy_setopt(e, CURLOPT_PROXY, ""); /* no proxy: also spares a getenv per request */
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct lt_buf *b = ud;
    size_t len = size * n;
    /* Past the cap the rest is dropped: these bodies are small JSON. */
    if (b->len + len <= b->max)
        lt_buf_append(b, p, len);
    return len;
}

struct wait_state {
    const struct lt_replay_http *h;
    lt_mono start;
    long next_ms; /* when to call h->waiting next */
};

static int on_xfer(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                   curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    struct wait_state *w = ud;
    long ms = (long)(lt_mono_diff_us(lt_mono_now(), w->start) / 1000);
    if (ms < w->next_ms)
        return 0;
    w->next_ms = ms + 1000;
    return w->h->waiting(w->h->waiting_ud, ms);
}

int lt_replay_http_do(const struct lt_replay_http *h, const char *path, const char *body,
                      struct lt_buf *resp, long *status, long timeout_ms, struct lt_err *err)
{
    int rc = 0;
    char url[2048];
    CURL *e = curl_easy_init();
    if (!e)
        return lt_errset(err, LT_ENOMEM, "cannot create a curl handle");
    snprintf(url, sizeof url, "%s%s", h->base, path);
    lt_buf_reset(resp);
    lt_replay_http_setup(e, h);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, resp);
    struct wait_state ws = {.h = h, .start = lt_mono_now(), .next_ms = 1000};
    if (h->waiting) {
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_xfer);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, &ws);
    }
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode c = curl_easy_perform(e);
    if (c != CURLE_OK) {
        /* the path only: the URL may hold credentials */
        rc =
            lt_errset(err, LT_EIO, "%s %s: %s", body ? "POST" : "GET", path, curl_easy_strerror(c));
        goto out;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
out:
    curl_easy_cleanup(e);
    return rc;
}
