/*
 * Keeps a server on loopback: preloaded into a process (LD_PRELOAD), it turns every bind() to
 * the wildcard address into a bind() to loopback: 0.0.0.0 becomes 127.0.0.1, :: becomes ::1.
 *
 * scripts/backend.sh loads it into seekdb, whose SQL port otherwise listens on every interface
 * (its listener binds INADDR_ANY and no option chooses the address) with a root account that
 * has no password. Built by scripts/backend.sh with the C compiler the Rust toolchain links
 * with: cc -shared -fPIC -O2 -o loopback-bind.so loopback-bind.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static bind_fn real_bind;

__attribute__((constructor)) static void find_bind(void) {
    real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    if (!real_bind) {
        find_bind();
        if (!real_bind) {
            errno = ENOSYS;
            return -1;
        }
    }
    if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in a;
        memcpy(&a, addr, sizeof a);
        if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&a, sizeof a);
        }
    } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 a;
        memcpy(&a, addr, sizeof a);
        if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr)) {
            a.sin6_addr = in6addr_loopback;
            return real_bind(fd, (const struct sockaddr *)&a, sizeof a);
        }
    }
    return real_bind(fd, addr, len);
}
