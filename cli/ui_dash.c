/*
 * The terminal dashboard of ui_dash.h. One thread of its own owns the
 * screen: every 250 ms (or on a key, or on a resize) it takes a view of
 * the live figures and draws it; nothing else calls ncurses while it
 * runs. SIGWINCH is blocked in the thread that started it (the engine's),
 * so a resize interrupts only this thread's wait (ncurses turns it into
 * KEY_RESIZE) and never a system call of the engine.
 *
 * A frame is rendered first into lines of text (render), which are then
 * either drawn or, at the end, printed: the last frame on the normal
 * screen is exactly the last frame drawn.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "cli/ui_dash.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#define ROWS_MAX 64
#define LINE_MAX_B 1024
#define NOTES 32
#define MIN_W 72
#define MIN_H 22
#define FRAME_MS 250

enum { R_PLAIN = CLI_DASH_PLAIN, R_TITLE, R_HEAD, R_GOOD, R_BAD, R_DIM };

struct row {
    char s[LINE_MAX_B];
    int attr;
};

struct cli_dash {
    struct lt_replay_live *live;  /* the replay's frame, or: */
    cli_dash_render_fn render_fn; /* a frame of the caller's */
    void *render_ud;
    char footer[160];
    char title[32];
    SCREEN *scr;
    pthread_t th;
    atomic_bool stop;
    bool utf8, color;
    bool stopping; /* q was pressed */
    sigset_t old_mask;
    struct sigaction old_act[4]; /* of sigs[]: ncurses sets its own where they are default */
    pthread_mutex_t mu;          /* notes and status */
    char notes[NOTES][160];
    unsigned n_notes;
    char status[160];
    struct row rows[ROWS_MAX];
};

static const int sigs[4] = {SIGINT, SIGTERM, SIGTSTP, SIGWINCH};

bool cli_ui_parse(const char *s, enum cli_ui *ui)
{
    static const char *const names[] = {"auto", "dashboard", "line", "none"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(s, names[k])) {
            *ui = (enum cli_ui)k;
            return true;
        }
    return false;
}

bool cli_ui_dashboard_possible(char *why, size_t n)
{
    if (!isatty(STDERR_FILENO)) {
        snprintf(why, n, "standard error is not a terminal");
        return false;
    }
    const char *term = getenv("TERM");
    if (!term || !*term || !strcmp(term, "dumb")) {
        snprintf(why, n, "TERM is %s", term && *term ? "dumb" : "not set");
        return false;
    }
    int e = 0;
    if (setupterm(term, STDERR_FILENO, &e) != OK) {
        snprintf(why, n, "ncurses does not know the terminal TERM=%s", term);
        return false;
    }
    del_curterm(cur_term); /* only asked: newterm sets up its own */
    return true;
}

const char *cli_ui_no_dashboard(bool virtual_run)
{
    if (virtual_run)
        return "a --virtual replay runs in virtual time (seconds of CPU for hours of trace): "
               "there is nothing to watch while it runs, its totals follow";
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE"))
        return "the ranks of an MPI replay share no screen (mpirun relays each rank's "
               "output): each prints its lines";
    return NULL;
}

bool cli_ui_rank0(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
        r = getenv("PMIX_RANK");
    return !r || !strcmp(r, "0");
}

enum cli_ui cli_ui_resolve(enum cli_ui ui)
{
    if (ui != CLI_UI_AUTO)
        return ui;
    char why[128];
    return cli_ui_dashboard_possible(why, sizeof why) ? CLI_UI_DASHBOARD : CLI_UI_LINE;
}

/* ---- rendering ---- */

/* Columns of a UTF-8 string (each code point one column: the dashboard's
 * own characters are all narrow). */
static size_t cols_of(const char *s)
{
    size_t c = 0;
    for (; *s; s++)
        c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

/* Cut s to at most w columns, in place. */
static void cut_cols(char *s, size_t w)
{
    size_t c = 0;
    for (char *p = s; *p; p++) {
        if (((unsigned char)*p & 0xC0) != 0x80 && c++ == w) {
            *p = '\0';
            return;
        }
    }
}

static void add(struct cli_dash *d, int *n, int attr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(struct cli_dash *d, int *n, int attr, const char *fmt, ...)
{
    if (*n >= ROWS_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->rows[*n].s, LINE_MAX_B, fmt, ap);
    va_end(ap);
    d->rows[*n].attr = attr;
    (*n)++;
}

void cli_dash_row(struct cli_dash *d, int *n, enum cli_dash_attr attr, const char *fmt, ...)
{
    if (*n >= ROWS_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->rows[*n].s, LINE_MAX_B, fmt, ap);
    va_end(ap);
    d->rows[*n].attr = (int)attr;
    (*n)++;
}

bool cli_dash_utf8(const struct cli_dash *d)
{
    return d->utf8;
}

const char *cli_dash_title(const struct cli_dash *d)
{
    return d->title;
}

/* A duration in words: "42 s", "29 min 10 s", "9 h 48 min". */
static void human_s(double s, char *b, size_t n)
{
    if (!(s >= 0))
        s = 0;
    if (s < 90)
        snprintf(b, n, "%.0f s", s);
    else if (s < 5400)
        snprintf(b, n, "%.0f min %02.0f s", floor(s / 60), fmod(s, 60));
    else
        snprintf(b, n, "%.0f h %02.0f min", floor(s / 3600), floor(fmod(s, 3600) / 60));
}

/* A latency in milliseconds, or a dash when there is none. */
static void ms(const struct lt_live_lat *l, double us, char *b, size_t n)
{
    if (!l->n)
        snprintf(b, n, "%10s", "-");
    else
        snprintf(b, n, "%10.2f", us / 1000.0);
}

void cli_dash_human_s(double s, char *b, size_t n)
{
    human_s(s, b, n);
}

void cli_dash_title_row(struct cli_dash *d, int *n, int w, const char *left, double elapsed_s)
{
    char a[64], c[96];
    human_s(elapsed_s, a, sizeof a);
    snprintf(c, sizeof c, "%s elapsed ", a);
    int pad = w - (int)cols_of(left) - (int)cols_of(c);
    cli_dash_row(d, n, CLI_DASH_TITLE, "%s%*s%s", left, pad > 0 ? pad : 1, "", c);
}

void cli_dash_bar(const struct cli_dash *d, double frac, int bw, char *bar, size_t n)
{
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    int fill = (int)(frac * bw + 0.5);
    size_t used = 0;
    bar[0] = '\0';
    for (int i = 0; i < bw && used + 4 < n; i++) {
        const char *ch = d->utf8 ? (i < fill ? "█" : "░") : (i < fill ? "#" : ".");
        size_t cl = strlen(ch);
        memcpy(bar + used, ch, cl);
        used += cl;
        bar[used] = '\0';
    }
}

/* The last w samples of v as a sparkline scaled to [0, top]. */
static void spark(const double *v, uint32_t nv, uint32_t w, double top, bool utf8, char *b,
                  size_t n)
{
    static const char *const u[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static const char a[] = "_.-=+*#@";
    size_t used = 0;
    uint32_t first = nv > w ? nv - w : 0;
    if (!(top > 0)) {
        top = 0;
        for (uint32_t i = first; i < nv; i++)
            if (isfinite(v[i]) && v[i] > top)
                top = v[i];
    }
    b[0] = '\0';
    for (uint32_t i = first; i < nv && used + 4 < n; i++) {
        int k = !isfinite(v[i]) ? -1 : top > 0 ? (int)lround(7.0 * v[i] / top) : 0;
        k = k > 7 ? 7 : k;
        const char *c = k < 0 ? " " : utf8 ? u[k] : (char[]){a[k], 0};
        size_t cl = strlen(c);
        memcpy(b + used, c, cl);
        used += cl;
        b[used] = '\0';
    }
}

static double last_of(const double *v, uint32_t n)
{
    return n ? v[n - 1] : NAN;
}

/* The time left, as the progress line says it (cmd_replay.c). */
static void eta(const struct lt_replay_progress *p, char *b, size_t n)
{
    double el = p->elapsed_s > 0 ? p->elapsed_s : 1e-9;
    char t[48];
    if (p->stopped) {
        snprintf(b, n, "stopped: %llu never sent", (unsigned long long)p->unsent);
    } else if (p->done >= p->total) {
        snprintf(b, n, "done");
    } else if (p->sched_end_s >= 0 && el < p->sched_end_s) {
        human_s(p->sched_end_s - el, t, sizeof t);
        snprintf(b, n, "ETA %s (the schedule's end)", t);
    } else if (p->sched_end_s >= 0) {
        snprintf(b, n, "all sent, %llu to finish", (unsigned long long)(p->total - p->done));
    } else if (p->done) {
        human_s((double)(p->total - p->done) / ((double)p->done / el), t, sizeof t);
        snprintf(b, n, "ETA ~%s (at the rate so far)", t);
    } else {
        snprintf(b, n, "ETA unknown");
    }
}

/* One frame of w x h into d->rows; returns the rows used. */
/* The title line and the progress bar. Returns false when the run has not
 * started, and nothing more is to be drawn. */
static bool render_head(struct cli_dash *d, const struct lt_live_view *v, int w, int *n)
{
    const struct lt_replay_progress *p = &v->p;
    char a[200], b[256], c[256];
    char lvl[32] = "";
    if (p->level)
        snprintf(lvl, sizeof lvl, " · C=%u", p->level);
    human_s(p->elapsed_s, a, sizeof a);
    snprintf(b, sizeof b, " loadtrace %s · run %u of %u%s", d->title, p->run + 1,
             p->runs ? p->runs : 1, lvl);
    snprintf(c, sizeof c, "%s elapsed ", a);
    int pad = w - (int)cols_of(b) - (int)cols_of(c);
    add(d, n, R_TITLE, "%s%*s%s", b, pad > 0 ? pad : 1, "", c);
    if (!v->started) {
        add(d, n, R_DIM, " waiting for the run to start");
        return false;
    }
    add(d, n, R_PLAIN, "%s", "");

    double frac = p->total ? (double)p->done / (double)p->total : 0;
    eta(p, c, sizeof c);
    char head[96];
    snprintf(head, sizeof head, " %5.1f %%  %llu/%llu  ", 100 * frac, (unsigned long long)p->done,
             (unsigned long long)p->total);
    int bw = w - (int)cols_of(head) - (int)cols_of(c) - 4;
    if (bw < 10)
        bw = 10;
    char bar[LINE_MAX_B];
    cli_dash_bar(d, frac, bw, bar, sizeof bar);
    add(d, n, R_HEAD, " %s%s  %s", head, bar, c);
    add(d, n, R_PLAIN, "%s", "");
    return true;
}

/* Outcomes, errors by class, what is in flight and the throughput. */
static void render_requests(struct cli_dash *d, const struct lt_live_view *v, int *n)
{
    const struct lt_replay_progress *p = &v->p;
    char a[200];
    add(d, n, v->errors ? R_BAD : R_GOOD,
        " requests   sent %llu   ok %llu   errors %llu   cancelled %llu   unsent %llu",
        (unsigned long long)(v->sent + (p->inflight)), (unsigned long long)v->ok,
        (unsigned long long)v->errors, (unsigned long long)v->cancelled,
        (unsigned long long)v->unsent);
    size_t used = 0;
    a[0] = '\0';
    for (int k = 0; k < LT_LIVE_CLASSES; k++)
        if (v->by_class[k]) {
            int m = snprintf(a + used, sizeof a - used, "%s%s %llu", used ? " · " : "",
                             lt_live_class_name(k), (unsigned long long)v->by_class[k]);
            if (m < 0 || (size_t)m >= sizeof a - used)
                break;
            used += (size_t)m;
        }
    add(d, n, v->errors ? R_BAD : R_DIM, " by class   %s", used ? a : "no errors");
    add(d, n, R_PLAIN, " in flight  %llu   schedule lag %.1f ms   tokens out %llu   in %llu",
        (unsigned long long)p->inflight, 1000 * p->lag_s, (unsigned long long)v->out_tokens,
        (unsigned long long)v->in_tokens);
    double el = p->elapsed_s > 0 ? p->elapsed_s : 1e-9;
    add(d, n, R_PLAIN,
        " throughput last %.0f s: %.2f req/s  %.0f tok/s     whole run: %.2f req/s  %.0f tok/s",
        v->win_s, v->win_rps, v->win_tps, (double)(v->results - v->unsent) / el,
        (double)v->out_tokens / el);
    add(d, n, R_PLAIN, "%s", "");
}

/* The latency table: the last window's and the whole run's. */
static void render_latency(struct cli_dash *d, const struct lt_live_view *v, int *n)
{
    add(d, n, R_HEAD, " %-14s %10s %10s %10s %10s %10s", "latency (ms)", "p50 10s", "p99 10s",
        "p50 run", "p99 run", "count");
    static const char *const names[LT_LIVE_METRICS] = {"TTFT", "TPOT", "ITL", "E2E"};
    for (int m = 0; m < LT_LIVE_METRICS; m++) {
        char x[4][24];
        ms(&v->win[m], v->win[m].p50_us, x[0], sizeof x[0]);
        ms(&v->win[m], v->win[m].p99_us, x[1], sizeof x[1]);
        ms(&v->run[m], v->run[m].p50_us, x[2], sizeof x[2]);
        ms(&v->run[m], v->run[m].p99_us, x[3], sizeof x[3]);
        add(d, n, R_PLAIN, " %-14s %s %s %s %s %10llu", names[m], x[0], x[1], x[2], x[3],
            (unsigned long long)v->run[m].n);
    }
    add(d, n, R_PLAIN, "%s", "");
}

/* The server's running, waiting and KV figures, with their sparklines. */
static void render_server(struct cli_dash *d, const struct lt_live_view *v, int w, int *n)
{
    double run_now = last_of(v->running, v->n_server), wait_now = last_of(v->waiting, v->n_server),
           kv_now = last_of(v->kv, v->n_server);
    if (!isfinite(run_now) && !isfinite(wait_now) && !isfinite(kv_now)) {
        add(d, n, R_DIM, " server     not scraped (no running, waiting or KV figures)");
        return;
    }
    uint32_t sw = (uint32_t)(w - 40) / 3;
    sw = sw > 40 ? 40 : sw < 8 ? 8 : sw;
    char s1[256], s2[256], s3[256];
    spark(v->running, v->n_server, sw, 0, d->utf8, s1, sizeof s1);
    spark(v->waiting, v->n_server, sw, 0, d->utf8, s2, sizeof s2);
    spark(v->kv, v->n_server, sw, 1, d->utf8, s3, sizeof s3);
    add(d, n, R_PLAIN, " server     running %-5.0f %s", run_now, s1);
    add(d, n, R_PLAIN, "            waiting %-5.0f %s", wait_now, s2);
    if (isfinite(kv_now))
        add(d, n, R_PLAIN, "            KV use  %3.0f %%  %s", 100 * kv_now, s3);
}

/* What a search or a sweep has done so far: its phase, status and the
 * latest notes that fit in the h rows left. */
static void render_notes(struct cli_dash *d, const struct lt_live_view *v, int h, int *n)
{
    pthread_mutex_lock(&d->mu);
    if (v->phase[0] || d->n_notes || d->status[0]) {
        add(d, n, R_PLAIN, "%s", "");
        if (v->phase[0])
            add(d, n, R_HEAD, " now        %s", v->phase);
        if (d->status[0])
            add(d, n, R_PLAIN, "            %s", d->status);
        int room = h - *n - 2;
        unsigned first = d->n_notes > (unsigned)(room > 0 ? room : 0)
                             ? d->n_notes - (unsigned)(room > 0 ? room : 0)
                             : 0;
        unsigned keep0 = d->n_notes > NOTES ? d->n_notes - NOTES : 0;
        if (first < keep0)
            first = keep0;
        for (unsigned i = first; i < d->n_notes; i++)
            add(d, n, R_PLAIN, "            %s", d->notes[i % NOTES]);
    }
    pthread_mutex_unlock(&d->mu);
}

static int render(struct cli_dash *d, const struct lt_live_view *v, int w, int h)
{
    int n = 0;
    if (w < MIN_W || h < MIN_H) {
        const struct lt_replay_progress *p = &v->p;
        add(d, &n, R_BAD, "terminal too small: %dx%d", w, h);
        add(d, &n, R_PLAIN, "the dashboard needs %dx%d", MIN_W, MIN_H);
        add(d, &n, R_PLAIN, "%llu/%llu done, %llu ok, %llu errors", (unsigned long long)p->done,
            (unsigned long long)p->total, (unsigned long long)v->ok, (unsigned long long)v->errors);
        return n;
    }
    if (!render_head(d, v, w, &n))
        return n;
    render_requests(d, v, &n);
    render_latency(d, v, &n);
    render_server(d, v, w, &n);
    render_notes(d, v, h, &n);
    return n;
}

/* ---- the screen ---- */

static int attr_of(const struct cli_dash *d, int a)
{
    switch (a) {
    case R_TITLE:
        return A_REVERSE | A_BOLD;
    case R_HEAD:
        return A_BOLD;
    case R_GOOD:
        return d->color ? COLOR_PAIR(1) : A_NORMAL;
    case R_BAD:
        return d->color ? COLOR_PAIR(2) | A_BOLD : A_BOLD;
    case R_DIM:
        return A_DIM;
    default:
        return A_NORMAL;
    }
}

/* The rows of a frame of w x h: the replay's, or the caller's. */
static int frame(struct cli_dash *d, int w, int h)
{
    if (!d->render_fn) {
        struct lt_live_view v;
        lt_replay_live_view(d->live, &v);
        return render(d, &v, w, h);
    }
    int n = 0;
    if (w < MIN_W || h < MIN_H) {
        add(d, &n, R_BAD, "terminal too small: %dx%d", w, h);
        add(d, &n, R_PLAIN, "the dashboard needs %dx%d", MIN_W, MIN_H);
        return n;
    }
    return d->render_fn(d, d->render_ud, w, h);
}

static void draw(struct cli_dash *d)
{
    int h = LINES, w = COLS;
    int n = frame(d, w, h);
    erase();
    for (int i = 0; i < n && i < h - 1; i++) {
        cut_cols(d->rows[i].s, (size_t)w);
        attrset(attr_of(d, d->rows[i].attr));
        mvaddstr(i, 0, d->rows[i].s);
        if (d->rows[i].attr == R_TITLE) /* the title bar spans the width */
            for (int x = (int)cols_of(d->rows[i].s); x < w; x++)
                addch(' ');
    }
    attrset(A_DIM);
    if (h >= 2)
        mvaddstr(h - 1, 0,
                 d->stopping && d->footer[0] ? " stopping (as after SIGINT)..."
                 : d->stopping  ? " stopping: requests in flight are recorded as aborted..."
                 : d->footer[0] ? d->footer
                                : " q or Ctrl-C stops the run (as SIGINT: everything is recorded)");
    attrset(A_NORMAL);
    refresh();
}

static void *ui_main(void *arg)
{
    struct cli_dash *d = arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGWINCH);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    while (!atomic_load(&d->stop)) {
        draw(d);
        int ch = getch(); /* waits at most FRAME_MS (timeout) */
        if ((ch == 'q' || ch == 'Q') && !d->stopping) {
            d->stopping = true;
            kill(getpid(), SIGINT); /* exactly what Ctrl-C does */
        }
    }
    return NULL;
}

static struct cli_dash *start(struct cli_dash *d, struct lt_err *err);

struct cli_dash *cli_dash_start(struct lt_replay_live *l, const char *title, struct lt_err *err)
{
    struct cli_dash *d = calloc(1, sizeof *d);
    if (!d) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    d->live = l;
    snprintf(d->title, sizeof d->title, "%s", title);
    return start(d, err);
}

struct cli_dash *cli_dash_start_fn(const char *title, cli_dash_render_fn fn, void *ud,
                                   const char *footer, struct lt_err *err)
{
    struct cli_dash *d = calloc(1, sizeof *d);
    if (!d) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    d->render_fn = fn;
    d->render_ud = ud;
    snprintf(d->title, sizeof d->title, "%s", title);
    snprintf(d->footer, sizeof d->footer, "%s", footer ? footer : "");
    return start(d, err);
}

static struct cli_dash *start(struct cli_dash *d, struct lt_err *err)
{
    pthread_mutex_init(&d->mu, NULL);
    setlocale(LC_CTYPE, "");
    const char *cs = nl_langinfo(CODESET);
    d->utf8 = cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8"));
    /* The engine's thread must not see SIGWINCH: it goes to the UI's. */
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGWINCH);
    pthread_sigmask(SIG_BLOCK, &s, &d->old_mask);
    for (int k = 0; k < 4; k++)
        sigaction(sigs[k], NULL, &d->old_act[k]);
    d->scr = newterm(NULL, stderr, stdin);
    if (!d->scr) {
        pthread_sigmask(SIG_SETMASK, &d->old_mask, NULL);
        lt_errset(err, LT_EIO, "ncurses cannot drive this terminal (TERM=%s)",
                  getenv("TERM") ? getenv("TERM") : "");
        pthread_mutex_destroy(&d->mu);
        free(d);
        return NULL;
    }
    set_term(d->scr);
    cbreak(); /* keys one at a time; Ctrl-C still raises SIGINT */
    noecho();
    curs_set(0);
    keypad(stdscr, TRUE);
    timeout(FRAME_MS);
    if (has_colors() && start_color() == OK) {
        use_default_colors();
        init_pair(1, COLOR_GREEN, -1);
        init_pair(2, COLOR_RED, -1);
        d->color = true;
    }
    if (pthread_create(&d->th, NULL, ui_main, d) != 0) {
        endwin();
        delscreen(d->scr);
        pthread_sigmask(SIG_SETMASK, &d->old_mask, NULL);
        lt_errset(err, LT_EIO, "cannot start the dashboard's thread");
        pthread_mutex_destroy(&d->mu);
        free(d);
        return NULL;
    }
    /* named, so that its CPU can be told apart (bench/run-dash-capture.sh) */
    pthread_setname_np(d->th, "lt-dash");
    return d;
}

void cli_dash_note(struct cli_dash *d, const char *line)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    snprintf(d->notes[d->n_notes % NOTES], sizeof d->notes[0], "%s", line);
    d->n_notes++;
    pthread_mutex_unlock(&d->mu);
}

void cli_dash_status(struct cli_dash *d, const char *line)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    snprintf(d->status, sizeof d->status, "%s", line ? line : "");
    pthread_mutex_unlock(&d->mu);
}

void cli_dash_stop(struct cli_dash *d, FILE *out)
{
    if (!d)
        return;
    atomic_store(&d->stop, true);
    pthread_join(d->th, NULL);
    /* The last frame, drawn and kept: the thread is gone, this one owns
     * the screen now. */
    draw(d);
    int w = COLS, h = LINES;
    int n = frame(d, w, h);
    endwin();
    delscreen(d->scr);
    /* ncurses' handlers would reach for the screen just freed */
    for (int k = 0; k < 4; k++)
        sigaction(sigs[k], &d->old_act[k], NULL);
    pthread_sigmask(SIG_SETMASK, &d->old_mask, NULL);
    if (out) {
        for (int i = 0; i < n; i++) {
            char *s = d->rows[i].s;
            cut_cols(s, (size_t)w);
            size_t len = strlen(s);
            while (len && s[len - 1] == ' ')
                s[--len] = '\0';
            fprintf(out, "%s\n", s);
        }
        fflush(out);
    }
    pthread_mutex_destroy(&d->mu);
    free(d);
}
