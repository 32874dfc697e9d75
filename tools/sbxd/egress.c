/* SPDX-License-Identifier: MIT */
/*
 * egress: an HTTP proxy (CONNECT, and absolute-form plain HTTP) that an
 * isolated sandbox reaches at 127.0.0.1:3128 inside its own network namespace:
 * the listening socket is made there by sbxd-init and handed to sbxd, which
 * accepts on it and connects out from the host. It is the sandbox's only
 * route out, so the policy decided here is the policy in force:
 *
 *  - deny-all refuses everything;
 *  - custom allows a host whose name matches allowedDomains or any of whose
 *    addresses is in allowedCIDRs; addresses in deniedCIDRs are never used;
 *  - loopback, link-local and unspecified addresses, and every address of
 *    the host's own interfaces, are refused unless an allowedCIDR names
 *    them, so an allowed name that resolves to the host (DNS rebinding, a
 *    "localhost" entry) cannot reach services listening on it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/alloc.h"
#include "mitm.h"
#include "relay.h"
#include "sbxd.h"

#define HEAD_MAX 16384
#define HEAD_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000

struct egress {
    struct sandbox *s;
    int listen_fd;
    pthread_t thread;
};

static void respond(int fd, int status, const char *reason, const char *msg)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     status, reason, strlen(msg), msg);
    (void)!send(fd, buf, (size_t)n, MSG_NOSIGNAL);
}

/* Read until the end of the request head; returns its length (including
 * the blank line) with any bytes after it also in buf[0..*got). */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *got)
{
    /* The whole head within HEAD_TIMEOUT_MS, not each read: a byte every
     * 29 s would hold the connection (and its thread) forever. */
    int64_t deadline = mono_ms() + HEAD_TIMEOUT_MS;
    *got = 0;
    while (*got < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left = deadline - mono_ms();
        char *end;
        ssize_t r;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        r = read(fd, buf + *got, cap - *got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        *got += (size_t)r;
        buf[*got < cap ? *got : cap - 1] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) != NULL)
            return end + 4 - buf;
    }
    return -1;
}

/* The prefix length of the special block (loopback, unspecified,
 * link-local) holding a, or 0 when a is in none. */
static int special_block(int family, const unsigned char *a)
{
    static const unsigned char v6_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char v6_any[16] = {0};
    if (family == AF_INET)
        return a[0] == 127 || a[0] == 0 ? 8 : a[0] == 169 && a[1] == 254 ? 16 : 0;
    return memcmp(a, v6_loop, 16) == 0 || memcmp(a, v6_any, 16) == 0 ? 128
           : a[0] == 0xfe && (a[1] & 0xc0) == 0x80                     ? 10
                                                                       : 0;
}

static bool special_addr(int family, const unsigned char *a)
{
    return special_block(family, a) != 0;
}

/* The host's own addresses, re-read at most every few seconds: interfaces
 * come and go (DHCP, VPNs). As many as the host has. */
#define HOSTADDR_TTL_MS 5000
struct hostaddr {
    unsigned char family;
    unsigned char a[16];
};
static pthread_mutex_t hostaddr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hostaddr *hostaddr;
static size_t nhostaddr, caphostaddr;
static int64_t hostaddr_at;

static void hostaddr_refresh(void)
{
    struct ifaddrs *ifs, *i;
    if (getifaddrs(&ifs) != 0)
        return; /* keep the list we have */
    nhostaddr = 0;
    for (i = ifs; i; i = i->ifa_next) {
        int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        if (nhostaddr == caphostaddr) {
            size_t cap = caphostaddr ? caphostaddr * 2 : 64;
            struct hostaddr *p = sbx__realloc(hostaddr, cap * sizeof *p);
            if (!p)
                break;
            hostaddr = p;
            caphostaddr = cap;
        }
        hostaddr[nhostaddr].family = (unsigned char)fam;
        if (fam == AF_INET)
            memcpy(hostaddr[nhostaddr++].a, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
        else
            memcpy(hostaddr[nhostaddr++].a, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
    }
    freeifaddrs(ifs);
    hostaddr_at = mono_ms();
}

static bool host_addr(int family, const unsigned char *a)
{
    bool found = false;
    pthread_mutex_lock(&hostaddr_lock);
    if (mono_ms() - hostaddr_at > HOSTADDR_TTL_MS || hostaddr_at == 0)
        hostaddr_refresh();
    for (size_t k = 0; k < nhostaddr && !found; k++)
        found = hostaddr[k].family == family && memcmp(hostaddr[k].a, a, family == AF_INET ? 4 : 16) == 0;
    pthread_mutex_unlock(&hostaddr_lock);
    return found;
}

bool egress_is_host_addr(int family, const void *addr)
{
    unsigned char v4[4];
    const unsigned char *a = addr;
    if (family == AF_INET6 && memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
        memcpy(v4, a + 12, 4);
        family = AF_INET;
        a = v4;
    }
    return special_addr(family, a) || host_addr(family, a);
}

void egress_shutdown(void)
{
    pthread_mutex_lock(&hostaddr_lock);
    sbx__free(hostaddr);
    hostaddr = NULL;
    nhostaddr = caphostaddr = 0;
    pthread_mutex_unlock(&hostaddr_lock);
}

/* Decide one resolved address; g.lock held. */
static bool addr_allowed(const struct netpolicy *p, bool name_ok, int family, const void *addr)
{
    unsigned char v4[4];
    const unsigned char *a = addr;
    int verdict;

    /* Judge an IPv4-mapped IPv6 address as the IPv4 address it is. */
    if (family == AF_INET6 && memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
        memcpy(v4, a + 12, 4);
        family = AF_INET;
        a = v4;
    }
    if (p->mode == NP_DENY_ALL)
        return false;
    /* 0.0.0.0/8 and :: are not addresses of anything: a connect to them
     * lands on this host's loopback. Never, whatever a CIDR says. */
    if ((family == AF_INET && a[0] == 0) ||
        (family == AF_INET6 && memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) == 0))
        return false;
    if (egress_is_host_addr(family, a)) {
        /* The host is reached only through an allowedCIDRs entry that names
         * it: one inside its special block (127.0.0.0/8 for loopback), or
         * the interface address itself. A wide range written to mean "the
         * internet" (0.0.0.0/0, 10.0.0.0/8 around the host's address) does
         * not open the host's services, nor a name that resolves there. */
        int block = special_block(family, a);
        return netpolicy_addr_verdict_within(p, family, a, block ? block : family == AF_INET ? 32 : 128) > 0;
    }
    verdict = netpolicy_addr_verdict(p, family, a);
    if (verdict != 0)
        return verdict > 0;
    return p->mode == NP_ALLOW_ALL || name_ok;
}

static int connect_timeout(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct pollfd p;
    int err = 0;
    socklen_t len = sizeof err;

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
        goto fail;
    p.fd = fd;
    p.events = POLLOUT;
    if (poll(&p, 1, CONNECT_TIMEOUT_MS) <= 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)
        goto fail;
    /* Back to blocking for the relay. */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

static bool is_localhost(const char *host)
{
    size_t n = strlen(host);
    return strcmp(host, "localhost") == 0 || (n > 10 && strcmp(host + n - 10, ".localhost") == 0);
}

/* Connect to host:port if the sandbox's policy allows it. Returns the fd, or
 * -1 with an HTTP status and message for the client. */
static int open_upstream(struct sandbox *s, const char *host, const char *port, int *status,
                         char *msg, size_t msglen)
{
    struct addrinfo hints, *res = NULL, *ai;
    bool name_ok, any_allowed = false;
    unsigned char lit[16];
    bool literal = inet_pton(AF_INET, host, lit) == 1 || inet_pton(AF_INET6, host, lit) == 1;
    int fd = -1, rc;
    const char *lookup = host;

    pthread_mutex_lock(&g.lock);
    name_ok = !literal && s->policy && netpolicy_domain_allowed(s->policy, host);
    if (!s->policy || s->policy->mode == NP_DENY_ALL ||
        (s->policy->mode == NP_CUSTOM && !name_ok && s->policy->nallow == 0)) {
        pthread_mutex_unlock(&g.lock);
        *status = 403;
        snprintf(msg, msglen, "sbxd: the sandbox's network policy does not allow %s\n", host);
        return -1;
    }
    pthread_mutex_unlock(&g.lock);

    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = literal ? AI_NUMERICHOST : 0;
    if (is_localhost(host)) {
        /* Loopback by definition (RFC 6761), whatever /etc/hosts says or
         * lacks: never asked of a resolver. */
        lookup = "127.0.0.1";
        hints.ai_flags = AI_NUMERICHOST;
    } else if (!literal && add_host_lookup(host)) {
        lookup = add_host_lookup(host); /* --add-host: as /etc/hosts would */
        hints.ai_flags = AI_NUMERICHOST;
    }
    rc = getaddrinfo(lookup, port, &hints, &res);
    if (rc != 0) {
        *status = 502;
        snprintf(msg, msglen, "sbxd: cannot resolve %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        const void *addr = ai->ai_family == AF_INET
                               ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                               : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        bool ok;
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        pthread_mutex_lock(&g.lock);
        ok = s->policy && addr_allowed(s->policy, name_ok, ai->ai_family, addr);
        pthread_mutex_unlock(&g.lock);
        if (!ok)
            continue;
        any_allowed = true;
        fd = connect_timeout(ai);
    }
    freeaddrinfo(res);
    if (fd >= 0)
        return fd;
    *status = any_allowed ? 502 : 403;
    if (any_allowed)
        snprintf(msg, msglen, "sbxd: cannot connect to %s port %s\n", host, port);
    else
        snprintf(msg, msglen, "sbxd: the sandbox's network policy does not allow %s\n", host);
    return -1;
}

/* Split "host:port" or "[v6]:port"; host lowercased, trailing dot dropped. */
static bool split_authority(char *auth, const char *default_port, char **host, const char **port)
{
    char *h = auth;
    const char *p = NULL;
    if (*h == '[') {
        char *close_br = strchr(h, ']');
        if (!close_br)
            return false;
        *close_br = '\0';
        h++;
        if (close_br[1] == ':')
            p = close_br + 2;
        else if (close_br[1])
            return false;
    } else {
        char *colon = strrchr(h, ':');
        if (colon) {
            *colon = '\0';
            p = colon + 1;
        }
    }
    if (!*h)
        return false;
    for (char *q = h; *q; q++) {
        *q = (char)tolower((unsigned char)*q);
        if (!(isalnum((unsigned char)*q) || *q == '.' || *q == '-' || *q == ':' || *q == '_'))
            return false;
    }
    size_t n = strlen(h);
    if (n && h[n - 1] == '.')
        h[n - 1] = '\0';
    if (!p || !*p)
        p = default_port;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    if (atoi(p) < 1 || atoi(p) > 65535)
        return false;
    *host = h;
    *port = p;
    return true;
}

/* Rewrite a proxy request head for the origin: origin-form target, no
 * proxy headers, one request per connection. */
static char *origin_head(const char *method, const char *authority, const char *path, const char *version,
                         const char *headers, char *const *names, char *const *values, size_t ninj,
                         size_t *len)
{
    sbx__buf b = SBX__BUF_INIT;
    const char *line = headers;

    /* Host is the URL's, which the policy judged: a sandbox's own Host
     * line could name another site on the same address (a CDN's, a shared
     * host's) and reach what the policy does not allow. */
    sbx__buf_printf(&b, "%s %s %s\r\nHost: %s\r\n", method, path, version, authority);
    while (*line) {
        const char *eol = strstr(line, "\r\n");
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        const char *colon = memchr(line, ':', n);
        size_t nl = colon ? (size_t)(colon - line) : n;
        bool keep;
        if (n == 0)
            break;
        keep = strncasecmp(line, "Proxy-", 6) != 0 && strncasecmp(line, "Connection:", 11) != 0 &&
               strncasecmp(line, "Keep-Alive:", 11) != 0 && strncasecmp(line, "Host:", 5) != 0;
        /* Injected headers replace the sandbox's own. */
        for (size_t i = 0; keep && i < ninj; i++)
            if (names[i] && strlen(names[i]) == nl && strncasecmp(line, names[i], nl) == 0)
                keep = false;
        if (keep) {
            sbx__buf_append(&b, line, n);
            sbx__buf_puts(&b, "\r\n");
        }
        line += n + (eol ? 2 : 0);
    }
    for (size_t i = 0; i < ninj; i++)
        if (names[i] && values[i])
            sbx__buf_printf(&b, "%s: %s\r\n", names[i], values[i]);
    sbx__buf_puts(&b, "Connection: close\r\n\r\n");
    return sbx__buf_detach(&b, len);
}

/* The headers the policy sets on req to host, under the policy in force
 * now; g.lock is taken. */
static size_t injections(struct sandbox *s, const char *host, const struct np_req *req, char ***names,
                         char ***values)
{
    size_t n;
    pthread_mutex_lock(&g.lock);
    n = s->policy ? netpolicy_inject_for(s->policy, host, req, names, values) : 0;
    pthread_mutex_unlock(&g.lock);
    if (!n)
        *names = *values = NULL;
    return n;
}

static bool intercepts(struct sandbox *s, const char *host)
{
    bool yes;
    pthread_mutex_lock(&g.lock);
    yes = s->policy && netpolicy_intercepts(s->policy, host);
    pthread_mutex_unlock(&g.lock);
    return yes;
}

struct head_ctx {
    struct sandbox *s;
    const char *host;
};

/* mitm.c's question once it has read the request head inside TLS. */
static size_t head_injections(void *arg, const struct np_req *req, char ***names, char ***values)
{
    struct head_ctx *c = arg;
    return injections(c->s, c->host, req, names, values);
}

static void free_injections(char **names, char **values, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sbx__free(names[i]);
        sbx__free_secret(values[i]);
    }
    sbx__free(names);
    sbx__free(values);
}

static void serve(struct sandbox *s, int fd, void *arg)
{
    char *buf = sbx__malloc(HEAD_MAX + 1);
    size_t got;
    ssize_t head_len;
    char *method, *target, *version, *rest, *host, *sp1, *sp2, *eol;
    const char *port;
    char msg[512];
    int status, up = -1;
    char **inj_names = NULL, **inj_values = NULL;
    size_t ninj = 0;

    (void)arg;
    if (!buf)
        return;
    head_len = read_head(fd, buf, HEAD_MAX, &got);
    if (head_len < 0) {
        respond(fd, 400, "Bad Request", "sbxd: malformed or incomplete proxy request\n");
        goto out;
    }
    eol = strstr(buf, "\r\n");
    *eol = '\0';
    rest = eol + 2;
    method = buf;
    if (!(sp1 = strchr(method, ' ')) || !(sp2 = strchr(sp1 + 1, ' '))) {
        respond(fd, 400, "Bad Request", "sbxd: malformed request line\n");
        goto out;
    }
    *sp1 = *sp2 = '\0';
    target = sp1 + 1;
    version = sp2 + 1;

    if (strcmp(method, "CONNECT") == 0) {
        if (!split_authority(target, "443", &host, &port)) {
            respond(fd, 400, "Bad Request", "sbxd: CONNECT needs host:port\n");
            goto out;
        }
        up = open_upstream(s, host, port, &status, msg, sizeof msg);
        if (up < 0) {
            respond(fd, status, status == 403 ? "Forbidden" : "Bad Gateway", msg);
            goto out;
        }
        sbxd_log(LOG_DEBUG, "sandbox %s egress: CONNECT %s:%s", s->id, host, port);
        if (intercepts(s, host)) {
            /* Headers to set inside TLS: intercept this one connection;
             * which ones depends on the request (a rule's match). */
            struct head_ctx hc = {s, host};
            if (got > (size_t)head_len) {
                respond(fd, 400, "Bad Request", "sbxd: data sent before the CONNECT was answered\n");
                goto out;
            }
            mitm_serve(fd, up, host, head_injections, &hc);
            goto out;
        }
        static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
        if (send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL) < 0)
            goto out;
        /* Bytes the client sent after the head (a TLS hello) go first. */
        if (got > (size_t)head_len &&
            send(up, buf + head_len, got - (size_t)head_len, MSG_NOSIGNAL) < 0)
            goto out;
        relay(fd, up, NULL, NULL);
    } else {
        char *auth, *slash, *head, authority[300];
        const char *path = "/";
        size_t hlen;
        if (strncasecmp(target, "http://", 7) != 0) {
            respond(fd, 400, "Bad Request",
                    "sbxd: the proxy takes CONNECT host:port or an absolute http:// URL\n");
            goto out;
        }
        auth = target + 7;
        slash = strchr(auth, '/');
        if (slash) {
            /* Move the authority one byte left so it can end in a NUL while
             * the path keeps its leading slash for the origin-form target. */
            memmove(auth - 1, auth, (size_t)(slash - auth));
            slash[-1] = '\0';
            auth--;
            path = slash;
        }
        /* The authority as written, for the Host line (split_authority
         * cuts and lowercases its argument in place). */
        snprintf(authority, sizeof authority, "%s", auth);
        if (strlen(auth) >= sizeof authority || strpbrk(auth, " \t\r\n") ||
            !split_authority(auth, "80", &host, &port)) {
            respond(fd, 400, "Bad Request", "sbxd: bad host in the request URL\n");
            goto out;
        }
        up = open_upstream(s, host, port, &status, msg, sizeof msg);
        if (up < 0) {
            respond(fd, status, status == 403 ? "Forbidden" : "Bad Gateway", msg);
            goto out;
        }
        sbxd_log(LOG_DEBUG, "sandbox %s egress: %s http://%s:%s", s->id, method, host, port);
        {
            struct np_req req = {method, path, rest, strlen(rest)};
            ninj = injections(s, host, &req, &inj_names, &inj_values);
        }
        head = origin_head(method, authority, path, version, rest, inj_names, inj_values, ninj, &hlen);
        if (!head || send(up, head, hlen, MSG_NOSIGNAL) < 0 ||
            (got > (size_t)head_len &&
             send(up, buf + head_len, got - (size_t)head_len, MSG_NOSIGNAL) < 0)) {
            sbx__free_secret(head);
            goto out;
        }
        sbx__free_secret(head);
        relay(fd, up, NULL, NULL);
    }
out:
    free_injections(inj_names, inj_values, ninj);
    if (up >= 0)
        close(up);
    sbx__free(buf);
}

static void *accept_main(void *arg)
{
    struct egress *e = arg;
    serve_connections(e->listen_fd, e->s, serve, NULL);
    return NULL;
}

int egress_attach(struct sandbox *s, int ctx, char *err, size_t errlen)
{
    struct ctl_msg m;
    struct egress *e;
    int fd = -1, rc;

    pthread_mutex_lock(&g.lock);
    e = s->egress;
    pthread_mutex_unlock(&g.lock);
    if (e)
        return 0; /* one isolated context per sandbox, one proxy */
    ctl_msg_init(&m, CTL_LISTEN, 0);
    rc = ctl_put_int(&m, EGRESS_PORT) < 0 ? ENOMEM : sandbox_ctl(s, ctx, &m, &fd, NULL);
    ctl_msg_free(&m);
    if (rc != 0 || fd < 0) {
        snprintf(err, errlen, "cannot open the egress proxy in sandbox %s: %s", s->id, strerror(rc));
        return -1;
    }
    e = sbx__calloc(1, sizeof *e);
    if (!e) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    e->s = s;
    e->listen_fd = fd;
    if (pthread_create(&e->thread, NULL, accept_main, e) != 0) {
        close(fd);
        sbx__free(e);
        snprintf(err, errlen, "cannot start the egress proxy");
        return -1;
    }
    pthread_mutex_lock(&g.lock);
    s->egress = e;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

void egress_detach(struct sandbox *s)
{
    struct egress *e;
    pthread_mutex_lock(&g.lock);
    e = s->egress;
    s->egress = NULL;
    pthread_mutex_unlock(&g.lock);
    if (!e)
        return;
    shutdown(e->listen_fd, SHUT_RDWR);
    pthread_join(e->thread, NULL);
    close(e->listen_fd);
    sbx__free(e);
}
