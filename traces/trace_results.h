/*
 * The one recorder of a results file's run and result records
 * (docs/trace-format.md §2.4-2.5): every engine that writes results (the
 * live replay, the virtual engine, the merge of an MPI job's parts)
 * describes a run or a request here and has it packed the same way, so a
 * key means the same thing, is spelled the same and holds the same value
 * whichever engine wrote it. Here, below both engines, because replay/
 * and sim/ may not include each other and both stand on traces/.
 *
 * What the struct lt_run and struct lt_result hold, the writer packs; what
 * they do not (the optional keys of §2.4-2.5 that the reader keeps among
 * the unknown ones), these functions pack into the record's extra.
 */
#ifndef LT_TRACE_RESULTS_H
#define LT_TRACE_RESULTS_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "traces/trace_format.h"
#include "traces/trace_media.h"
#include "traces/trace_writer.h"

#include <stdbool.h>
#include <stdint.h>

/* A run, as its run record says it. Keys are written in this order:
 * the MPI part's, the merge's, the calibration's, the fleet's, then the
 * caller's own (run.extra: an engine's keys, such as a live run's server
 * figures or an MPI rank's clock offset). */
struct lt_run_desc {
    struct lt_run run; /* start NULL: now; version NULL: this loadtrace's */
    /* The run record copied from other files (a merge): start and version
     * as run gives them, NULL absent. */
    bool copied;
    /* One part of an MPI job (its own file): parts > 1 writes "rank",
     * "ranks" and "planned" (the requests this part meant to send). */
    uint32_t part, parts;
    uint64_t planned;
    /* A merge of an MPI job's parts: "ranks", "merged_ranks",
     * "missing_ranks" (the ranks whose requests are missing, in part or
     * whole) and "missing_requests" (-1: not known). */
    bool merged;
    uint32_t ranks, merged_ranks;
    const uint32_t *missing_ranks;
    uint32_t n_missing;
    int64_t missing_requests;
    /* How the prompt lengths were made ("calib"; NULL: not said) and how
     * far off they may be ("calib_err", "calib_err_rel"; calib_err < 0:
     * not measured). */
    const char *calib;
    double calib_err, calib_err_rel;
    /* A fleet (n_replicas > 0): "replicas" (labels in index order),
     * "route" and "failover". */
    const char *const *replicas;
    uint32_t n_replicas;
    const char *route;
    bool failover;
};

/* A new results file at path, written by replay (the live or the virtual
 * engine, or a search of them): its header's meta the n string pairs
 * mk[i] = mv[i] (lt_meta_pack), block_tokens the trace's. opts may be
 * NULL. Returns NULL with err filled (its code never 0). */
struct lt_writer *lt_results_file(const char *path, const char *const *mk, const char *const *mv,
                                  size_t n, uint32_t block_tokens,
                                  const struct lt_writer_opts *opts, struct lt_err *err);

/* Write d's run record. Returns 0 or a negative LT_E* code. */
int lt_results_put_run(struct lt_writer *w, const struct lt_run_desc *d, struct lt_err *err);

/* How a result's chunks counted their tokens ("ctok"). */
enum lt_ctok { LT_CTOK_NONE = 0, LT_CTOK_ONE, LT_CTOK_USAGE };

/* A request's keys beyond struct lt_result, in the order written. */
struct lt_result_keys {
    enum lt_ctok ctok; /* "ctok": "one" or "usage"; written with chunks */
    uint32_t thin;     /* > 1: "thin" (lt_chunks_thin's k) */
    uint32_t retries;  /* > 0: "retries" */
    /* The trace record's media parts (n_media > 0): "img" and "img_tok"
     * (the image parts and their tokens as the record says), and, when
     * it has any, "aud", "vid" and "av_tok" (audio and video parts, their
     * tokens as recorded): analyze's modality split. */
    const struct lt_media *media;
    uint32_t n_media;
    uint32_t inputs; /* > 0: "inputs" (embeddings and rerank) */
    /* A fleet: "replica" (the replica that served it) and, when it
     * failed over, "failover_from". */
    bool has_replica, failed_over;
    uint32_t replica, failover_from;
    /* The server's own account of the request (llama-server's "timings"),
     * each only as the server said it: "srv_pf" and "srv_dec", its prefill
     * (admission to first token) and decode (first token to last) in us,
     * "srv_pf_n" and "srv_dec_n" their tokens, "srv_cache" the prompt
     * tokens it reused. */
    bool has_srv_pf, has_srv_pf_n, has_srv_dec, has_srv_dec_n, has_srv_cache;
    uint64_t srv_pf_us, srv_dec_us;
    uint32_t srv_pf_n, srv_dec_n, srv_cache;
};

/* k's keys packed into buf (reset first; the caller keeps it, so a run's
 * results reuse its memory), and *x pointing at them; with no key, *x is
 * empty. Returns 0 or LT_ENOMEM (then *x is empty). */
int lt_results_keys(const struct lt_result_keys *k, struct lt_buf *buf, struct lt_extra *x);

#endif
