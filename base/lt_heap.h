/*
 * A binary min-heap of fixed-size items, the one priority queue every layer
 * uses: the synthesizer's sessions by next turn, the sim server's timers,
 * the replay plan's session turns and retries (both engines' due times).
 *
 * Items are copied in (any size up to LT_HEAP_ITEM_MAX bytes: a pointer, or
 * a small struct such as {time, index}). The order is the caller's `less`;
 * give it a tie-break (a sequence number) when equal keys must pop in a
 * known order, since a heap is not stable. A caller that needs to change or
 * remove an item already in the heap passes `moved`: it is called with the
 * item and its new position every time an item lands at a position (push,
 * pop, fix, remove), so the item's owner can keep a back-pointer for
 * lt_heap_fix and lt_heap_remove.
 */
#ifndef LT_HEAP_H
#define LT_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#define LT_HEAP_ITEM_MAX 64

/* True if item a must pop before item b. ctx is the heap's. */
typedef bool (*lt_heap_less_fn)(const void *a, const void *b, void *ctx);
/* Item now sits at position idx (for callers that keep back-pointers). */
typedef void (*lt_heap_moved_fn)(void *item, size_t idx, void *ctx);

struct lt_heap {
    unsigned char *items;
    size_t len, cap, size;
    lt_heap_less_fn less;
    lt_heap_moved_fn moved; /* NULL: nobody tracks positions */
    void *ctx;
};

/* An empty heap of items of `size` bytes (1..LT_HEAP_ITEM_MAX); allocates
 * nothing. moved may be NULL. */
void lt_heap_init(struct lt_heap *h, size_t size, lt_heap_less_fn less, lt_heap_moved_fn moved,
                  void *ctx);
/* Free the storage; the heap is empty and may be used again. */
void lt_heap_release(struct lt_heap *h);
/* Make room for n items in all, so that pushes up to n cannot fail.
 * Returns 0 or LT_ENOMEM. */
int lt_heap_reserve(struct lt_heap *h, size_t n);
/* Copy item in. Returns 0 or LT_ENOMEM (the heap is unchanged). */
int lt_heap_push(struct lt_heap *h, const void *item);
/* The first item (valid until the heap next changes), or NULL when empty. */
void *lt_heap_top(const struct lt_heap *h);
/* The item at position idx (idx < lt_heap_len), for fix-ups in place. */
void *lt_heap_at(const struct lt_heap *h, size_t idx);
/* Copy the first item to out (if not NULL) and remove it. Returns false when
 * the heap is empty. */
bool lt_heap_pop(struct lt_heap *h, void *out);
/* Remove the item at position idx, copying it to out if not NULL. */
void lt_heap_remove(struct lt_heap *h, size_t idx, void *out);
/* The item at position idx changed its key: move it to its place. */
void lt_heap_fix(struct lt_heap *h, size_t idx);

static inline size_t lt_heap_len(const struct lt_heap *h)
{
    return h->len;
}

#endif
