/*
 * Blocking HTTP helpers for the few requests replay makes before a run
 * starts (listing the models, calibration probes): one easy handle each,
 * the same headers and TLS settings as the run, a bounded response body.
 */
#ifndef LT_REPLAY_HTTP_H
#define LT_REPLAY_HTTP_H

#include "base/lt_buf.h"
#include "base/lt_err.h"

#include <curl/curl.h>
#include <stdbool.h>

/* Settings every request of a replay shares. */
struct lt_replay_http {
    const char *base;           /* base URL, no trailing slash, no /v1 */
    struct curl_slist *headers; /* Content-Type, Expect:, Authorization, user headers */
    bool insecure;
    long connect_timeout_ms;
    bool no_proxy; /* ignore http_proxy and friends (loopback targets) */
    /* Called about once a second while a request of lt_replay_http_do has
     * no answer (may be NULL), with the ms waited; non-zero abandons it. */
    int (*waiting)(void *ud, long ms);
    void *waiting_ud;
};

/* Build the header list: JSON content type, no "Expect: 100-continue", the
 * bearer key when api_key is not NULL, and the user's headers (each must be
 * "Name: value"). Returns 0, LT_EINVAL (a malformed header) or LT_ENOMEM. */
int lt_replay_http_headers(struct curl_slist **out, const char *api_key, const char *const *user,
                           size_t n, struct lt_err *err);
/* The same for a target that speaks Anthropic's Messages API when
 * anthropic: the key as "x-api-key" (and also as a bearer token when
 * bearer_too: vLLM's /v1/messages reads only that) and an
 * "anthropic-version" header (unless the user gave one). */
int lt_replay_http_headers_for(struct curl_slist **out, bool anthropic, bool bearer_too,
                               const char *api_key, const char *const *user, size_t n,
                               struct lt_err *err);

/* Apply the shared settings to an easy handle. */
void lt_replay_http_setup(CURL *e, const struct lt_replay_http *h);

/* GET (body NULL) or POST body to base + path; the response body goes to
 * resp (bounded by its cap), the status to *status. Returns 0 when an HTTP
 * answer came back (any status), a negative code with err otherwise. */
int lt_replay_http_do(const struct lt_replay_http *h, const char *path, const char *body,
                      struct lt_buf *resp, long *status, long timeout_ms, struct lt_err *err);

#endif
