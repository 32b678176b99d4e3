/*
 * The fleet's options (see replay_fleet.h).
 */
#include "cli/replay_fleet.h"

#include "cli/cli_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One target: URL, optionally =W (a weight after the URL's authority). */
static bool add_one(struct cli_fleet *f, const char *s, size_t len, const char *where)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    if (!len) {
        cli_error("replay", "%s: an empty target", where);
        return false;
    }
    if (f->n >= LT_ROUTE_MAX) {
        cli_error("replay", "%s: more than %d targets", where, LT_ROUTE_MAX);
        return false;
    }
    /* Kept for the process's life (the options point into it): static,
     * so nothing is left to free on any of the command's exits. */
    static char pool[1 << 17];
    static size_t used;
    if (used + len + 1 > sizeof pool) {
        cli_error("replay", "%s: the targets are too long in all", where);
        return false;
    }
    char *t = pool + used;
    memcpy(t, s, len);
    t[len] = '\0';
    used += len + 1;
    uint32_t w = 1;
    /* The weight: "=W" or a second column; a URL's own '=' (a query) sits
     * after a '?', which a base URL does not have. */
    char *sep = strrchr(t, '=');
    char *sp = strpbrk(t, " \t");
    if (sp && (!sep || sp < sep))
        sep = sp;
    if (sep) {
        char *v = sep + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < 1 || x > LT_ROUTE_WEIGHT_MAX) {
            cli_error("replay", "%s: target '%s': the weight must be an integer 1 to %d", where, t,
                      LT_ROUTE_WEIGHT_MAX);
            return false;
        }
        *sep = '\0';
        w = (uint32_t)x;
        f->weighted = true;
    }
    f->urls[f->n] = t;
    f->weights[f->n] = w;
    f->n++;
    return true;
}

bool cli_fleet_add_list(struct cli_fleet *f, const char *list)
{
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (!add_one(f, p, len, "--target"))
            return false;
        if (!c)
            return true;
        p = c + 1;
    }
}

bool cli_fleet_add_file(struct cli_fleet *f, const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        cli_error("replay", "--targets %s: %s", path, strerror(errno));
        return false;
    }
    char line[2048], where[1100];
    unsigned ln = 0;
    bool ok = true;
    size_t before = f->n;
    while (ok && fgets(line, sizeof line, fp)) {
        ln++;
        size_t len = strcspn(line, "#\n");
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k == len)
            continue;
        snprintf(where, sizeof where, "--targets %.1000s:%u", path, ln);
        ok = add_one(f, line, len, where);
    }
    if (ok && ferror(fp)) {
        cli_error("replay", "--targets %s: %s", path, strerror(errno));
        ok = false;
    }
    fclose(fp);
    if (ok && f->n == before) {
        cli_error("replay", "--targets %s: no target in it", path);
        ok = false;
    }
    return ok;
}

bool cli_fleet_apply(struct cli_fleet *f, struct lt_replay_opts *o, bool virt)
{
    if (f->weighted && !f->route_set)
        f->route.policy = LT_ROUTE_WEIGHTED;
    if (f->weighted && f->route.policy != LT_ROUTE_WEIGHTED) {
        cli_error("replay", "target weights apply to --route weighted, not --route %s",
                  lt_route_name(f->route.policy));
        return false;
    }
    if (f->replicas && !virt) {
        cli_error("replay", "--replicas N is the virtual fleet's (--virtual); live, give the "
                            "replicas with --target URL1,URL2,... or --targets FILE");
        return false;
    }
    if (f->n > 1) {
        o->target = f->urls[0];
        o->targets = f->urls;
        o->n_targets = f->n;
    } else if (f->n == 1) {
        o->target = f->urls[0];
    }
    if (f->route_set && f->n < 2 && !f->replicas) {
        cli_error("replay", "--route chooses among several targets: give --target URL1,URL2,... "
                            "or --targets FILE (or --virtual --replicas N)");
        return false;
    }
    o->route = f->route;
    o->route.weights = f->weighted ? f->weights : NULL;
    if (o->failover && f->n < 2) {
        cli_error("replay", "--failover moves requests to another target: give several");
        return false;
    }
    return true;
}

void cli_fleet_print(const struct lt_replay_opts *o, const struct lt_replay_stats *st)
{
    if (!st->n_replicas)
        return;
    uint64_t sum = 0, max = 0;
    for (size_t i = 0; i < st->n_replicas; i++) {
        sum += st->replicas[i].requests;
        if (st->replicas[i].requests > max)
            max = st->replicas[i].requests;
    }
    double mean = (double)sum / (double)st->n_replicas;
    fprintf(stderr, "loadtrace replay: fleet of %zu, route %s%s; load balance (max/mean) %.2f\n",
            st->n_replicas, lt_route_name(o->route.policy),
            o->failover ? ", --failover: a replica's failure sends its requests to another"
                        : "; a replica's failures are recorded as errors (--failover moves them)",
            mean > 0 ? (double)max / mean : 0);
    for (size_t i = 0; i < st->n_replicas; i++) {
        const struct lt_replay_replica *r = &st->replicas[i];
        char down[160] = "";
        if (r->down_at_us >= 0)
            snprintf(down, sizeof down, "; DOWN at %.2f s, %llu requests failed over from it",
                     (double)r->down_at_us / 1e6, (unsigned long long)r->failed_over);
        fprintf(stderr,
                "loadtrace replay:   replica %zu %s: %llu requests, %llu errors, %llu "
                "output tokens%s\n",
                i, r->label, (unsigned long long)r->requests, (unsigned long long)r->errors,
                (unsigned long long)r->out_tokens, down);
    }
    if (st->route_spilled)
        fprintf(stderr,
                "loadtrace replay:   prefix routing: %llu requests went past their first "
                "replica (its load bound)\n",
                (unsigned long long)st->route_spilled);
}
