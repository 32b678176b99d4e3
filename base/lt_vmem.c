/*
 * Lazily backed arrays (lt_vmem.h).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#include "base/lt_vmem.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int lt_vmem_map(struct lt_vmem *m, size_t len)
{
    memset(m, 0, sizeof *m);
    if (!len)
        len = 1;
    void *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    m->p = p;
    m->len = len;
    return 0;
}

void lt_vmem_release(struct lt_vmem *m)
{
    if (m->p)
        munmap(m->p, m->len);
    memset(m, 0, sizeof *m);
}

void lt_vmem_give_back(struct lt_vmem *m, size_t below)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (below > m->len)
        below = m->len;
    size_t bytes = below / page * page;
    if (m->p && bytes > m->freed) {
        madvise((char *)m->p + m->freed, bytes - m->freed, MADV_DONTNEED);
        m->freed = bytes;
    }
}

void lt_vmem_clear(struct lt_vmem *m)
{
    if (m->p)
        madvise(m->p, m->len, MADV_DONTNEED);
    m->freed = 0;
}
