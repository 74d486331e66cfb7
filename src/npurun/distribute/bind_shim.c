/* npurun's bind narrowing (LD_PRELOAD): a bind() of a wildcard address becomes a bind of the job's
 * own address. Built and loaded by npurun/distribute/bind_narrow.py; see its docstring.
 *
 * NPURUN_BIND_ADDRESS (read once, at the first bind) names the address: an IPv4 or IPv6 literal.
 *   AF_INET  INADDR_ANY  -> the IPv4 address (an IPv6 job address: unchanged)
 *   AF_INET6 in6addr_any -> the IPv6 address, or ::ffff:a.b.c.d for an IPv4 job address
 * The port (0 included: the kernel still picks one) is kept. Any other bind, or no valid
 * NPURUN_BIND_ADDRESS, or NPURUN_BIND_ANY=1, passes through unchanged to the real bind. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bind_fn real_bind;
static int have4, have6;          /* which job address was given */
static struct in_addr job4;       /* IPv4 job address */
static struct in6_addr job6;      /* IPv6 job address, or ::ffff:a.b.c.d of the IPv4 one */

/* Exported so a process can check the shim is loaded (ctypes: CDLL(None).npurun_bind_narrowing). */
static void setup(void);
/* 1 when binds are narrowed (a job address is set), 0 when loaded but passing through. */
int npurun_bind_narrowing(void) { pthread_once(&once, setup); return have4 || have6; }

static void setup(void) {
    real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    const char *off = getenv("NPURUN_BIND_ANY");
    if (off && strcmp(off, "1") == 0) return;
    const char *text = getenv("NPURUN_BIND_ADDRESS");
    if (!text || !*text) return;
    if (inet_pton(AF_INET, text, &job4) == 1) {
        have4 = 1;
        memset(&job6, 0, sizeof job6);
        job6.s6_addr[10] = 0xff;
        job6.s6_addr[11] = 0xff;
        memcpy(&job6.s6_addr[12], &job4, 4);
    } else if (inet_pton(AF_INET6, text, &job6) == 1) {
        have6 = 1;
    }
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    pthread_once(&once, setup);
    if (!real_bind) return -1;
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in) && have4) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        if (in->sin_addr.s_addr == htonl(INADDR_ANY)) {
            struct sockaddr_in narrowed = *in;
            narrowed.sin_addr = job4;
            return real_bind(fd, (const struct sockaddr *)&narrowed, sizeof narrowed);
        }
    } else if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)
               && (have4 || have6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
        if (memcmp(&in6->sin6_addr, &in6addr_any, sizeof in6addr_any) == 0) {
            struct sockaddr_in6 narrowed = *in6;
            narrowed.sin6_addr = job6;
            return real_bind(fd, (const struct sockaddr *)&narrowed, sizeof narrowed);
        }
    }
    return real_bind(fd, addr, len);
}
