/*
 * The sweep's plan: a YAML file read with libyaml's document API (every
 * node keeps its line, so every error names one), checked, and its grids
 * expanded into one config per point. docs/sweep.md lists every key.
 */
#include "experiments/sweep.h"

#include "base/lt_dur.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct pctx {
    yaml_document_t doc;
    const char *path;
    struct lt_err *err;
};

static int perr(struct pctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Where s stands in the NULL-ended list keys: its index, or that of the
 * NULL when it is none of them. */
static size_t key_index(const char *const *keys, const char *s)
{
    size_t i = 0;
    while (keys[i] && strcmp(keys[i], s))
        i++;
    return i;
}

static int perr(struct pctx *c, const yaml_node_t *n, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return lt_errset(c->err, LT_EUSAGE, "%s:%lu: %s", c->path,
                     n ? (unsigned long)n->start_mark.line + 1 : 1UL, what);
}

static yaml_node_t *node(struct pctx *c, int id)
{
    return yaml_document_get_node(&c->doc, id);
}

/* The text of a scalar node, or NULL (and an error) for a list or a map. */
static const char *scalar(struct pctx *c, yaml_node_t *n, const char *key)
{
    if (!n || n->type != YAML_SCALAR_NODE) {
        perr(c, n, "'%s' wants a single value", key);
        return NULL;
    }
    return (const char *)n->data.scalar.value;
}

static int copy_to(struct pctx *c, yaml_node_t *n, const char *key, char *dst, size_t cap)
{
    const char *v = scalar(c, n, key);
    if (!v)
        return LT_EUSAGE;
    if (strlen(v) >= cap)
        return perr(c, n, "the value of '%s' is too long", key);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int dur_of(struct pctx *c, yaml_node_t *n, const char *key, int64_t *us)
{
    const char *v = scalar(c, n, key);
    if (!v)
        return LT_EUSAGE;
    struct lt_err e = {0};
    if (lt_dur_parse(v, 1000000, us, &e) < 0 || *us <= 0)
        return perr(c, n, "'%s' wants a duration such as 30s or 500ms", key);
    return 0;
}

static int add_arg(struct lt_sweep_plan *p, struct pctx *c, yaml_node_t *n, const char *a)
{
    if (p->n_load_args == LT_SWEEP_ARGS_MAX)
        return perr(c, n, "too many load options (at most %s)", "48");
    if (!(p->load_args[p->n_load_args] = strdup(a)))
        return lt_errset(c->err, LT_ENOMEM, "out of memory");
    p->n_load_args++;
    return 0;
}

/* A list of scalars as "a,b,c" (a scalar alone is a list of one). */
static int list_text(struct pctx *c, yaml_node_t *n, const char *key, char *dst, size_t cap)
{
    if (n->type == YAML_SCALAR_NODE)
        return copy_to(c, n, key, dst, cap);
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(c, n, "'%s' wants a list", key);
    size_t len = 0;
    dst[0] = '\0';
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
        const char *v = scalar(c, node(c, *i), key);
        if (!v)
            return LT_EUSAGE;
        int w = snprintf(dst + len, cap - len, "%s%s", len ? "," : "", v);
        if (w < 0 || (size_t)w >= cap - len)
            return perr(c, n, "the list of '%s' is too long", key);
        len += (size_t)w;
    }
    if (!len)
        return perr(c, n, "'%s' is an empty list", key);
    return 0;
}

/* Replay's options the load section may give, each `--KEY VALUE`. */
static const char *const load_keys[] = {
    "find-max", "slo",      "attain",   "max-probes",      "max-time", "precision",   "rate",
    "speed",    "arrivals", "duration", "max-concurrency", "requests", "concurrency", "window",
    "max-gap",  "spread",   NULL,
};

static int parse_load(struct lt_sweep_plan *p, struct pctx *c, yaml_node_t *n)
{
    if (n->type != YAML_MAPPING_NODE)
        return perr(c, n, "'%s' wants a map of replay's load options", "load");
    bool fixed = false, closed = false;
    yaml_node_t *fm = NULL;
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++) {
        yaml_node_t *k = node(c, q->key), *v = node(c, q->value);
        const char *key = scalar(c, k, "load");
        if (!key)
            return LT_EUSAGE;
        size_t i = key_index(load_keys, key);
        if (!load_keys[i])
            return perr(c, k, "unknown load option '%s' (docs/sweep.md lists them)", key);
        char val[256], opt[40];
        int rc = list_text(c, v, key, val, sizeof val);
        if (rc < 0)
            return rc;
        if (strchr(val, ',') && strcmp(key, "concurrency") && strcmp(key, "slo") &&
            strcmp(key, "window") && strcmp(key, "arrivals"))
            return perr(c, v, "'%s' wants one value, not a list", key);
        if (!strcmp(key, "slo")) {
            snprintf(p->slo, sizeof p->slo, "%s", val);
            continue; /* replay takes it only with find-max: added below */
        }
        if (!strcmp(key, "find-max")) {
            if (strcmp(val, "rate") && strcmp(val, "concurrency"))
                return perr(c, v, "find-max is 'rate' or 'concurrency', not '%s'", val);
            snprintf(p->axis, sizeof p->axis, "%s", val);
            fm = k;
        } else if (!strcmp(key, "concurrency"))
            closed = true;
        else if (!strcmp(key, "rate") || !strcmp(key, "speed"))
            fixed = true;
        snprintf(opt, sizeof opt, "--%s", key);
        if ((rc = add_arg(p, c, k, opt)) < 0 || (rc = add_arg(p, c, v, val)) < 0)
            return rc;
    }
    if (fm && (fixed || closed))
        return perr(c, fm, "find-max chooses the load itself: drop %s",
                    closed ? "concurrency" : "rate and speed");
    if (fm && !p->slo[0])
        return perr(c, fm, "find-max needs an slo (e.g. %s)", "slo: ttft=1s,tpot=50ms");
    if (fixed && closed)
        return perr(c, n, "a load is %s, not both",
                    "a closed loop (concurrency) or an open one (rate)");
    p->load = fm ? LT_SWEEP_FINDMAX : closed ? LT_SWEEP_CLOSED : LT_SWEEP_FIXED;
    if (fm) {
        int rc = add_arg(p, c, fm, "--slo");
        if (rc < 0 || (rc = add_arg(p, c, fm, p->slo)) < 0)
            return rc;
    }
    return 0;
}

/* One grid: names and the values of each, in the plan's order. */
#define GRID_MAX 8
#define GRID_VALUES 32
struct grid {
    size_t n;
    const char *name[GRID_MAX];
    const char *val[GRID_MAX][GRID_VALUES];
    size_t n_val[GRID_MAX];
};

static int parse_grid(struct pctx *c, yaml_node_t *n, struct grid *g)
{
    if (n->type != YAML_MAPPING_NODE)
        return perr(c, n, "'%s' wants a map of parameter: [values]", "grid");
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++) {
        yaml_node_t *k = node(c, q->key), *v = node(c, q->value);
        if (g->n == GRID_MAX)
            return perr(c, k, "a grid has at most %s parameters", "8");
        const char *name = scalar(c, k, "grid");
        if (!name)
            return LT_EUSAGE;
        if (!strcmp(name, "port") || !strcmp(name, "loadtrace"))
            return perr(c, k, "'%s' is filled in by the sweep, not a grid parameter", name);
        g->name[g->n] = name;
        if (v->type == YAML_SCALAR_NODE) {
            g->val[g->n][0] = (const char *)v->data.scalar.value;
            g->n_val[g->n] = 1;
        } else if (v->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
                 i++) {
                if (g->n_val[g->n] == GRID_VALUES)
                    return perr(c, v, "a parameter has at most %s values", "32");
                const char *s = scalar(c, node(c, *i), name);
                if (!s)
                    return LT_EUSAGE;
                g->val[g->n][g->n_val[g->n]++] = s;
            }
            if (!g->n_val[g->n])
                return perr(c, v, "grid parameter '%s' has no values", name);
        } else
            return perr(c, v, "grid parameter '%s' wants a list of values", name);
        g->n++;
    }
    return 0;
}

/* in with every {param} of the point replaced; {port} and {loadtrace} are
 * kept for the launch. NULL (and err) on an unknown placeholder. */
static char *expand(struct pctx *c, yaml_node_t *at, const char *in, const struct grid *g,
                    const size_t *pt)
{
    size_t cap = strlen(in) * 2 + 256, len = 0;
    char *out = malloc(cap);
    if (!out) {
        lt_errset(c->err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    for (const char *s = in; *s;) {
        const char *e = *s == '{' ? strchr(s, '}') : NULL;
        const char *rep = NULL;
        size_t rl = 1;
        if (e) {
            size_t nl = (size_t)(e - s - 1);
            for (size_t i = 0; i < g->n && !rep; i++)
                if (strlen(g->name[i]) == nl && !strncmp(g->name[i], s + 1, nl))
                    rep = g->val[i][pt[i]];
            if (!rep && !((nl == 4 && !strncmp(s + 1, "port", 4)) ||
                          (nl == 9 && !strncmp(s + 1, "loadtrace", 9)))) {
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int)(nl < 60 ? nl : 60), s + 1);
                perr(c, at, "'{%s}' is no grid parameter (nor {port} or {loadtrace})", name);
                free(out);
                return NULL;
            }
            rl = rep ? (size_t)(e - s + 1) : 1;
        }
        const char *src = rep ? rep : s;
        size_t sl = rep ? strlen(rep) : 1;
        if (len + sl + 1 > cap) {
            cap = (len + sl + 1) * 2;
            char *t = realloc(out, cap);
            if (!t) {
                free(out);
                lt_errset(c->err, LT_ENOMEM, "out of memory");
                return NULL;
            }
            out = t;
        }
        memcpy(out + len, src, sl);
        len += sl;
        s += rl;
    }
    out[len] = '\0';
    return out;
}

static bool name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            return false;
    return true;
}

/* KEY: VALUE pairs of a map as "KEY=VALUE" strings, values expanded. */
static int pairs(struct pctx *c, yaml_node_t *n, const char *what, const struct grid *g,
                 const size_t *pt, char ***out, size_t *n_out)
{
    if (n->type != YAML_MAPPING_NODE)
        return perr(c, n, "'%s' wants a map of KEY: VALUE", what);
    size_t m = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (!(*out = calloc(m + 1, sizeof **out)))
        return lt_errset(c->err, LT_ENOMEM, "out of memory");
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++) {
        const char *k = scalar(c, node(c, q->key), what);
        const char *v = k ? scalar(c, node(c, q->value), k) : NULL;
        if (!v)
            return LT_EUSAGE;
        char *ev = expand(c, node(c, q->value), v, g, pt);
        if (!ev)
            return c->err->code;
        size_t l = strlen(k) + strlen(ev) + 2;
        char *kv = malloc(l);
        if (!kv) {
            free(ev);
            return lt_errset(c->err, LT_ENOMEM, "out of memory");
        }
        snprintf(kv, l, "%s=%s", k, ev);
        free(ev);
        (*out)[(*n_out)++] = kv;
    }
    return 0;
}

static yaml_node_t *get(struct pctx *c, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < map->data.mapping.pairs.top;
         q++) {
        yaml_node_t *k = node(c, q->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
            return node(c, q->value);
    }
    return NULL;
}

static const char *const config_keys[] = {
    "name",          "command",      "grid", "env",     "port", "ready",
    "start-timeout", "stop-timeout", "url",  "virtual", NULL,
};

static int check_keys(struct pctx *c, yaml_node_t *map, const char *const *keys, const char *what)
{
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < map->data.mapping.pairs.top;
         q++) {
        yaml_node_t *k = node(c, q->key);
        const char *s = scalar(c, k, what);
        if (!s)
            return LT_EUSAGE;
        size_t i = key_index(keys, s);
        if (!keys[i])
            return perr(c, k, "unknown key '%s' (docs/sweep.md lists them)", s);
    }
    return 0;
}

/* What k is: a command, a server running, or a virtual profile. */
static int config_kind(struct pctx *c, yaml_node_t *m, struct lt_sweep_config *k,
                       const struct grid *g, const size_t *pt)
{
    yaml_node_t *cmd = get(c, m, "command"), *url = get(c, m, "url"), *virt = get(c, m, "virtual");
    if ((cmd != NULL) + (url != NULL) + (virt != NULL) != 1)
        return perr(c, m, "config '%s' wants one of command, url or virtual", k->name);
    yaml_node_t *v;
    int rc;
    if (cmd) {
        k->kind = LT_SWEEP_LAUNCH;
        const char *s = scalar(c, cmd, "command");
        if (!s)
            return LT_EUSAGE;
        if (!strstr(s, "{port}") && !get(c, m, "port"))
            return perr(c, cmd, "the command must listen on {port} (or the config name a %s)",
                        "port");
        if (!(k->command = expand(c, cmd, s, g, pt)))
            return c->err->code;
    } else if (url) {
        k->kind = LT_SWEEP_RUNNING;
        if ((rc = copy_to(c, url, "url", k->url, sizeof k->url)) < 0)
            return rc;
        if (strncmp(k->url, "http://", 7) && strncmp(k->url, "https://", 8))
            return perr(c, url, "url '%s' is not http:// or https://", k->url);
    } else {
        k->kind = LT_SWEEP_VIRTUAL;
        if (virt->type != YAML_MAPPING_NODE)
            return perr(c, virt, "'%s' wants a map: profile, set", "virtual");
        static const char *const vkeys[] = {"profile", "set", "time-scale", NULL};
        if ((rc = check_keys(c, virt, vkeys, "virtual")) < 0)
            return rc;
        snprintf(k->profile, sizeof k->profile, "default");
        if ((v = get(c, virt, "profile"))) {
            char *e = NULL;
            const char *s = scalar(c, v, "profile");
            if (!s || !(e = expand(c, v, s, g, pt)))
                return c->err->code ? c->err->code : LT_EUSAGE;
            snprintf(k->profile, sizeof k->profile, "%s", e);
            free(e);
        }
        if ((v = get(c, virt, "set")) && (rc = pairs(c, v, "set", g, pt, &k->set, &k->n_set)) < 0)
            return rc;
        if ((v = get(c, virt, "time-scale"))) {
            const char *s = scalar(c, v, "time-scale");
            char *end = NULL;
            k->time_scale = s ? strtod(s, &end) : 0;
            if (!s || *end || !(k->time_scale > 0 && k->time_scale < 1e6))
                return perr(c, v, "time-scale wants a number above 0, got '%s'", s ? s : "");
        }
    }
    return 0;
}

/* How k's server is started, checked and stopped. */
static int config_lifecycle(struct pctx *c, yaml_node_t *m, struct lt_sweep_config *k,
                            const struct grid *g, const size_t *pt)
{
    yaml_node_t *v;
    int rc;
    if ((v = get(c, m, "env")) && (rc = pairs(c, v, "env", g, pt, &k->env, &k->n_env)) < 0)
        return rc;
    if ((v = get(c, m, "port"))) {
        const char *s = scalar(c, v, "port");
        char *end = NULL;
        long port = s ? strtol(s, &end, 10) : 0;
        if (!s || *end || port < 1 || port > 65535)
            return perr(c, v, "port wants 1 to 65535, got '%s'", s ? s : "");
        k->port = (uint16_t)port;
    }
    if ((v = get(c, m, "ready"))) {
        if (v->type != YAML_MAPPING_NODE)
            return perr(c, v, "'%s' wants a map: path, timeout", "ready");
        static const char *const rkeys[] = {"path", "timeout", NULL};
        yaml_node_t *x;
        if ((rc = check_keys(c, v, rkeys, "ready")) < 0)
            return rc;
        if ((x = get(c, v, "path")) &&
            (rc = copy_to(c, x, "path", k->health, sizeof k->health)) < 0)
            return rc;
        if (k->health[0] != '/')
            return perr(c, x, "the readiness path must start with '/', got '%s'", k->health);
        if ((x = get(c, v, "timeout")) && (rc = dur_of(c, x, "timeout", &k->probe_timeout_us)) < 0)
            return rc;
    }
    if ((v = get(c, m, "start-timeout")) &&
        (rc = dur_of(c, v, "start-timeout", &k->start_timeout_us)) < 0)
        return rc;
    if ((v = get(c, m, "stop-timeout")) &&
        (rc = dur_of(c, v, "stop-timeout", &k->stop_timeout_us)) < 0)
        return rc;
    if (k->kind != LT_SWEEP_LAUNCH && (get(c, m, "env") || get(c, m, "port") ||
                                       get(c, m, "start-timeout") || get(c, m, "stop-timeout")))
        return perr(c, m,
                    "config '%s' starts no server: env, port and the timeouts are for a "
                    "command",
                    k->name);
    return 0;
}

/* One point of a config's grid: a config, filled from the map. */
static int one_config(struct lt_sweep_plan *p, struct pctx *c, yaml_node_t *m, const char *base,
                      const struct grid *g, const size_t *pt)
{
    if (p->n_configs == LT_SWEEP_CONFIGS_MAX)
        return perr(c, m, "a plan has at most %s configs", "64");
    struct lt_sweep_config *k = &p->configs[p->n_configs++];
    memset(k, 0, sizeof *k);
    k->line = (int)m->start_mark.line + 1;
    k->probe_timeout_us = 2000000;
    k->start_timeout_us = 60000000;
    k->stop_timeout_us = 10000000;
    snprintf(k->health, sizeof k->health, "/health");
    size_t pl = 0, extra = 1;
    for (size_t i = 0; i < g->n; i++) {
        size_t w = strlen(g->name[i]) + strlen(g->val[i][pt[i]]) + 2;
        if (pl + w >= sizeof k->params)
            return perr(c, m, "the grid point of config '%s' is too long to name", base);
        pl += (size_t)snprintf(k->params + pl, sizeof k->params - pl, "%s%s=%s", pl ? " " : "",
                               g->name[i], g->val[i][pt[i]]);
        extra += w;
    }
    yaml_node_t *nn = get(c, m, "name");
    char *name = expand(c, nn ? nn : m, base, g, pt);
    if (!name)
        return c->err->code;
    if (g->n && !strchr(base, '{')) { /* name-mr4-tp2: every point its own name */
        size_t l = strlen(name), cap = l + extra;
        char *t = realloc(name, cap);
        if (!t) {
            free(name);
            return lt_errset(c->err, LT_ENOMEM, "out of memory");
        }
        name = t;
        for (size_t i = 0; i < g->n; i++)
            l += (size_t)snprintf(name + l, cap - l, "-%s%s", g->name[i], g->val[i][pt[i]]);
    }
    bool ok = name_ok(name) && strlen(name) < sizeof k->name;
    if (ok)
        snprintf(k->name, sizeof k->name, "%s", name);
    free(name);
    if (!ok)
        return perr(c, nn ? nn : m,
                    "config name '%s' must be letters, digits, '-', '_', '.' "
                    "(at most 63)",
                    base);
    for (size_t i = 0; i + 1 < p->n_configs; i++)
        if (!strcmp(p->configs[i].name, k->name))
            return perr(c, nn ? nn : m, "two configs are called '%s'", k->name);

    int rc = config_kind(c, m, k, g, pt);
    return rc < 0 ? rc : config_lifecycle(c, m, k, g, pt);
}

static int parse_config(struct lt_sweep_plan *p, struct pctx *c, yaml_node_t *m)
{
    if (m->type != YAML_MAPPING_NODE)
        return perr(c, m, "each config is a map (name, command, ...), not %s", "a value");
    int rc = check_keys(c, m, config_keys, "config");
    if (rc < 0)
        return rc;
    yaml_node_t *nn = get(c, m, "name");
    const char *base = nn ? scalar(c, nn, "name") : NULL;
    if (!base)
        return nn ? LT_EUSAGE : perr(c, m, "a config needs a %s", "name");
    struct grid g = {0};
    yaml_node_t *gn = get(c, m, "grid");
    if (gn && (rc = parse_grid(c, gn, &g)) < 0)
        return rc;
    if (gn && !get(c, m, "command") && !get(c, m, "virtual"))
        return perr(c, gn, "a grid varies a command or a virtual profile; config '%s' has neither",
                    base);
    size_t pt[GRID_MAX] = {0};
    for (;;) { /* every point, the last parameter fastest */
        if ((rc = one_config(p, c, m, base, &g, pt)) < 0)
            return rc;
        size_t i = g.n;
        while (i > 0 && ++pt[i - 1] == g.n_val[i - 1])
            pt[--i] = 0;
        if (i == 0)
            return 0;
    }
}

static int parse_root(struct lt_sweep_plan *p, struct pctx *c, yaml_node_t *root)
{
    if (!root || root->type != YAML_MAPPING_NODE)
        return perr(c, root, "a plan is a map: trace, load, configs (docs/sweep.md), not %s",
                    root ? "a list or a value" : "empty");
    static const char *const keys[] = {"trace",  "load",   "configs",     "baseline",
                                       "warmup", "replay", "reset-cache", NULL};
    int rc = check_keys(c, root, keys, "plan");
    if (rc < 0)
        return rc;
    yaml_node_t *v = get(c, root, "trace");
    const char *t = v ? scalar(c, v, "trace") : NULL;
    if (!t)
        return v ? LT_EUSAGE : perr(c, root, "the plan names no %s", "trace");
    const char *slash = strrchr(c->path, '/');
    if (t[0] == '/' || !slash)
        snprintf(p->trace, sizeof p->trace, "%s", t);
    else
        snprintf(p->trace, sizeof p->trace, "%.*s/%s", (int)(slash - c->path), c->path, t);
    if (!(v = get(c, root, "load")))
        return perr(c, root, "the plan has no %s (find-max, concurrency, rate, ...)", "load");
    if ((rc = parse_load(p, c, v)) < 0)
        return rc;
    if ((v = get(c, root, "warmup"))) {
        const char *s = scalar(c, v, "warmup");
        char *end = NULL;
        long w = s ? strtol(s, &end, 10) : -1;
        if (!s || *end || w < 0 || w > 100000)
            return perr(c, v, "warmup wants a number of requests (0 to 100000), got '%s'",
                        s ? s : "");
        p->warmup = (uint32_t)w;
    }
    if ((v = get(c, root, "reset-cache"))) {
        const char *s = scalar(c, v, "reset-cache");
        if (!s || (strcmp(s, "true") && strcmp(s, "false")))
            return perr(c, v, "reset-cache is true or false, got '%s'", s ? s : "");
        p->reset_cache = !strcmp(s, "true");
    }
    if ((v = get(c, root, "replay"))) {
        if (v->type != YAML_SEQUENCE_NODE)
            return perr(c, v, "'%s' wants a list of replay's options", "replay");
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
             i++) {
            const char *s = scalar(c, node(c, *i), "replay");
            if (!s)
                return LT_EUSAGE;
            if (!strcmp(s, "-o") || !strcmp(s, "--target") || !strncmp(s, "--target=", 9))
                return perr(c, node(c, *i), "'%s' is the sweep's to set, per config", s);
            if ((rc = add_arg(p, c, node(c, *i), s)) < 0)
                return rc;
        }
    }
    if (!(v = get(c, root, "configs")) || v->type != YAML_SEQUENCE_NODE ||
        v->data.sequence.items.start == v->data.sequence.items.top)
        return perr(c, v ? v : root, "the plan wants %s", "a list of configs");
    if (!(p->configs = calloc(LT_SWEEP_CONFIGS_MAX, sizeof *p->configs)))
        return lt_errset(c->err, LT_ENOMEM, "out of memory");
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
        if ((rc = parse_config(p, c, node(c, *i))) < 0)
            return rc;
    if ((v = get(c, root, "baseline"))) {
        if ((rc = copy_to(c, v, "baseline", p->baseline, sizeof p->baseline)) < 0)
            return rc;
        size_t i = 0;
        while (i < p->n_configs && strcmp(p->configs[i].name, p->baseline))
            i++;
        if (i == p->n_configs)
            return perr(c, v, "the baseline '%s' is no config of the plan", p->baseline);
    }
    return 0;
}

int lt_sweep_plan_load(struct lt_sweep_plan *p, const char *path, struct lt_err *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return lt_errset(err, LT_EIO, "%s: %s", path, strerror(errno));
    yaml_parser_t parser;
    struct pctx c = {.path = path, .err = err};
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return lt_errset(err, LT_ENOMEM, "out of memory");
    }
    yaml_parser_set_input_file(&parser, f);
    int rc;
    if (!yaml_parser_load(&parser, &c.doc)) {
        rc = lt_errset(err, LT_EFORMAT, "%s:%lu: not YAML: %s", path,
                       (unsigned long)parser.problem_mark.line + 1,
                       parser.problem ? parser.problem : "unreadable");
        yaml_parser_delete(&parser);
        fclose(f);
        return rc;
    }
    rc = parse_root(p, &c, yaml_document_get_root_node(&c.doc));
    yaml_document_delete(&c.doc);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void lt_sweep_plan_release(struct lt_sweep_plan *p)
{
    for (size_t i = 0; i < p->n_load_args; i++)
        free(p->load_args[i]);
    for (size_t i = 0; p->configs && i < p->n_configs; i++) {
        free(p->configs[i].command);
        free_list(p->configs[i].env, p->configs[i].n_env);
        free_list(p->configs[i].set, p->configs[i].n_set);
    }
    free(p->configs);
    memset(p, 0, sizeof *p);
}

const char *lt_sweep_status_name(enum lt_sweep_status s)
{
    static const char *const names[] = {"pending", "complete",    "partial",
                                        "failed",  "interrupted", "skipped"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}
