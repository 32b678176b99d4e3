/*
 * The binary min-heap (see lt_heap.h). Sifts move a hole rather than
 * swapping, so each level costs one copy and, for tracked items, one call
 * of `moved`.
 */
#include "base/lt_heap.h"

#include "base/lt_err.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void lt_heap_init(struct lt_heap *h, size_t size, lt_heap_less_fn less, lt_heap_moved_fn moved,
                  void *ctx)
{
    assert(size > 0 && size <= LT_HEAP_ITEM_MAX);
    *h = (struct lt_heap){.size = size, .less = less, .moved = moved, .ctx = ctx};
}

void lt_heap_release(struct lt_heap *h)
{
    free(h->items);
    h->items = NULL;
    h->len = h->cap = 0;
}

int lt_heap_reserve(struct lt_heap *h, size_t n)
{
    if (n <= h->cap)
        return 0;
    size_t nc = h->cap ? h->cap : 16;
    while (nc < n)
        nc = nc > SIZE_MAX / 2 ? n : 2 * nc;
    if (nc > SIZE_MAX / h->size)
        return LT_ENOMEM;
    unsigned char *ni = realloc(h->items, nc * h->size);
    if (!ni)
        return LT_ENOMEM;
    h->items = ni;
    h->cap = nc;
    return 0;
}

void *lt_heap_at(const struct lt_heap *h, size_t idx)
{
    return h->items + idx * h->size;
}

void *lt_heap_top(const struct lt_heap *h)
{
    return h->len ? h->items : NULL;
}

/* Put item at position i and tell its owner. */
static void place(struct lt_heap *h, size_t i, const void *item)
{
    void *dst = lt_heap_at(h, i);
    memcpy(dst, item, h->size);
    if (h->moved)
        h->moved(dst, i, h->ctx);
}

/* Item belongs at hole i or above it: move parents down until it fits.
 * Returns the position it ends at (not yet written). */
static size_t hole_up(struct lt_heap *h, size_t i, const void *item)
{
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!h->less(item, lt_heap_at(h, up), h->ctx))
            break;
        place(h, i, lt_heap_at(h, up));
        i = up;
    }
    return i;
}

/* Item belongs at hole i or below it: move the smaller child up until it
 * fits. */
static size_t hole_down(struct lt_heap *h, size_t i, const void *item)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->len)
            break;
        if (c + 1 < h->len && h->less(lt_heap_at(h, c + 1), lt_heap_at(h, c), h->ctx))
            c++;
        if (!h->less(lt_heap_at(h, c), item, h->ctx))
            break;
        place(h, i, lt_heap_at(h, c));
        i = c;
    }
    return i;
}

/* Settle item into hole i, up or down. */
static void settle(struct lt_heap *h, size_t i, const void *item)
{
    size_t j = hole_up(h, i, item);
    if (j == i)
        j = hole_down(h, i, item);
    place(h, j, item);
}

int lt_heap_push(struct lt_heap *h, const void *item)
{
    if (h->len == h->cap && lt_heap_reserve(h, h->len + 1) < 0)
        return LT_ENOMEM;
    unsigned char tmp[LT_HEAP_ITEM_MAX];
    memcpy(tmp, item, h->size);
    size_t i = h->len++;
    place(h, hole_up(h, i, tmp), tmp);
    return 0;
}

void lt_heap_remove(struct lt_heap *h, size_t idx, void *out)
{
    assert(idx < h->len);
    if (out)
        memcpy(out, lt_heap_at(h, idx), h->size);
    size_t last = --h->len;
    if (idx == last)
        return;
    unsigned char tmp[LT_HEAP_ITEM_MAX];
    memcpy(tmp, lt_heap_at(h, last), h->size);
    settle(h, idx, tmp);
}

bool lt_heap_pop(struct lt_heap *h, void *out)
{
    if (!h->len)
        return false;
    lt_heap_remove(h, 0, out);
    return true;
}

void lt_heap_fix(struct lt_heap *h, size_t idx)
{
    assert(idx < h->len);
    unsigned char tmp[LT_HEAP_ITEM_MAX];
    memcpy(tmp, lt_heap_at(h, idx), h->size);
    settle(h, idx, tmp);
}
