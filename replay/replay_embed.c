/*
 * Embeddings and rerank request bodies (replay_prompt.h): the record's
 * shape as inputs of synthesized words, as chat prompts are made, with no
 * template (these APIs have none) and no output.
 */
#include "replay/replay_prompt.h"

#include "base/lt_json.h"

#include <math.h>
#include <string.h>

/* Words for t tokens by the calibration (at least one). */
static uint32_t words(const struct lt_replay_build *b, double t)
{
    double tpw = b->calib.tok_per_word > 0 ? b->calib.tok_per_word : 1.0;
    double w = floor(t / tpw + 0.5);
    return w < 1 ? 1 : w > 4e6 ? 4000000u : (uint32_t)w;
}

static int text(struct lt_buf *out, const struct lt_replay_build *b, const struct lt_plan_job *job,
                uint32_t *pos, uint32_t tokens)
{
    uint32_t n = words(b, tokens);
    int rc = lt_buf_puts(out, "\"");
    if (rc == 0)
        rc = lt_replay_words(out, b, job, *pos, n);
    *pos += n;
    return rc ? rc : lt_buf_puts(out, "\"");
}

int lt_replay_embed_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_plan_job *job, uint32_t *want_in, uint32_t *want_out)
{
    int rc = 0;
    lt_buf_reset(out);
    *want_out = 0;
    uint32_t pos = 0;
    uint64_t want = 0;
    LT_TRY(lt_buf_puts(out, "{\"model\":"));
    LT_TRY(lt_json_str(out, b->model ? b->model : "", b->model ? strlen(b->model) : 0));
    uint32_t in = job->in ? job->in : 1;
    if (b->api == LT_REPLAY_API_EMBEDDINGS) {
        LT_TRY(lt_buf_puts(out, ",\"input\":["));
        if (!job->n_msgs) {
            LT_TRY(text(out, b, job, &pos, in));
            want = in;
        }
        for (uint32_t i = 0; i < job->n_msgs; i++) {
            uint32_t t = job->msgs[i].tokens ? job->msgs[i].tokens : 1;
            if (i)
                LT_TRY(lt_buf_puts(out, ","));
            LT_TRY(text(out, b, job, &pos, t));
            want += t;
        }
        LT_TRY(lt_buf_puts(out, "]}"));
    } else {
        /* the query: the message named so, or an eighth of the prompt */
        uint32_t q = 0, docs = 0;
        for (uint32_t i = 0; i < job->n_msgs; i++)
            if (!strcmp(job->msgs[i].role, "query"))
                q = job->msgs[i].tokens;
            else
                docs++;
        if (!q)
            q = in / 8 ? in / 8 : 1;
        LT_TRY(lt_buf_puts(out, ",\"query\":"));
        LT_TRY(text(out, b, job, &pos, q));
        LT_TRY(lt_buf_puts(out, ",\"documents\":["));
        if (!docs) {
            uint32_t d = in > q ? in - q : 1;
            LT_TRY(text(out, b, job, &pos, d));
            want = (uint64_t)q + d;
        }
        uint32_t k = 0;
        for (uint32_t i = 0; i < job->n_msgs; i++) {
            if (!strcmp(job->msgs[i].role, "query"))
                continue;
            uint32_t d = job->msgs[i].tokens ? job->msgs[i].tokens : 1;
            if (k++)
                LT_TRY(lt_buf_puts(out, ","));
            LT_TRY(text(out, b, job, &pos, d));
            want += (uint64_t)q + d; /* a cross-encoder reads the query with each */
        }
        LT_TRY(lt_buf_puts(out, "]}"));
    }
    *want_in = want > UINT32_MAX ? UINT32_MAX : (uint32_t)want;
out:
    return rc;
}
