/*
 * Arrays that cost memory only where they are used: an anonymous mapping
 * with room for a whole trace (address space, not memory: MAP_NORESERVE),
 * whose pages the system provides, zero-filled, on first touch, and which
 * a caller walking the array in order gives back behind it. A streamed
 * replay holds its jobs and its per-request state this way
 * (plan/README.md "Streaming"): indexes keep their meaning while the
 * memory follows the window in use.
 *
 * A page given back reads as zeros again: whatever reads below the point
 * given back must not trust what it reads.
 */
#ifndef LT_VMEM_H
#define LT_VMEM_H

#include <stddef.h>

struct lt_vmem {
    void *p;      /* the array; NULL when mapping failed or after release */
    size_t len;   /* bytes mapped */
    size_t freed; /* leading bytes given back so far */
};

/* Room for len bytes (at least one page), zero-filled. Returns 0, or -1
 * (out of address space). */
int lt_vmem_map(struct lt_vmem *m, size_t len);
void lt_vmem_release(struct lt_vmem *m);
/* The whole pages below byte `below` go back to the system (they read as
 * zeros when touched again). */
void lt_vmem_give_back(struct lt_vmem *m, size_t below);
/* Every page back: the array reads as zeros, as freshly mapped. */
void lt_vmem_clear(struct lt_vmem *m);

#endif
