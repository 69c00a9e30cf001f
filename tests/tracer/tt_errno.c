/* tt_errno.c - failing (and a few succeeding) calls of every interposed
 * family, printing each call's return value and errno. test_errno.py runs
 * it with and without the tracer: the outputs must be identical, since
 * the tracer must never change a result or errno. Prints no pids, paths
 * or times, only what must not differ. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SHOW(name, call)                                                                           \
    do {                                                                                           \
        errno = 12345;                                                                             \
        long r_ = (long)(call);                                                                    \
        int e_ = errno;                                                                            \
        printf("%-28s ret=%ld errno=%d (%s)\n", name, r_, e_,                                      \
               e_ == 12345 ? "untouched" : strerror(e_));                                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_errno SCRATCHDIR\n");
        return 2;
    }
    char path[4096], missing[4096];
    snprintf(path, sizeof path, "%s/ro.txt", argv[1]);
    snprintf(missing, sizeof missing, "%s/no/such/file", argv[1]);
    char buf[64] = "hello";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    SHOW("write ok", write(fd, buf, 5));
    close(fd);
    int ro = open(path, O_RDONLY);
    int p[2];
    if (pipe(p) != 0)
        return 1;
    struct iovec iov = {buf, 4};

    SHOW("open missing", open(missing, O_RDONLY));
    SHOW("openat bad dirfd", openat(9999, "x", O_RDONLY));
    SHOW("creat in missing dir", creat(missing, 0644));
    SHOW("read bad fd", read(9999, buf, 4));
    SHOW("read -1", read(-1, buf, 4));
    SHOW("write read-only fd", write(ro, buf, 4));
    SHOW("pread on pipe", pread(p[0], buf, 4, 0));
    SHOW("pwrite bad fd", pwrite(9999, buf, 4, 0));
    volatile int bad_count = -1;
    SHOW("readv bad iovcnt", readv(ro, &iov, bad_count));
    SHOW("writev read-only", writev(ro, &iov, 1));
    SHOW("preadv2 bad flags", preadv2(ro, &iov, 1, 0, 0x7fffffff));
    SHOW("lseek on pipe", lseek(p[0], 0, SEEK_SET));
    SHOW("lseek bad whence", lseek(ro, 0, 99));
    SHOW("fsync on pipe", fsync(p[0]));
    SHOW("fdatasync bad fd", fdatasync(9999));
    SHOW("ftruncate read-only", ftruncate(ro, 0));
    SHOW("close bad fd", close(9999));
    SHOW("dup bad fd", dup(9999));
    SHOW("dup2 bad fd", dup2(9999, 50));
    SHOW("fcntl F_DUPFD bad", fcntl(9999, F_DUPFD, 0));
    SHOW("sendfile to bad fd", sendfile(9999, ro, NULL, 4));
    SHOW("sendfile to read-only", sendfile(ro, ro, NULL, 4));
    SHOW("copy_file_range bad", copy_file_range(9999, NULL, ro, NULL, 4, 0));
    SHOW("flock bad fd", flock(9999, LOCK_EX));
    SHOW("flock bad op", flock(ro, 12345));
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    SHOW("F_SETLK write on ro", fcntl(ro, F_SETLK, &fl));
    SHOW("F_OFD_SETLK nonzero pid", (fl.l_pid = 1, fcntl(ro, F_OFD_SETLK, &fl)));
    SHOW("read ok", read(ro, buf, sizeof buf));
    SHOW("read at EOF", read(ro, buf, sizeof buf));

    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    bind(l, (struct sockaddr *)&a, sizeof a);
    getsockname(l, (struct sockaddr *)&a, &alen);
    close(l); /* the port is closed now */
    SHOW("connect closed port", connect(s, (struct sockaddr *)&a, sizeof a));
    SHOW("send unconnected", send(s, buf, 4, MSG_NOSIGNAL));
    SHOW("recv unconnected", recv(s, buf, 4, MSG_DONTWAIT));
    SHOW("recv on a file", recv(ro, buf, 4, 0));
    SHOW("sendto bad fd", sendto(9999, buf, 4, 0, NULL, 0));
    SHOW("accept not listening", accept(s, NULL, NULL));
    SHOW("shutdown not connected", shutdown(s, SHUT_RDWR));
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    SHOW("sendmsg unconnected", sendmsg(s, &mh, MSG_NOSIGNAL));
    SHOW("recvmsg nonblocking", recvmsg(s, &mh, MSG_DONTWAIT));
    int one = 1;
    SHOW("setsockopt bad level", setsockopt(s, 9999, 1, &one, sizeof one));
    close(s);

    static pthread_mutex_t em = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    SHOW("unlock unowned (errno kept)", pthread_mutex_unlock(&em));
    SHOW("lock errorcheck", pthread_mutex_lock(&em));
    SHOW("trylock held", pthread_mutex_trylock(&em));
    SHOW("unlock", pthread_mutex_unlock(&em));
    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    SHOW("rwlock wrlock", pthread_rwlock_wrlock(&rw));
    SHOW("rwlock tryrdlock busy", pthread_rwlock_tryrdlock(&rw));

    char *args[] = {missing, NULL};
    pid_t pid;
    SHOW("posix_spawn missing", posix_spawn(&pid, missing, NULL, NULL, args, NULL));
    SHOW("execve missing", execve(missing, args, NULL));
    SHOW("execvp missing", execvp("preplay-no-such-command", args));
    return 0;
}
