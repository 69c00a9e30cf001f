/* tracer_resolve.c - resolving the real functions behind our wrappers
 * (tracer_resolve.h).
 *
 * Runs on a wrapper's first call, possibly inside another library's
 * constructor: raw syscalls for messages, no stdio, no allocation of ours;
 * a function the app called that cannot be found aborts with its name. */
#include "tracer_resolve.h"

#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void *tracer_resolve(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        static const char msg[] = "preplay: cannot resolve a libc function; aborting\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        abort();
    }
    return p;
}

struct tracer_find_ctx {
    const char *names[64];
    size_t n;
    uintptr_t self_base;
    char store[64][256];
};

static int tracer_collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct tracer_find_ctx *c = arg;
    if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == c->self_base)
        return 0;
    if (c->n >= 64)
        return 1;
    size_t len = strnlen(info->dlpi_name, 255);
    memcpy(c->store[c->n], info->dlpi_name, len);
    c->store[c->n][len] = 0;
    c->names[c->n] = c->store[c->n];
    c->n++;
    return 0;
}

/* dlsym(RTLD_NEXT) misses a library loaded RTLD_LOCAL by dlopen (as Python
 * loads extension modules with their dependencies: libmariadb, libssl):
 * then ask each loaded object (other than us) whether it defines the
 * symbol. Runs once per function, never on the hot path. */
void *tracer_resolve_loaded(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p)
        return p;
    static struct tracer_find_ctx ctx; /* large: not on the app's stack */
    static _Atomic int ctx_lock;
    while (atomic_exchange_explicit(&ctx_lock, 1, memory_order_acquire))
        syscall(SYS_sched_yield);
    Dl_info self;
    memset(&ctx.names, 0, sizeof ctx.names);
    ctx.n = 0;
    ctx.self_base = 0;
    if (dladdr((void *)tracer_resolve_loaded, &self) && self.dli_fbase) {
        struct link_map *lm = NULL;
        void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
                ctx.self_base = lm->l_addr;
            dlclose(h);
        }
    }
    dl_iterate_phdr(tracer_collect_object, &ctx);
    for (size_t i = 0; i < ctx.n && !p; i++) {
        void *h = dlopen(ctx.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *q = dlsym(h, name);
        Dl_info where;
        /* skip our own definition (found through a dependency's scope) */
        if (q && !(dladdr(q, &where) && where.dli_fbase == self.dli_fbase))
            p = q;
        dlclose(h);
    }
    atomic_store_explicit(&ctx_lock, 0, memory_order_release);
    return p;
}

void *tracer_resolve_loaded_required(const char *name)
{
    void *p = tracer_resolve_loaded(name);
    if (!p) {
        /* nothing sane is left to call: say which function, without stdio */
        static const char head[] = "preplay: cannot find ",
                          tail[] = ", which the app called; aborting\n";
        syscall(SYS_write, 2, head, sizeof head - 1);
        syscall(SYS_write, 2, name, strlen(name));
        syscall(SYS_write, 2, tail, sizeof tail - 1);
        abort();
    }
    return p;
}
