/* interpose_process.c - process and thread lifecycle wrappers: thread
 * creation (to know each thread's parent), fork and vfork (each process
 * gets its own stream), and the exec family and posix_spawn (tracing
 * continues in the new image: our variables are put back into an
 * environment that lost them; see docs/tracer.md for what that means). */
#include <dlfcn.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose_file.h"
#include "tracer_core.h"

TRACER_REAL(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
TRACER_REAL(pid_t, fork, (void))
TRACER_REAL(int, execve, (const char *, char *const[], char *const[]))
TRACER_REAL(int, execvpe, (const char *, char *const[], char *const[]))
TRACER_REAL(int, posix_spawn,
            (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
             char *const[], char *const[]))
TRACER_REAL(int, posix_spawnp,
            (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
             char *const[], char *const[]))

extern char **environ;

/* ---- threads ------------------------------------------------------------ */

struct tracer_trampoline {
    void *(*fn)(void *);
    void *arg;
    uint32_t parent_tid;
};

static void *tracer_thread_main(void *p)
{
    struct tracer_trampoline tr = *(struct tracer_trampoline *)p;
    free(p);
    tracer_set_parent_tid(tr.parent_tid);
    tracer_note_thread_start();
    return tr.fn(tr.arg);
}

TRACER_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                                 void *arg)
{
    if (!tracer_global.active)
        return tracer_real_pthread_create()(th, attr, fn, arg);
    struct tracer_trampoline *tr = malloc(sizeof *tr);
    if (!tr)
        return tracer_real_pthread_create()(th, attr, fn, arg);
    tr->fn = fn;
    tr->arg = arg;
    tr->parent_tid = tracer_gettid();
    int rc = tracer_real_pthread_create()(th, attr, tracer_thread_main, tr);
    if (rc != 0)
        free(tr);
    return rc;
}

/* ---- fork ----------------------------------------------------------------- */

static void tracer_fork_event(pid_t child)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_ALL);
    if (!t)
        return;
    uint64_t now = tracer_event_begin(t);
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_CONTROL, TRACE_CTL_FORK, now, now);
    if (ev) {
        ev->u.control.arg0 = child;
        tracer_commit(t);
    }
    tracer_event_end(t, now);
}

TRACER_EXPORT pid_t fork(void)
{
    tracer_open_settle_if(&tracer_tls, -1, NULL); /* the child inherits the settled entry */
    pid_t pid = tracer_real_fork()();
    int err = errno;
    if (pid == 0)
        tracer_after_fork_child();
    else if (pid > 0)
        tracer_fork_event(pid);
    errno = err;
    return pid;
}

/* vfork's child borrows the parent's memory, where our per-thread state
 * and rings live; a traced call in that child would write into the
 * parent's stream. fork is a valid implementation of vfork, so use it. */
TRACER_EXPORT pid_t vfork(void)
{
    return fork();
}

/* ---- exec: keep the tracer in the new image -------------------------------- */

#define TRACER_ENV_MAX 4096

static const char *tracer_env_names[] = {"LD_PRELOAD=", "PREPLAY_COLLECTOR=", "PREPLAY_COMPONENT="};

static char tracer_saved_env[3][4096];
static char tracer_exec_pid_env[64];

/* Captured at load so exec can restore them even after the app cleared
 * its environment. */
__attribute__((constructor)) static void tracer_process_init(void)
{
    for (int i = 0; i < 3; i++) {
        size_t nl = strlen(tracer_env_names[i]);
        for (char **e = environ; e && *e; e++)
            if (!strncmp(*e, tracer_env_names[i], nl)) {
                snprintf(tracer_saved_env[i], sizeof tracer_saved_env[i], "%s", *e);
                break;
            }
    }
}

/* Builds in out[] an environment equal to envp plus our variables where
 * envp lacks them (LD_PRELOAD gets our library prepended when it has other
 * entries but not ours). Returns out, or envp unchanged when there is
 * nothing to add or no room. */
static char *const *tracer_exec_env(char *const envp[], char **out, char *preload_buf,
                                    size_t preload_cap)
{
    if (!tracer_global.active || !tracer_saved_env[1][0])
        return envp;
    size_t n = 0;
    while (envp && envp[n])
        n++;
    if (n + 5 > TRACER_ENV_MAX)
        return envp;
    int have[3] = {0, 0, 0};
    size_t k = 0;
    const char *ours = tracer_saved_env[0] + strlen("LD_PRELOAD=");
    for (size_t i = 0; i < n; i++) {
        const char *e = envp[i];
        if (!strncmp(e, "PREPLAY_EXEC_PID=", 17))
            continue;
        for (int j = 0; j < 3; j++)
            if (!strncmp(e, tracer_env_names[j], strlen(tracer_env_names[j])))
                have[j] = 1;
        if (!strncmp(e, "LD_PRELOAD=", 11) && tracer_saved_env[0][0] && !strstr(e + 11, ours)) {
            snprintf(preload_buf, preload_cap, "LD_PRELOAD=%s:%s", ours, e + 11);
            out[k++] = preload_buf;
            continue;
        }
        out[k++] = (char *)e;
    }
    for (int j = 0; j < 3; j++)
        if (!have[j] && tracer_saved_env[j][0])
            out[k++] = tracer_saved_env[j];
    snprintf(tracer_exec_pid_env, sizeof tracer_exec_pid_env, "PREPLAY_EXEC_PID=%ld",
             (long)syscall(SYS_getpid));
    out[k++] = tracer_exec_pid_env;
    out[k] = NULL;
    return out;
}

TRACER_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    static char *env[TRACER_ENV_MAX + 8];
    static char preload[8192];
    tracer_before_exec(path);
    return tracer_real_execve()(path, argv, tracer_exec_env(envp, env, preload, sizeof preload));
}

TRACER_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

TRACER_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static char *env[TRACER_ENV_MAX + 8];
    static char preload[8192];
    tracer_before_exec(file);
    return tracer_real_execvpe()(file, argv, tracer_exec_env(envp, env, preload, sizeof preload));
}

TRACER_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* execl* take their arguments inline: gather them into an array. */
#define TRACER_MAX_ARGS 4096
#define TRACER_COLLECT_ARGS(first, extra_env)                                                      \
    char *args[TRACER_MAX_ARGS + 1];                                                               \
    size_t nargs = 0;                                                                              \
    va_list ap;                                                                                    \
    va_start(ap, first);                                                                           \
    args[nargs++] = (char *)first;                                                                 \
    while (nargs < TRACER_MAX_ARGS && (args[nargs] = va_arg(ap, char *)) != NULL)                  \
        nargs++;                                                                                   \
    args[nargs] = NULL;                                                                            \
    extra_env;                                                                                     \
    va_end(ap);

TRACER_EXPORT int execl(const char *path, const char *arg, ...)
{
    TRACER_COLLECT_ARGS(arg, (void)0)
    return execve(path, args, environ);
}

TRACER_EXPORT int execlp(const char *file, const char *arg, ...)
{
    TRACER_COLLECT_ARGS(arg, (void)0)
    return execvpe(file, args, environ);
}

TRACER_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    TRACER_COLLECT_ARGS(arg, envp = va_arg(ap, char *const *))
    return execve(path, args, envp);
}

/* posix_spawn runs its child with glibc's internal exec, which we cannot
 * see: the environment fix-up happens here instead. The spawned process
 * registers itself when our library loads in it. */
TRACER_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                              const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    char **env = malloc(sizeof(char *) * (TRACER_ENV_MAX + 8));
    char *preload = malloc(8192);
    char *const *use = (env && preload) ? tracer_exec_env(envp, env, preload, 8192) : envp;
    int rc = tracer_real_posix_spawn()(pid, path, fa, attr, argv, use);
    if (rc == 0 && pid)
        tracer_fork_event(*pid);
    free(env);
    free(preload);
    return rc;
}

TRACER_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                               const posix_spawnattr_t *attr, char *const argv[],
                               char *const envp[])
{
    char **env = malloc(sizeof(char *) * (TRACER_ENV_MAX + 8));
    char *preload = malloc(8192);
    char *const *use = (env && preload) ? tracer_exec_env(envp, env, preload, 8192) : envp;
    int rc = tracer_real_posix_spawnp()(pid, file, fa, attr, argv, use);
    if (rc == 0 && pid)
        tracer_fork_event(*pid);
    free(env);
    free(preload);
    return rc;
}
