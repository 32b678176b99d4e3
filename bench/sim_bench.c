/*
 * sim_bench: a small streaming client for loadtrace sim, used both as the
 * sim's benchmark and by its tests. It starts `loadtrace sim` as a child
 * process (so the sim's CPU time and memory are its own), drives it with
 * libcurl's multi interface, and reads the sim's --log afterwards to
 * compare every token's receive time with the model's emission time (both
 * on CLOCK_MONOTONIC; the log's first line gives the sim's start).
 *
 *   sim_bench LOADTRACE closed [opts]   closed loop per concurrency level;
 *                                       prints per-request decode tok/s and
 *                                       aggregate tok/s, in model time
 *   sim_bench LOADTRACE streams [opts]  N streams opened at once; prints
 *                                       chunks/s, the sim's CPU and memory
 *
 * options: --conc 1,4,16,32  --per-level K (requests per level = K x C)
 *          --streams N  --out N  --prompt N  --profile P  --time-scale X
 *          --dir DIR (scratch files)  --max-seconds S (give up after S)
 */
#include "base/lt_time.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct req {
    CURL *h;
    struct curl_slist *hdr;
    char *body;
    int64_t send, first, end;
    uint64_t seq;
    uint32_t chunks, cap;
    int64_t *rx; /* receive time of each token chunk */
    char line[512];
    size_t ll;
    bool ok;
};

struct opts {
    const char *loadtrace, *mode, *profile, *dir;
    char conc[64];
    int per_level, streams, out, prompt;
    double scale, max_seconds;
};

static int64_t mono(void)
{
    return lt_mono_now().ns;
}

static void on_line(struct req *r, const char *l, size_t n)
{
    if (n < 6 || memcmp(l, "data: ", 6))
        return;
    if (!r->seq) {
        const char *id = strstr(l, "\"id\":\"cmpl-");
        if (id)
            r->seq = strtoull(id + 11, NULL, 10);
    }
    if (!strstr(l, "\"text\":\""))
        return;
    int64_t now = mono();
    if (!r->chunks)
        r->first = now;
    if (r->chunks < r->cap)
        r->rx[r->chunks] = now;
    r->chunks++;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    struct req *r = ud;
    size_t len = sz * n;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\n') {
            r->line[r->ll < sizeof r->line ? r->ll : sizeof r->line - 1] = '\0';
            on_line(r, r->line, r->ll < sizeof r->line ? r->ll : sizeof r->line - 1);
            r->ll = 0;
        } else {
            if (r->ll < sizeof r->line - 1)
                r->line[r->ll] = p[i];
            r->ll++;
        }
    }
    return len;
}

static void req_start(CURLM *m, struct req *r, const char *url, int idx, int prompt, int out)
{
    size_t cap = (size_t)prompt * 6 + 256;
    r->body = malloc(cap);
    int k = snprintf(r->body, cap, "{\"prompt\":\"r%d", idx % 10000);
    for (int i = 1; i < prompt; i++)
        k += snprintf(r->body + k, cap - (size_t)k, " w%d", i % 100);
    snprintf(r->body + k, cap - (size_t)k,
             "\",\"max_tokens\":%d,\"ignore_eos\":true,\"stream\":true}", out);
    r->cap = (uint32_t)out;
    r->rx = malloc((size_t)out * sizeof *r->rx);
    r->h = curl_easy_init();
    r->hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(r->h, CURLOPT_URL, url);
    curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdr);
    curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->h, CURLOPT_TIMEOUT, 600L);
    r->send = mono();
    curl_multi_add_handle(m, r->h);
}

static void req_done(CURLM *m, struct req *r, CURLcode res)
{
    long code = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
    r->end = mono();
    r->ok = res == CURLE_OK && code == 200;
    curl_multi_remove_handle(m, r->h);
    curl_easy_cleanup(r->h);
    curl_slist_free_all(r->hdr);
    free(r->body);
    r->h = NULL;
    r->body = NULL;
}

/* ---- the sim as a child process ---- */

struct child {
    pid_t pid;
    char port_file[512], log_file[512], url_base[64];
};

static int spawn_sim(const struct opts *o, struct child *c)
{
    snprintf(c->port_file, sizeof c->port_file, "%s/sim_bench.port", o->dir);
    snprintf(c->log_file, sizeof c->log_file, "%s/sim_bench.log", o->dir);
    unlink(c->port_file);
    char scale[32];
    snprintf(scale, sizeof scale, "%g", o->scale);
    c->pid = fork();
    if (c->pid < 0)
        return -1;
    if (c->pid == 0) {
        execl(o->loadtrace, o->loadtrace, "sim", "--listen", "127.0.0.1:0", "--port-file",
              c->port_file, "--log", c->log_file, "--profile", o->profile, "--time-scale", scale,
              "--max-connections", "30000", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) {
        FILE *f = fopen(c->port_file, "r");
        unsigned port = 0;
        if (f) {
            int got = fscanf(f, "%u", &port);
            fclose(f);
            if (got == 1 && port) {
                snprintf(c->url_base, sizeof c->url_base, "http://127.0.0.1:%u", port);
                return 0;
            }
        }
        struct timespec ts = {0, 25000000};
        nanosleep(&ts, NULL);
    }
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    return -1;
}

static int stop_sim(struct child *c)
{
    int st = 0;
    kill(c->pid, SIGTERM);
    waitpid(c->pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* CPU seconds used by a process so far. */
static double proc_cpu(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, stt = 0;
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) == 2)
        return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
    return 0;
}

/* Resident memory of a process in kB (VmRSS). */
static long proc_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* ---- comparing receive times with the sim's log ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void timing_vs_log(const char *log_file, struct req *rs, int n)
{
    FILE *f = fopen(log_file, "r");
    if (!f) {
        printf("timing: no log\n");
        return;
    }
    int64_t start = 0;
    size_t cap = 1 << 20, nd = 0, scap = 1 << 20, ns = 0;
    int64_t *d = malloc(cap * sizeof *d), *sd = malloc(scap * sizeof *sd);
    /* seq -> request index */
    uint64_t maxseq = 0;
    for (int i = 0; i < n; i++)
        if (rs[i].seq > maxseq)
            maxseq = rs[i].seq;
    int *by_seq = calloc(maxseq + 1, sizeof *by_seq);
    for (int i = 0; i < n; i++)
        if (rs[i].seq)
            by_seq[rs[i].seq] = i + 1;
    json_error_t je;
    json_t *j;
    while ((j = json_loadf(f, JSON_DISABLE_EOF_CHECK, &je)) != NULL) {
        json_t *s0 = json_object_get(j, "start_mono_ns");
        if (s0)
            start = json_integer_value(s0);
        uint64_t seq = (uint64_t)json_integer_value(json_object_get(j, "seq"));
        json_t *tk = json_object_get(j, "tokens_us"), *sn = json_object_get(j, "sent_us");
        for (size_t i = 0; json_is_array(tk) && i < json_array_size(sn) && i < json_array_size(tk);
             i++) {
            if (ns == scap) {
                scap *= 2;
                sd = realloc(sd, scap * sizeof *sd);
            }
            sd[ns++] = (json_integer_value(json_array_get(sn, i)) -
                        json_integer_value(json_array_get(tk, i))) *
                       1000;
        }
        if (seq && seq <= maxseq && by_seq[seq] && json_is_array(tk)) {
            struct req *r = &rs[by_seq[seq] - 1];
            size_t m = json_array_size(tk);
            for (size_t i = 0; i < m && i < r->chunks && i < r->cap; i++) {
                int64_t model = start + json_integer_value(json_array_get(tk, i)) * 1000;
                if (nd == cap) {
                    cap *= 2;
                    d = realloc(d, cap * sizeof *d);
                }
                d[nd++] = r->rx[i] - model;
            }
        }
        json_decref(j);
    }
    fclose(f);
    if (nd) {
        qsort(d, nd, sizeof *d, cmp_i64);
        printf("timing: %zu token chunks, receive time - model emission time: p50 %.3f ms, "
               "p99 %.3f ms, p99.9 %.3f ms, max %.3f ms\n",
               nd, d[nd / 2] / 1e6, d[(size_t)(nd * 0.99)] / 1e6, d[(size_t)(nd * 0.999)] / 1e6,
               d[nd - 1] / 1e6);
    }
    if (ns) {
        qsort(sd, ns, sizeof *sd, cmp_i64);
        printf("timing: in the sim, written to the socket - model emission time: p50 %.3f ms, "
               "p99 %.3f ms, p99.9 %.3f ms, max %.3f ms\n",
               sd[ns / 2] / 1e6, sd[(size_t)(ns * 0.99)] / 1e6, sd[(size_t)(ns * 0.999)] / 1e6,
               sd[ns - 1] / 1e6);
    }
    free(d);
    free(sd);
    free(by_seq);
}

/* Run requests [0, total) with at most conc in flight. */
static int run_load(CURLM *m, struct req *rs, int total, int conc, const char *url,
                    const struct opts *o)
{
    int next = 0, running = 0, done = 0;
    int64_t deadline = mono() + (int64_t)(o->max_seconds * 1e9);
    while (done < total) {
        while (running < conc && next < total) {
            req_start(m, &rs[next], url, next, o->prompt, o->out);
            next++;
            running++;
        }
        int still;
        bool finished = false;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(m, &q))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct req *r;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            req_done(m, r, msg->data.result);
            running--;
            done++;
            finished = true;
        }
        if (mono() > deadline) {
            fprintf(stderr, "sim_bench: gave up after %.0f s\n", o->max_seconds);
            return -1;
        }
        /* A closed loop sends the next request at once, not after a poll. */
        if (!finished)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    return 0;
}

static int mode_closed(const struct opts *o, struct child *c)
{
    char url[128];
    snprintf(url, sizeof url, "%s/v1/completions", c->url_base);
    CURLM *m = curl_multi_init();
    int levels[16], nl = 0;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", o->conc);
    for (char *t = strtok(tmp, ","); t && nl < 16; t = strtok(NULL, ","))
        levels[nl++] = atoi(t);
    int rc = 0;
    printf("C requests per_req_decode_tok_s agg_tok_s ok (model time = real time x %g)\n",
           o->scale);
    for (int li = 0; li < nl && rc == 0; li++) {
        int conc = levels[li], total = conc * o->per_level;
        struct req *rs = calloc((size_t)total, sizeof *rs);
        rc = run_load(m, rs, total, conc, url, o);
        double sum = 0;
        int ok = 0;
        int64_t first = INT64_MAX, last = 0;
        long long toks = 0;
        for (int i = 0; i < total; i++) {
            if (!rs[i].ok || rs[i].chunks < 2)
                continue;
            ok++;
            sum += (rs[i].chunks - 1) / ((double)(rs[i].end - rs[i].first) / 1e9);
            toks += rs[i].chunks;
            if (rs[i].send < first)
                first = rs[i].send;
            if (rs[i].end > last)
                last = rs[i].end;
        }
        double pr = ok ? sum / ok / o->scale : 0;
        double agg = ok ? (double)toks / ((double)(last - first) / 1e9) / o->scale : 0;
        printf("%d %d %.1f %.1f %d\n", conc, total, pr, agg, ok);
        for (int i = 0; i < total; i++)
            free(rs[i].rx);
        free(rs);
    }
    curl_multi_cleanup(m);
    return rc;
}

static int mode_streams(const struct opts *o, struct child *c)
{
    char url[128];
    snprintf(url, sizeof url, "%s/v1/completions", c->url_base);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)o->streams + 16);
    int n = o->streams;
    struct req *rs = calloc((size_t)n, sizeof *rs);
    long rss0 = proc_rss_kb(c->pid);
    double cpu0 = proc_cpu(c->pid);
    int64_t t0 = mono();
    /* Open every stream first, then watch them; memory is read at the
     * moment the most streams are open. */
    int rc = 0, done = 0, next = 0;
    long rss_peak = rss0;
    int64_t deadline = t0 + (int64_t)(o->max_seconds * 1e9);
    int64_t last_rss = 0;
    while (done < n) {
        for (int k = 0; k < 500 && next < n; k++, next++)
            req_start(m, &rs[next], url, next, o->prompt, o->out);
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(m, &q))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct req *r;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            req_done(m, r, msg->data.result);
            done++;
        }
        if (mono() - last_rss > 200000000) {
            long kb = proc_rss_kb(c->pid);
            if (kb > rss_peak)
                rss_peak = kb;
            last_rss = mono();
        }
        if (mono() > deadline) {
            fprintf(stderr, "sim_bench: gave up after %.0f s\n", o->max_seconds);
            rc = -1;
            break;
        }
        curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    int64_t t1 = mono();
    double cpu = proc_cpu(c->pid) - cpu0;
    long long chunks = 0;
    int ok = 0;
    int64_t first_tok = INT64_MAX, last_tok = 0;
    for (int i = 0; i < n; i++) {
        chunks += rs[i].chunks;
        ok += rs[i].ok && rs[i].chunks == (uint32_t)o->out;
        if (rs[i].chunks && rs[i].first < first_tok)
            first_tok = rs[i].first;
        if (rs[i].chunks && rs[i].rx[rs[i].chunks - 1] > last_tok)
            last_tok = rs[i].rx[rs[i].chunks - 1];
    }
    double wall = (double)(t1 - t0) / 1e9, span = (double)(last_tok - first_tok) / 1e9;
    printf("streams %d ok %d tokens/stream %d chunks %lld wall %.2f s\n", n, ok, o->out, chunks,
           wall);
    printf("chunk rate %.0f chunks/s over the streaming span (%.2f s); sim CPU %.2f s "
           "= %.0f chunks per CPU-second\n",
           span > 0 ? chunks / span : 0, span, cpu, cpu > 0 ? chunks / cpu : 0);
    printf("sim memory: idle %ld kB, peak %ld kB, %.1f kB per open stream\n", rss0, rss_peak,
           n ? (double)(rss_peak - rss0) / n : 0);
    if (rc == 0)
        timing_vs_log(c->log_file, rs, n);
    for (int i = 0; i < n; i++) {
        if (rs[i].h) {
            curl_multi_remove_handle(m, rs[i].h);
            curl_easy_cleanup(rs[i].h);
            curl_slist_free_all(rs[i].hdr);
            free(rs[i].body);
        }
        free(rs[i].rx);
    }
    free(rs);
    curl_multi_cleanup(m);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {.profile = "default",
                     .dir = "/tmp",
                     .per_level = 4,
                     .streams = 1000,
                     .out = 1000,
                     .prompt = 100,
                     .scale = 1,
                     .max_seconds = 300};
    snprintf(o.conc, sizeof o.conc, "1,4,16,32");
    if (argc < 3) {
        fprintf(stderr, "usage: sim_bench LOADTRACE closed|streams [options] (see source)\n");
        return 2;
    }
    o.loadtrace = argv[1];
    o.mode = argv[2];
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--conc"))
            snprintf(o.conc, sizeof o.conc, "%s", v);
        else if (!strcmp(k, "--per-level"))
            o.per_level = atoi(v);
        else if (!strcmp(k, "--streams"))
            o.streams = atoi(v);
        else if (!strcmp(k, "--out"))
            o.out = atoi(v);
        else if (!strcmp(k, "--prompt"))
            o.prompt = atoi(v);
        else if (!strcmp(k, "--profile"))
            o.profile = v;
        else if (!strcmp(k, "--time-scale"))
            o.scale = atof(v);
        else if (!strcmp(k, "--dir"))
            o.dir = v;
        else if (!strcmp(k, "--max-seconds"))
            o.max_seconds = atof(v);
        else {
            fprintf(stderr, "sim_bench: unknown option %s\n", k);
            return 2;
        }
    }
    if (o.out < 1 || o.prompt < 1 || o.per_level < 1 || o.streams < 1 || o.scale <= 0) {
        fprintf(stderr, "sim_bench: bad option value\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct child c;
    if (spawn_sim(&o, &c) < 0) {
        fprintf(stderr, "sim_bench: could not start %s sim\n", o.loadtrace);
        return 1;
    }
    int rc = !strcmp(o.mode, "closed") ? mode_closed(&o, &c) : mode_streams(&o, &c);
    if (stop_sim(&c) < 0) {
        fprintf(stderr, "sim_bench: the sim did not exit cleanly\n");
        rc = -1;
    }
    curl_global_cleanup();
    return rc < 0 ? 1 : 0;
}
