/*
 * Exporters (see trace_export.h for what each format keeps and drops).
 * Both stream: one record in, one line out, so memory does not grow with
 * the trace.
 */
#include "traces/trace_export.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

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

int lt_export_file(const char *in_path, enum lt_export_format f, FILE *out, const char *out_name,
                   struct lt_export_stats *st, struct lt_err *err)
{
    int rc = 0, n = 0;
    struct lt_export_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    struct lt_buf line;
    lt_buf_init(&line, (size_t)1 << 30);
    struct lt_reader *r = lt_reader_open_kind(in_path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EFORMAT;
    const struct lt_header *h = lt_reader_header(r);
    struct lt_mooncake_state ms = {.block_tokens = h->block_tokens};
    if (f == LT_EXPORT_JSONL) {
        if ((rc = lt_json_header(&line, h)) < 0 || (rc = lt_buf_append(&line, "\n", 1)) < 0) {
            lt_errset(err, rc, "%s: header too large", in_path);
            goto out;
        }
    }
    const struct lt_item *it;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if (f == LT_EXPORT_JSONL) {
            if ((rc = lt_json_record(&line, &it->rec)) < 0 ||
                (rc = lt_buf_append(&line, "\n", 1)) < 0) {
                lt_errset(err, rc, "%s: record %" PRIu64 ": too large", in_path, it->index);
                goto out;
            }
        } else if ((rc = lt_export_mooncake_line(&line, &it->rec, &ms, st, err)) < 0) {
            lt_errf(err, rc, "%s", in_path);
            goto out;
        }
        st->records++;
        if (line.len >= 1 << 16) {
            if (fwrite(line.p, 1, line.len, out) != line.len) {
                rc = lt_errset(err, LT_EIO, "%s: write failed: %s", out_name, strerror(errno));
                goto out;
            }
            lt_buf_reset(&line);
        }
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    if ((line.len && fwrite(line.p, 1, line.len, out) != line.len) || fflush(out) != 0)
        rc = lt_errset(err, LT_EIO, "%s: write failed: %s", out_name, strerror(errno));
out:
    lt_buf_release(&line);
    lt_reader_free(r);
    return rc;
}
