/*
 * Estimated tokenization and keyed prefix-block hashes (capture_tokens.h
 * says the rule and why the hashes are keyed).
 */
#include "capture/capture_tokens.h"
#include "base/lt_tokens.h"

#include <stdlib.h>
#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t lt_capture_siphash(uint64_t k0, uint64_t k1, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575);
    uint64_t v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261);
    uint64_t v3 = k1 ^ UINT64_C(0x7465646279746573);
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le64(p + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)n << 56;
    for (size_t i = 0; i < n % 8; i++)
        b |= (uint64_t)p[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint32_t lt_capture_count_text(const char *s, size_t len)
{
    return lt_tokens_estimate(s, len);
}

void lt_capture_blocks_init(struct lt_capture_blocks *b, uint64_t k0, uint64_t k1,
                            uint32_t block_tokens)
{
    memset(b, 0, sizeof *b);
    b->k0 = k0;
    b->k1 = k1;
    b->block_tokens = block_tokens;
    /* A block is at most block_tokens pieces of at most 9 bytes plus the
     * previous hash, so the cap is never reached by honest input. */
    lt_buf_init(&b->cur, (size_t)block_tokens * 10 + 64);
}

void lt_capture_blocks_release(struct lt_capture_blocks *b)
{
    lt_buf_release(&b->cur);
    free(b->hashes);
    b->hashes = NULL;
    b->n = b->cap = 0;
}

static void close_block(struct lt_capture_blocks *b)
{
    uint64_t h = lt_capture_siphash(b->k0, b->k1, b->cur.p, b->cur.len) & LT_CAPTURE_HASH_MASK;
    if (b->n == b->cap) {
        uint32_t nc = b->cap ? 2 * b->cap : 16;
        uint64_t *nh = realloc(b->hashes, (size_t)nc * sizeof *nh);
        if (!nh) {
            b->oom = 1;
            return;
        }
        b->hashes = nh;
        b->cap = nc;
    }
    b->hashes[b->n++] = h;
    b->prev = h;
    b->ntok = 0;
    lt_buf_reset(&b->cur);
}

/* One token: its bytes, length-prefixed so that piece boundaries count. */
static void piece(struct lt_capture_blocks *b, const void *p, size_t n, unsigned char tag)
{
    b->total++;
    if (!b->block_tokens || b->oom)
        return;
    if (b->ntok == 0) {
        unsigned char prev[8];
        for (int i = 0; i < 8; i++)
            prev[i] = (unsigned char)(b->prev >> (8 * i));
        if (lt_buf_append(&b->cur, prev, 8) < 0)
            b->oom = 1;
    }
    unsigned char hdr = (unsigned char)(tag | n);
    if (lt_buf_append(&b->cur, &hdr, 1) < 0 || lt_buf_append(&b->cur, p, n) < 0) {
        b->oom = 1;
        return;
    }
    if (++b->ntok == b->block_tokens)
        close_block(b);
}

static void text_piece(void *ud, const char *p, size_t n)
{
    piece(ud, p, n, 0x00);
}

uint32_t lt_capture_blocks_text(struct lt_capture_blocks *b, const char *s, size_t len)
{
    uint32_t before = b->total;
    lt_tokens_each(s, len, text_piece, b);
    return b->total - before;
}

void lt_capture_blocks_marker(struct lt_capture_blocks *b, const char *name, uint32_t n)
{
    /* Markers are hashed from their name, so a role can never collide
     * with the text of a message. */
    uint64_t id = lt_capture_siphash(0, 0, name, strlen(name));
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = id + i;
        piece(b, &v, sizeof v, 0x40);
    }
}

void lt_capture_blocks_id(struct lt_capture_blocks *b, uint64_t id)
{
    piece(b, &id, sizeof id, 0x80);
}

uint64_t *lt_capture_blocks_take(struct lt_capture_blocks *b, uint32_t *n)
{
    uint64_t *h = b->hashes;
    *n = b->oom ? 0 : b->n;
    if (b->oom) {
        free(h);
        h = NULL;
    }
    b->hashes = NULL;
    b->n = b->cap = 0;
    return h;
}
