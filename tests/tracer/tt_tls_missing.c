/* tt_tls_missing.c - calls SSL_read through dlsym(RTLD_DEFAULT) with no
 * libssl loaded, for test_tls_labels.py: under the tracer the name finds
 * our wrapper, whose real function no loaded object defines, and the
 * process must abort saying which function (tracer_resolve_loaded_required)
 * instead of calling through a null pointer. Without the tracer there is
 * no SSL_read at all: exit 3. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    int (*ssl_read)(void *, void *, int) =
        (int (*)(void *, void *, int))dlsym(RTLD_DEFAULT, "SSL_read");
    if (!ssl_read) {
        fprintf(stderr, "tt_tls_missing: no SSL_read in this process\n");
        return 3;
    }
    char buf[16];
    return ssl_read(NULL, buf, (int)sizeof buf) < 0 ? 1 : 0;
}
