/*
 * The sweep's loop: each config in turn, from its server's start to its
 * stop, with DIR/sweep.json written after every step so that a rerun
 * knows what is complete and a reader knows what ran, how and against
 * what. Each load is the loadtrace program run as a child (sweep.h says
 * why).
 */
#define _DEFAULT_SOURCE
#include "experiments/sweep_internal.h"

#include "base/lt_path.h"
#include "sim/sim_profile.h"

#include <errno.h>
#include <stdarg.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct run {
    const struct lt_sweep_plan *p;
    const struct lt_sweep_opts *o;
    json_t *state; /* the object written to sweep.json */
    json_t *configs;
    char path[1100];
    size_t cur; /* the config running */
};

static void progress(const struct run *r, enum lt_sweep_step step, enum lt_sweep_status st,
                     const char *why, const char *rlog)
{
    if (!r->o->on_progress)
        return;
    struct lt_sweep_progress p = {.index = r->cur,
                                  .n = r->p->n_configs,
                                  .config = r->p->configs[r->cur].name,
                                  .step = step,
                                  .status = st,
                                  .why = why ? why : "",
                                  .replay_log = rlog};
    r->o->on_progress(r->o->progress_ud, &p);
}

static void say(const struct run *r, const char *cfg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const struct run *r, const char *cfg, const char *fmt, ...)
{
    if (!r->o->on_event)
        return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->o->on_event(r->o->ud, cfg, msg);
}

static void file_in(char *out, size_t cap, const char *dir, const char *name, const char *ext)
{
    snprintf(out, cap, "%s/%s%s", dir, name, ext);
}

/* What decides whether earlier results still answer this plan: the
 * config's definition, the trace and the load. */
static json_t *fingerprint(const struct lt_sweep_plan *p, const struct lt_sweep_config *k)
{
    json_t *f = json_object();
    json_object_set_new(f, "kind", json_integer(k->kind));
    json_object_set_new(f, "command", json_string(k->command ? k->command : ""));
    json_object_set_new(f, "url", json_string(k->url));
    json_object_set_new(f, "profile", json_string(k->profile));
    json_t *l = json_array();
    for (size_t i = 0; i < k->n_env; i++)
        json_array_append_new(l, json_string(k->env[i]));
    for (size_t i = 0; i < k->n_set; i++)
        json_array_append_new(l, json_string(k->set[i]));
    for (size_t i = 0; i < p->n_load_args; i++)
        json_array_append_new(l, json_string(p->load_args[i]));
    json_object_set_new(f, "args", l);
    json_object_set_new(f, "trace", json_string(p->trace));
    json_object_set_new(f, "warmup", json_integer(p->warmup));
    json_object_set_new(f, "reset_cache", json_boolean(p->reset_cache));
    json_object_set_new(f, "time_scale", json_real(k->time_scale));
    return f;
}

static int save(struct run *r, struct lt_err *err)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp", r->path);
    if (json_dump_file(r->state, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0 ||
        rename(tmp, r->path) < 0)
        return lt_errset(err, LT_EIO, "cannot write %s: %s", r->path, strerror(errno));
    return 0;
}

static void set_str(json_t *o, const char *k, const char *v)
{
    json_object_set_new(o, k, json_string(v));
}

/* What the server says of itself: each answer as JSON when it is JSON. */
static void ask_server(const char *url, json_t *e)
{
    static const char *const paths[] = {"/v1/models", "/props", "/version", "/health"};
    json_t *srv = json_object();
    char *buf = malloc(65536);
    for (size_t i = 0; buf && i < sizeof paths / sizeof paths[0]; i++) {
        char u[512];
        long st = 0;
        snprintf(u, sizeof u, "%s%s", url, paths[i]);
        if (lt__sweep_http(u, NULL, 2000000, &st, buf, 65536) < 0 || st / 100 != 2)
            continue;
        json_t *v = json_loads(buf, JSON_DECODE_ANY, NULL);
        json_object_set_new(srv, paths[i] + 1, v ? v : json_string(buf));
    }
    free(buf);
    json_object_set_new(e, "server", srv);
}

/* Run one child of the loadtrace program to its end, watching the server
 * (s may be NULL) and the stop flag: either stops the child (SIGINT, which
 * replay answers by closing its results file whole). *why_stop: 0 ran to
 * its end, 1 the server exited, 2 the user stopped. Returns its exit code
 * (128 + signal when killed) or a negative LT_E* code. */
static int run_child(struct run *r, char **argv, const char *log, struct lt__sweep_server *s,
                     int *why_stop, struct lt_err *err)
{
    pid_t pid;
    int rc = lt__sweep_child_start(r->o->exe, argv, log, &pid, err);
    if (rc < 0)
        return rc;
    *why_stop = 0;
    int st = 0;
    int64_t sent_at = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (!*why_stop && s && lt__sweep_server_exited(s))
            *why_stop = 1;
        if (!*why_stop && r->o->stop && *r->o->stop)
            *why_stop = 2;
        if (*why_stop && !sent_at) {
            kill(-pid, SIGINT);
            sent_at = lt__sweep_now_us();
        } else if (sent_at && lt__sweep_now_us() - sent_at > 30000000) {
            kill(-pid, SIGKILL); /* it did not close in 30 s: it is not coming back */
            sent_at = INT64_MAX / 2;
        }
        lt__sweep_nap(20);
    }
    if (!*why_stop && s && lt__sweep_server_exited(s))
        *why_stop = 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A virtual config's profile: its base with the overrides, written to DIR
 * (the file the replay reads, and the record of what was predicted). */
static int write_profile(struct run *r, const struct lt_sweep_config *k, const char *path,
                         struct lt_err *err)
{
    struct lt_sim_profile prof;
    int rc = lt_sim_profile_load(&prof, k->profile, err);
    for (size_t i = 0; rc >= 0 && i < k->n_set; i++) {
        char key[64];
        const char *eq = strchr(k->set[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - k->set[i]), k->set[i]);
        rc = lt_sim_profile_set(&prof, key, eq + 1, err);
    }
    if (rc >= 0)
        rc = lt_sim_profile_check(&prof, err);
    if (rc < 0)
        return lt_errf(err, LT_EUSAGE, "config %s (plan line %d)", k->name, k->line);
    if (k->time_scale > 0) /* what a sim at --time-scale X serves */
        lt_sim_profile_scale(&prof, k->time_scale);
    char note[600];
    lt__sweep_fmt(note, sizeof note, "loadtrace sweep: config %s: profile %s, time scale %g",
                  k->name, k->profile, k->time_scale > 0 ? k->time_scale : 1.0);
    (void)r;
    return lt_sim_profile_save(&prof, path, note, err);
}

struct argv_b {
    char *v[LT_SWEEP_ARGS_MAX + 24];
    size_t n;
};
static void push(struct argv_b *a, const char *s)
{
    if (a->n + 1 < sizeof a->v / sizeof a->v[0])
        a->v[a->n++] = (char *)s;
    a->v[a->n] = NULL;
}

static void json_argv(json_t *e, const char *key, const struct argv_b *a)
{
    json_t *l = json_array();
    for (size_t i = 0; i < a->n; i++)
        json_array_append_new(l, json_string(a->v[i]));
    json_object_set_new(e, key, l);
}

/* The config's load, after warm-up and the cache reset: the outcome. */
static enum lt_sweep_status load(struct run *r, const struct lt_sweep_config *k, const char *target,
                                 const char *profile, struct lt__sweep_server *s, json_t *e,
                                 char *why, size_t why_cap)
{
    const char *dir = r->o->dir;
    char res[1100], rlog[1100], warm[1100], url[600];
    file_in(res, sizeof res, dir, k->name, ".lt.zst");
    file_in(rlog, sizeof rlog, dir, k->name, ".replay.log");
    file_in(warm, sizeof warm, dir, k->name, ".warmup.lt.zst");
    set_str(e, "results", res);
    set_str(e, "replay_log", rlog);
    struct lt_err err = {0};
    int stop = 0, rc;
    if (r->p->warmup && k->kind != LT_SWEEP_VIRTUAL) {
        char n[16];
        snprintf(n, sizeof n, "%u", r->p->warmup);
        struct argv_b a = {0};
        push(&a, "loadtrace"), push(&a, "replay"), push(&a, r->p->trace), push(&a, "--target");
        push(&a, target), push(&a, "--concurrency"), push(&a, "1"), push(&a, "--requests");
        push(&a, n), push(&a, "-q"), push(&a, "-o"), push(&a, warm);
        say(r, k->name, "warming up: %u requests", r->p->warmup);
        progress(r, LT_SWEEP_STEP_WARMUP, LT_SWEEP_PENDING, NULL, rlog);
        rc = run_child(r, a.v, rlog, s, &stop, &err);
        json_object_set_new(e, "warmup_exit", json_integer(rc));
        if (rc < 0 || stop) {
            lt__sweep_fmt(why, why_cap, "%s during the warm-up; see %s",
                          rc < 0      ? err.msg
                          : stop == 1 ? "the server exited"
                                      : "stopped",
                          rlog);
            return stop == 2 ? LT_SWEEP_INTERRUPTED : LT_SWEEP_FAILED;
        }
    }
    if (r->p->reset_cache && k->kind != LT_SWEEP_VIRTUAL) {
        long st = 0;
        snprintf(url, sizeof url, "%s/reset_prefix_cache", target);
        lt__sweep_http(url, "", 5000000, &st, NULL, 0);
        set_str(e, "cache",
                st / 100 == 2 ? "reset (POST /reset_prefix_cache)"
                              : "not reset: the server has no POST /reset_prefix_cache");
    } else
        set_str(e, "cache",
                k->kind == LT_SWEEP_VIRTUAL ? "the model's, empty at the start"
                                            : "as the warm-up left it");
    struct argv_b a = {0};
    push(&a, "loadtrace"), push(&a, "replay"), push(&a, r->p->trace), push(&a, "--target");
    push(&a, target);
    if (profile)
        push(&a, "--virtual"), push(&a, "--sim-profile"), push(&a, profile);
    for (size_t i = 0; i < r->p->n_load_args; i++)
        push(&a, r->p->load_args[i]);
    for (size_t i = 0; i < r->o->n_load_extra; i++)
        push(&a, r->o->load_extra[i]);
    push(&a, "-o"), push(&a, res);
    json_argv(e, "replay", &a);
    say(r, k->name, "running the load (replay's output: %s)", rlog);
    remove(res);
    progress(r, LT_SWEEP_STEP_LOAD, LT_SWEEP_PENDING, NULL, rlog);
    rc = run_child(r, a.v, rlog, s, &stop, &err);
    json_object_set_new(e, "replay_exit", json_integer(rc));
    struct stat sb;
    bool have = stat(res, &sb) == 0;
    if (rc < 0) {
        lt__sweep_fmt(why, why_cap, "%s", err.msg);
        return LT_SWEEP_FAILED;
    }
    if (stop == 2) {
        lt__sweep_fmt(why, why_cap, "stopped by the user during the load%s",
                      have ? " (the results so far are kept)" : "");
        return LT_SWEEP_INTERRUPTED;
    }
    if (stop == 1) {
        lt__sweep_fmt(why, why_cap, "the server exited (status %d) during the load; its log %s; %s",
                      s->status, json_string_value(json_object_get(e, "log")),
                      have ? "the results so far are kept" : "no results were written");
        return have ? LT_SWEEP_PARTIAL : LT_SWEEP_FAILED;
    }
    if (!have || rc == 2 || (rc != 0 && rc != 1 && rc != 3)) {
        lt__sweep_fmt(why, why_cap, "replay exited with status %d%s; see %s", rc,
                      rc == 2 ? " (it refused the plan's load options)" : "", rlog);
        return have ? LT_SWEEP_PARTIAL : LT_SWEEP_FAILED;
    }
    return LT_SWEEP_COMPLETE;
}

/* One config: start, ready, ask, load, stop. */
static enum lt_sweep_status one(struct run *r, const struct lt_sweep_config *k, json_t *e,
                                char *why, size_t why_cap)
{
    const char *dir = r->o->dir;
    char log[1100], cmd[8192], prof[1100];
    file_in(log, sizeof log, dir, k->name, ".log");
    struct lt_err err = {0};
    struct lt__sweep_server s = {0};
    enum lt_sweep_status st;
    if (k->kind == LT_SWEEP_VIRTUAL) {
        file_in(prof, sizeof prof, dir, k->name, ".profile");
        if (write_profile(r, k, prof, &err) < 0) {
            lt__sweep_fmt(why, why_cap, "%s", err.msg);
            return LT_SWEEP_FAILED;
        }
        set_str(e, "profile_file", prof);
        say(r, k->name, "predicting in virtual time (profile %s)", prof);
        return load(r, k, "sim", prof, NULL, e, why, why_cap);
    }
    if (k->kind == LT_SWEEP_RUNNING) {
        say(r, k->name, "using the server at %s", k->url);
        if (lt__sweep_wait_ready(k->url, k, NULL, NULL, r->o->stop, &err) < 0) {
            lt__sweep_fmt(why, why_cap, "%s", err.msg);
            return r->o->stop && *r->o->stop ? LT_SWEEP_INTERRUPTED : LT_SWEEP_FAILED;
        }
        ask_server(k->url, e);
        return load(r, k, k->url, NULL, NULL, e, why, why_cap);
    }
    uint16_t port = k->port;
    if (port && lt__sweep_port_busy(port)) {
        lt__sweep_fmt(why, why_cap,
                      "port %u is in use: another process listens there, so the server was not "
                      "started (and nothing was sent to what listens)",
                      port);
        return LT_SWEEP_FAILED;
    }
    if (!port && lt__sweep_free_port(&port, &err) < 0) {
        lt__sweep_fmt(why, why_cap, "%s", err.msg);
        return LT_SWEEP_FAILED;
    }
    set_str(e, "log", log);
    if (lt__sweep_server_start(k, r->o->exe, port, log, cmd, sizeof cmd, &s, &err) < 0) {
        lt__sweep_fmt(why, why_cap, "%s", err.msg);
        return LT_SWEEP_FAILED;
    }
    set_str(e, "command_run", cmd);
    json_object_set_new(e, "port", json_integer(port));
    json_object_set_new(e, "pgid", json_integer(s.pid));
    set_str(e, "status", "running");
    struct lt_err serr = {0};
    save(r, &serr);
    say(r, k->name, "started on port %u (process group %d); waiting for %s and /v1/models", port,
        (int)s.pid, k->health);
    if (lt__sweep_wait_ready(s.url, k, &s, log, r->o->stop, &err) < 0) {
        lt__sweep_fmt(why, why_cap, "%s", err.msg);
        st = r->o->stop && *r->o->stop ? LT_SWEEP_INTERRUPTED : LT_SWEEP_FAILED;
    } else {
        ask_server(s.url, e);
        st = load(r, k, s.url, NULL, &s, e, why, why_cap);
    }
    lt__sweep_server_stop(&s, k->stop_timeout_us);
    set_str(e, "stopped", s.stopped);
    say(r, k->name, "server %s", s.stopped);
    json_object_del(e, "pgid");
    return st;
}

static bool same(json_t *a, json_t *b)
{
    return a && b && json_equal(a, b);
}

/* No file the sweep writes may be its trace or its plan. */
static int not_inputs(const struct lt_sweep_plan *p, const char *dir, struct lt_err *err)
{
    static const char *const exts[] = {".lt.zst", ".log", ".replay.log", ".warmup.lt.zst",
                                       ".profile"};
    static const char *const fixed[] = {"sweep.json", "report.txt", "report.json", "report.html"};
    const char *inputs[2] = {p->trace, p->path};
    char path[1200];
    for (size_t i = 0; i < p->n_configs; i++)
        for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
            file_in(path, sizeof path, dir, p->configs[i].name, exts[e]);
            if (lt_path_not_input(path, inputs, 2, err) < 0)
                return lt_errf(err, LT_EUSAGE, "config %s (plan line %d)", p->configs[i].name,
                               p->configs[i].line);
        }
    for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, fixed[f]);
        if (lt_path_not_input(path, inputs, 2, err) < 0)
            return lt_errf(err, LT_EUSAGE, "-o %s", dir);
    }
    return 0;
}

int lt_sweep_run(const struct lt_sweep_plan *p, const struct lt_sweep_opts *o,
                 struct lt_sweep_outcome *out, struct lt_err *err)
{
    if (not_inputs(p, o->dir, err) < 0)
        return err->code;
    if (mkdir(o->dir, 0755) < 0 && errno != EEXIST)
        return lt_errset(err, LT_EIO, "cannot create %s: %s", o->dir, strerror(errno));
    struct run r = {.p = p, .o = o};
    snprintf(r.path, sizeof r.path, "%s/sweep.json", o->dir);
    json_t *old = json_load_file(r.path, 0, NULL);
    json_t *old_cfg = old ? json_object_get(old, "configs") : NULL;
    r.state = json_object();
    set_str(r.state, "schema", "loadtrace-sweep/1");
    set_str(r.state, "plan", p->path);
    set_str(r.state, "trace", p->trace);
    set_str(r.state, "baseline", p->baseline);
    r.configs = json_object();
    json_object_set_new(r.state, "configs", r.configs);
    json_t *order = json_array();
    json_object_set_new(r.state, "order", order);
    for (size_t i = 0; i < p->n_configs; i++) {
        const struct lt_sweep_config *k = &p->configs[i];
        json_t *prev = old_cfg ? json_object_get(old_cfg, k->name) : NULL;
        json_t *e = prev ? json_deep_copy(prev) : json_object();
        json_array_append_new(order, json_string(k->name));
        json_object_set_new(r.configs, k->name, e);
        out[i].status = LT_SWEEP_PENDING;
        out[i].why[0] = '\0';
        const char *pst = prev ? json_string_value(json_object_get(prev, "status")) : NULL;
        if (pst && !strcmp(pst, "running"))
            say(&r, k->name,
                "was running when an earlier sweep was killed: its server (process group %d) "
                "may still be running; it is run again",
                (int)json_integer_value(json_object_get(prev, "pgid")));
    }
    json_decref(old);
    int rc = save(&r, err);
    for (size_t i = 0; rc >= 0 && i < p->n_configs; i++) {
        const struct lt_sweep_config *k = &p->configs[i];
        json_t *e = json_object_get(r.configs, k->name);
        json_t *fp = fingerprint(p, k);
        const char *pst = json_string_value(json_object_get(e, "status"));
        const char *res = json_string_value(json_object_get(e, "results"));
        struct stat sb;
        if (!o->redo && pst && !strcmp(pst, "complete") && same(json_object_get(e, "plan"), fp) &&
            res && stat(res, &sb) == 0) {
            out[i].status = LT_SWEEP_SKIPPED;
            say(&r, k->name, "complete from an earlier sweep: skipped");
            r.cur = i;
            progress(&r, LT_SWEEP_STEP_END, LT_SWEEP_SKIPPED, NULL, NULL);
            json_decref(fp);
            continue;
        }
        if (o->stop && *o->stop) {
            json_decref(fp);
            break;
        }
        json_object_clear(e);
        json_object_set_new(e, "plan", fp);
        set_str(e, "kind",
                k->kind == LT_SWEEP_LAUNCH    ? "launch"
                : k->kind == LT_SWEEP_RUNNING ? "running"
                                              : "virtual");
        set_str(e, "measured", k->kind == LT_SWEEP_VIRTUAL ? "predicted" : "measured");
        set_str(e, "params", k->params);
        if (k->command)
            set_str(e, "command", k->command);
        if (k->url[0])
            set_str(e, "url", k->url);
        json_object_set_new(e, "plan_line", json_integer(k->line));
        time_t now = time(NULL);
        char ts[40];
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        set_str(e, "started_at", ts);
        r.cur = i;
        progress(&r, LT_SWEEP_STEP_BEGIN, LT_SWEEP_PENDING, NULL, NULL);
        out[i].status = one(&r, k, e, out[i].why, sizeof out[i].why);
        progress(&r, LT_SWEEP_STEP_END, out[i].status, out[i].why, NULL);
        now = time(NULL);
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        set_str(e, "ended_at", ts);
        set_str(e, "status", lt_sweep_status_name(out[i].status));
        if (out[i].why[0])
            set_str(e, "why", out[i].why);
        say(&r, k->name, "%s%s%s", lt_sweep_status_name(out[i].status), out[i].why[0] ? ": " : "",
            out[i].why);
        rc = save(&r, err);
        if (out[i].status == LT_SWEEP_INTERRUPTED)
            break;
    }
    json_decref(r.state);
    if (rc < 0)
        return rc;
    return o->stop && *o->stop ? 1 : 0;
}
