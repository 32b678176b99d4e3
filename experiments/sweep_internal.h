/*
 * Inside experiments/: the server lifecycle (sweep_server.c) and the child
 * processes the sweep runs, used by sweep_run.c.
 */
#ifndef LT_SWEEP_INTERNAL_H
#define LT_SWEEP_INTERNAL_H

#include "experiments/sweep.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A server the sweep started: the leader of its own process group (a
 * shell running the command). The leader is reaped last, so its group id
 * cannot be taken by another process while the sweep signals it. */
struct lt__sweep_server {
    pid_t pid; /* = the process group; 0: none */
    uint16_t port;
    char url[64];
    bool exited;       /* the leader has exited (not yet reaped) */
    int status;        /* its wait status, when exited */
    char stopped[200]; /* how it was stopped */
};

/* A free loopback port (bound to port 0 and let go). */
int lt__sweep_free_port(uint16_t *port, struct lt_err *err);
/* Whether anything listens on 127.0.0.1:port (a bind there fails). */
bool lt__sweep_port_busy(uint16_t port);

/* Start k's command (with {port} and {loadtrace} filled in: exe) with
 * `sh -c` in a new session, stdout and stderr appended to log, stdin
 * /dev/null. cmd_out gets the exact command line run. */
int lt__sweep_server_start(const struct lt_sweep_config *k, const char *exe, uint16_t port,
                        const char *log, char *cmd_out, size_t cmd_cap, struct lt__sweep_server *s,
                        struct lt_err *err);
/* Has the leader exited? (Looks without reaping it.) */
bool lt__sweep_server_exited(struct lt__sweep_server *s);
/* Wait until base_url answers GET health with 2xx and GET /v1/models with
 * 2xx, for at most start_us; s (may be NULL: a server already running)
 * is watched for an early exit. The error names the log. */
int lt__sweep_wait_ready(const char *base_url, const struct lt_sweep_config *k,
                      struct lt__sweep_server *s, const char *log, volatile sig_atomic_t *stop,
                      struct lt_err *err);
/* SIGTERM to the group, SIGKILL after grace_us when any of it is left,
 * then reap the leader. Says how in s->stopped. */
void lt__sweep_server_stop(struct lt__sweep_server *s, int64_t grace_us);

/* GET (body NULL) or POST body to url; *status the HTTP status (0: no
 * answer); the answer's first cap - 1 bytes in buf, NUL-ended. */
int lt__sweep_http(const char *url, const char *body, int64_t timeout_us, long *status, char *buf,
                size_t cap);

/* Run exe with argv (argv[0] included) in its own process group, stdout
 * and stderr appended to log. */
int lt__sweep_child_start(const char *exe, char *const *argv, const char *log, pid_t *pid,
                       struct lt_err *err);

/* snprintf for sentences that may be cut short at cap (a message, a
 * path in one): cutting is what is meant. */
void lt__sweep_fmt(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Sleep ms milliseconds (the lifecycle's polling step). */
void lt__sweep_nap(int ms);
int64_t lt__sweep_now_us(void);

#endif
