/*
 * Exporters (see trace_export.h for what each format keeps and drops).
 * Both stream: one record in, one line out, so memory does not grow with
 * the trace.
 */
#include "workload/trace_export.h"
#include "base/lt_path.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/lt_mp.h"
#include "traces/trace_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOONCAKE_BLOCK 512u

static const char *const export_names[] = {
    [LT_EXPORT_MOONCAKE] = "mooncake",
    [LT_EXPORT_JSONL] = "jsonl",
};

int lt_export_format_parse(const char *s, enum lt_export_format *f)
{
    for (int i = LT_EXPORT_MOONCAKE; i <= LT_EXPORT_JSONL; i++)
        if (!strcmp(s, export_names[i])) {
            *f = (enum lt_export_format)i;
            return 0;
        }
    return LT_EINVAL;
}

/* Combine a chain value with the next id (splitmix64's finalizer over the
 * pair): equal chains of inputs give equal outputs, and nothing else does
 * in practice. */
static uint64_t mix(uint64_t h, uint64_t x)
{
    uint64_t z = h ^ (x + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int put_id(struct lt_buf *out, bool first, uint64_t id)
{
    return lt_buf_printf(out, first ? "%" PRIu64 : ", %" PRIu64, id);
}

int lt_export_mooncake_line(struct lt_buf *out, const struct lt_record *r,
                            struct lt_mooncake_state *s, struct lt_export_stats *st,
                            struct lt_err *err)
{
    int rc = 0;
    uint64_t index = s->index++;
    if (!(r->has & LT_HAS_IN) || !(r->has & LT_HAS_OUT))
        return lt_errset(err, LT_EINVAL,
                         "record %" PRIu64 " (t=%" PRId64 " us) has no \"%s\"; Mooncake's "
                         "format needs input_length and output_length",
                         index, r->t, (r->has & LT_HAS_IN) ? "out" : "in");
    LT_TRY(lt_buf_printf(out,
                         "{\"timestamp\": %" PRId64 ", \"input_length\": %" PRIu32
                         ", \"output_length\": %" PRIu32 ", \"hash_ids\": [",
                         (r->t + 500) / 1000, r->in, r->out));
    uint32_t bt = s->block_tokens ? s->block_tokens : MOONCAKE_BLOCK;
    if ((r->has & LT_HAS_BLOCKS) && bt == MOONCAKE_BLOCK) {
        for (uint32_t i = 0; i < r->n_blocks; i++)
            LT_TRY(put_id(out, i == 0, r->blocks[i]));
    } else if (r->has & LT_HAS_BLOCKS) {
        /* Re-cut: the 512-token block i covers tokens [512i, 512(i+1)) of
         * what the original blocks cover; its id chains the ids of every
         * original block up to the last one it overlaps. */
        uint64_t covered = (uint64_t)r->n_blocks * bt;
        if (r->in < covered && r->in > (uint64_t)(r->n_blocks - 1) * bt)
            covered = r->in;
        uint64_t n = (covered + MOONCAKE_BLOCK - 1) / MOONCAKE_BLOCK;
        uint64_t h = 0x6c6f616474726163u, next = 0; /* next original block to chain */
        for (uint64_t i = 0; i < n; i++) {
            uint64_t end = (i + 1) * MOONCAKE_BLOCK < covered ? (i + 1) * MOONCAKE_BLOCK : covered;
            uint64_t last = (end - 1) / bt;
            for (; next <= last; next++)
                h = mix(h, r->blocks[next]);
            LT_TRY(put_id(out, i == 0, mix(h, i)));
        }
        if (st)
            st->recut++;
    } else {
        uint64_t n = ((uint64_t)r->in + MOONCAKE_BLOCK - 1) / MOONCAKE_BLOCK;
        for (uint64_t j = 0; j < n; j++)
            LT_TRY(put_id(out, j == 0,
                          s->block_tokens ? mix(mix(0x6672657368u, index), j) : s->next_fresh++));
        if (st)
            st->fresh++;
    }
    LT_TRY(lt_buf_puts(out, "]}\n"));
out:
    if (rc < 0 && err && !err->msg[0])
        lt_errset(err, rc, "record %" PRIu64 ": line too long", index);
    return rc;
}

/* Write the lines gathered in line to out once there are 64 KiB of them,
 * or whatever there is when all is set. */
static int flush_lines(struct lt_buf *line, bool all, FILE *out, const char *out_name,
                       struct lt_export_stats *st, struct lt_err *err)
{
    if (line->len < (all ? 1 : (size_t)1 << 16))
        return 0;
    if (fwrite(line->p, 1, line->len, out) != line->len) {
        st->fault = LT_EXPORT_FAULT_WRITE;
        return lt_errset(err, LT_EIO, "%s: write failed: %s", out_name, strerror(errno));
    }
    lt_buf_reset(line);
    return 0;
}

/* The read or encode error rc, after the lines before it are written. */
static int fail_after_flush(int rc, enum lt_export_fault fault, struct lt_buf *line, FILE *out,
                            const char *out_name, struct lt_export_stats *st)
{
    struct lt_err werr = {0};
    flush_lines(line, true, out, out_name, st, &werr);
    st->fault = fault;
    return rc;
}

/* Append one item's line to line: its JSON, or its Mooncake line. */
typedef int (*line_fn)(struct lt_buf *line, const struct lt_item *it, void *state,
                       const char *in_name, struct lt_err *err);

static int json_line(struct lt_buf *line, const struct lt_item *it, void *state,
                     const char *in_name, struct lt_err *err)
{
    (void)state;
    int rc;
    if ((rc = lt_trace_json_item(line, it)) < 0 || (rc = lt_buf_append(line, "\n", 1)) < 0)
        lt_errset(err, rc, "%s: record %" PRIu64 ": too large", in_name, it->index);
    return rc;
}

struct mooncake_export {
    struct lt_mooncake_state ms;
    struct lt_export_stats *st;
};

static int mooncake_line(struct lt_buf *line, const struct lt_item *it, void *state,
                         const char *in_name, struct lt_err *err)
{
    struct mooncake_export *m = state;
    int rc = lt_export_mooncake_line(line, &it->rec, &m->ms, m->st, err);
    if (rc < 0)
        lt_errf(err, rc, "%s", in_name);
    return rc;
}

/* One line per item of r, after what line holds already, written in
 * batches; on a read or encode error the lines before it are written. */
static int export_lines(struct lt_reader *r, struct lt_buf *line, line_fn fn, void *state,
                        const char *in_name, FILE *out, const char *out_name,
                        struct lt_export_stats *st, struct lt_err *err)
{
    int rc = 0, n;
    const struct lt_item *it;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if ((rc = fn(line, it, state, in_name, err)) < 0)
            return fail_after_flush(rc, LT_EXPORT_FAULT_ENCODE, line, out, out_name, st);
        st->records++;
        if ((rc = flush_lines(line, false, out, out_name, st, err)) < 0)
            return rc;
    }
    if (n < 0)
        return fail_after_flush(n, LT_EXPORT_FAULT_READ, line, out, out_name, st);
    if ((rc = flush_lines(line, true, out, out_name, st, err)) < 0)
        return rc;
    if (fflush(out) != 0) {
        st->fault = LT_EXPORT_FAULT_WRITE;
        return lt_errset(err, LT_EIO, "%s: write failed: %s", out_name, strerror(errno));
    }
    return 0;
}

int lt_export_jsonl(struct lt_reader *r, bool header, const char *in_name, FILE *out,
                    const char *out_name, struct lt_export_stats *st, struct lt_err *err)
{
    int rc = 0;
    struct lt_export_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    struct lt_buf line;
    lt_buf_init(&line, (size_t)1 << 30);
    if (header && ((rc = lt_trace_json_header(&line, lt_reader_header(r))) < 0 ||
                   (rc = lt_buf_append(&line, "\n", 1)) < 0)) {
        lt_errset(err, rc, "%s: header too large", in_name);
        rc = fail_after_flush(rc, LT_EXPORT_FAULT_ENCODE, &line, out, out_name, st);
    } else {
        rc = export_lines(r, &line, json_line, NULL, in_name, out, out_name, st, err);
    }
    lt_buf_release(&line);
    return rc;
}

/* The header of a copy: r's, and when the copy skipped damage, the
 * salvaged_* keys of docs/trace-format.md §1 counting it (added to those of
 * a file that was repaired before). */
static int copy_header(const struct lt_header *in, const struct lt_reader_stats *skipped,
                       struct lt_header *h, struct lt_buf *extra)
{
    *h = *in;
    if (!skipped->skipped_frames && !skipped->skipped_values)
        return 0;
    static const char *const keys[] = {"salvaged_frames", "salvaged_bytes", "salvaged_values"};
    uint64_t add[] = {skipped->skipped_frames, skipped->skipped_bytes, skipped->skipped_values};
    uint32_t n;
    int rc = lt_extra_copy_except(&in->extra, keys, 3, extra, &n);
    struct lt_mp mp = {.out = extra};
    for (int k = 0; k < 3 && rc == 0; k++) {
        int64_t before = 0;
        if (!lt_extra_get_int(&in->extra, keys[k], &before) || before < 0)
            before = 0;
        if ((rc = lt_mp_cstr(&mp, keys[k])) == 0)
            rc = lt_mp_uint(&mp, (uint64_t)before + add[k]);
    }
    h->extra = (struct lt_extra){.data = (const uint8_t *)extra->p, .len = extra->len, .n = n + 3};
    return rc;
}

int lt_export_copy(const char *in_path, const struct lt_reader_opts *ro, const char *out_path,
                   struct lt_export_stats *st, struct lt_reader_stats *rs, struct lt_err *err)
{
    struct lt_export_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    memset(rs, 0, sizeof *rs);
    const char *const in[] = {in_path};
    struct lt_reader *r = NULL;
    struct lt_writer *w = NULL;
    struct lt_buf extra;
    lt_buf_init(&extra, 1 << 20);
    bool to_stdout = !strcmp(out_path, "-");
    int rc = lt_path_not_input(out_path, in, 1, err);
    if (rc < 0) {
        st->fault = LT_EXPORT_FAULT_WRITE;
        goto out;
    }
    /* The header is written first, and says what salvage skipped: a first
     * pass counts it (and reports each skip), the second copies. */
    struct lt_reader_opts quiet = ro ? *ro : (struct lt_reader_opts){0};
    if (quiet.salvage) {
        if (!(r = lt_reader_open(in_path, ro, err))) {
            rc = err && err->code ? err->code : LT_EIO;
            st->fault = LT_EXPORT_FAULT_READ;
            goto out;
        }
        const struct lt_item *it;
        while ((rc = lt_reader_next(r, &it, err)) == 1)
            ;
        lt_reader_stats(r, rs);
        lt_reader_close(r);
        r = NULL;
        if (rc < 0) {
            st->fault = LT_EXPORT_FAULT_READ;
            goto out;
        }
        quiet.on_skip = NULL;
    }
    if (!(r = lt_reader_open(in_path, &quiet, err))) {
        rc = err && err->code ? err->code : LT_EIO;
        st->fault = LT_EXPORT_FAULT_READ;
        goto out;
    }
    struct lt_header h;
    if ((rc = copy_header(lt_reader_header(r), rs, &h, &extra)) < 0) {
        lt_errset(err, rc, "%s: the header is too large", in_path);
        st->fault = LT_EXPORT_FAULT_ENCODE;
        goto out;
    }
    struct lt_writer_opts wo = {.level = 3};
    if (!(w = lt_writer_open(out_path, &h, &wo, err))) {
        rc = err && err->code ? err->code : LT_EIO;
        st->fault = LT_EXPORT_FAULT_WRITE;
        goto out;
    }
    const struct lt_item *it;
    while ((rc = lt_reader_next(r, &it, err)) == 1) {
        if ((rc = lt_writer_put_item(w, it, err)) < 0) {
            lt_errf(err, rc, "%s: value %" PRIu64, in_path, it->index);
            st->fault = LT_EXPORT_FAULT_WRITE;
            goto out;
        }
        st->records++;
    }
    if (rc < 0)
        st->fault = LT_EXPORT_FAULT_READ;
    if (!quiet.salvage)
        lt_reader_stats(r, rs);
out:
    if (w && lt_writer_close(w, rc < 0 ? &(struct lt_err){0} : err) < 0 && rc == 0) {
        rc = err && err->code ? err->code : LT_EIO;
        st->fault = LT_EXPORT_FAULT_WRITE;
    }
    if (w && rc < 0 && !to_stdout) {
        struct stat so;
        if (stat(out_path, &so) == 0 && S_ISREG(so.st_mode))
            unlink(out_path);
    }
    lt_reader_close(r);
    lt_buf_release(&extra);
    return rc < 0 ? rc : 0;
}

int lt_export_file(const char *in_path, enum lt_export_format f, FILE *out, const char *out_name,
                   struct lt_export_stats *st, struct lt_err *err)
{
    struct lt_export_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    struct lt_reader *r = lt_reader_open_kind(in_path, LT_KIND_TRACE, NULL, err);
    if (!r) {
        st->fault = LT_EXPORT_FAULT_READ;
        return err ? err->code : LT_EFORMAT;
    }
    int rc;
    if (f == LT_EXPORT_JSONL) {
        rc = lt_export_jsonl(r, true, in_path, out, out_name, st, err);
    } else {
        struct mooncake_export m = {{.block_tokens = lt_reader_header(r)->block_tokens}, st};
        struct lt_buf line;
        lt_buf_init(&line, (size_t)1 << 30);
        rc = export_lines(r, &line, mooncake_line, &m, in_path, out, out_name, st, err);
        lt_buf_release(&line);
    }
    lt_reader_close(r);
    return rc;
}

int lt_export_path(const char *in_path, enum lt_export_format f, const char *out_path,
                   struct lt_export_stats *st, struct lt_err *err)
{
    if (out_path && !strcmp(out_path, "-"))
        out_path = NULL;
    const char *out_name = out_path ? out_path : "standard output";
    struct stat so;
    if (out_path && strcmp(in_path, "-") && lt_path_same(in_path, out_path))
        return lt_errset(err, LT_EINVAL, "%s: the output is the input file", out_path);
    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "wb")))
        return lt_errset(err, LT_EIO, "%s: cannot create: %s", out_path, strerror(errno));
    int rc = lt_export_file(in_path, f, out, out_name, st, err);
    if (out != stdout && fclose(out) != 0 && rc == 0)
        rc = lt_errset(err, LT_EIO, "%s: close failed: %s", out_path, strerror(errno));
    /* Only a regular file is removed: not /dev/full or a pipe. */
    if (rc < 0 && out_path && stat(out_path, &so) == 0 && S_ISREG(so.st_mode))
        unlink(out_path);
    return rc;
}
