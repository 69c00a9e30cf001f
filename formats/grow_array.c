/* grow_array.c - doubling growth of a malloc'ed array (grow_array.h). It
 * never frees the old array, never writes *ptr or *cap on failure, and
 * checks every size it computes against SIZE_MAX before realloc sees it. */
#include "grow_array.h"

#include <stdint.h>
#include <stdlib.h>

int grow_array(void **ptr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    if (elem == 0)
        return -1;
    size_t nc = *cap ? *cap : first ? first : 1;
    if (nc > SIZE_MAX / elem)
        return -1;
    while (nc < need) {
        if (nc > SIZE_MAX / elem / 2)
            return -1; /* nc * 2 * elem would wrap */
        nc *= 2;
    }
    void *n = realloc(*ptr, nc * elem);
    if (!n)
        return -1;
    *ptr = n;
    *cap = nc;
    return 0;
}
