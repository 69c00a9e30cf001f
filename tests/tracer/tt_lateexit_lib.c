/* tt_lateexit_lib.c - a shared library tt_lateexit links: its destructor
 * runs after the tracer's at exit (libraries loaded before the preloaded
 * one are finalized after it) and writes 8 bytes to tt_lateexit_fd, as a
 * DB client library closing its connections would. Test code: never
 * writes anywhere else. */
#include <unistd.h>

int tt_lateexit_fd = -1;

__attribute__((destructor)) static void tt_lateexit_lib_fini(void)
{
    if (tt_lateexit_fd >= 0 && write(tt_lateexit_fd, "libfini\n", 8) != 8)
        _exit(3);
}
