/* SPDX-License-Identifier: MIT */
/*
 * mitm: header injection needs the plaintext of an HTTPS request, so for a
 * domain with injection rules the egress proxy terminates the sandbox's TLS
 * with a certificate made for that host and signed by sbxd's own CA (which
 * every sandbox trusts), and opens its own TLS connection upstream, verified
 * against the host's CA store. Other traffic is never intercepted: it stays
 * end-to-end encrypted, as the SDK documents.
 *
 * Requests are rewritten head by head: the injected headers replace any the
 * sandbox sent, and the upstream is asked to close after its response
 * (Connection: close), so a request can never pass unrewritten on a reused
 * connection.
 */
#include "mitm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "sbxd.h"

#define HEAD_MAX 65536
#define HANDSHAKE_TIMEOUT_S 30
#define LEAF_CACHE 128

static EVP_PKEY *ca_key, *leaf_key;
static X509 *ca_cert;
static SSL_CTX *server_ctx, *client_ctx;
static char *ca_path, *bundle_path;

struct leaf {
    char host[256];
    X509 *cert;
    struct leaf *next;
};
static struct leaf *leaves;
static int nleaves;
static pthread_mutex_t leaf_lock = PTHREAD_MUTEX_INITIALIZER;

const char *mitm_ca_path(void)
{
    return ca_path;
}

const char *mitm_bundle_path(void)
{
    return bundle_path;
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return true;
}

static bool random_serial(X509 *cert)
{
    unsigned char b[16];
    BIGNUM *bn;
    bool ok;
    if (RAND_bytes(b, sizeof b) != 1)
        return false;
    b[0] &= 0x7f; /* positive */
    bn = BN_bin2bn(b, sizeof b, NULL);
    ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
    BN_free(bn);
    return ok;
}

/* A certificate for subject (CN), signed by issuer/issuer_key, or self-signed
 * when issuer is NULL. */
static X509 *make_cert(const char *cn, EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key, long days,
                       bool ca, const char *san)
{
    X509 *c = X509_new();
    X509_NAME *name;
    if (!c)
        return NULL;
    X509_set_version(c, 2);
    if (!random_serial(c))
        goto fail;
    X509_gmtime_adj(X509_getm_notBefore(c), -3600);
    X509_gmtime_adj(X509_getm_notAfter(c), days * 86400L);
    X509_set_pubkey(c, key);
    name = X509_get_subject_name(c);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sbxd (local)", -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
    if (ca) {
        if (!add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
            !add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") ||
            !add_ext(c, c, NID_subject_key_identifier, "hash"))
            goto fail;
    } else {
        if (!add_ext(c, issuer, NID_basic_constraints, "critical,CA:FALSE") ||
            !add_ext(c, issuer, NID_key_usage, "critical,digitalSignature") ||
            !add_ext(c, issuer, NID_ext_key_usage, "serverAuth") ||
            !add_ext(c, issuer, NID_subject_key_identifier, "hash") ||
            !add_ext(c, issuer, NID_authority_key_identifier, "keyid:always") ||
            !add_ext(c, issuer, NID_subject_alt_name, san))
            goto fail;
    }
    if (!X509_sign(c, issuer_key ? issuer_key : key, EVP_sha256()))
        goto fail;
    return c;
fail:
    X509_free(c);
    return NULL;
}

static int alpn_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    /* Only HTTP/1.1: heads are rewritten as text. */
    for (unsigned i = 0; i + 1 <= inlen;) {
        unsigned len = in[i];
        if (i + 1 + len > inlen)
            break;
        if (len == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

static int write_pem(const char *path, X509 *cert, EVP_PKEY *key, mode_t mode)
{
    FILE *f;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    int ok;
    if (fd < 0)
        return -1;
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -1;
    }
    ok = cert ? PEM_write_X509(f, cert) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int load_or_create_ca(char *err, size_t errlen)
{
    char *key_path = path_join(g.cfg.state_dir, "ca.key");
    FILE *f;
    int r = -1;

    ca_path = path_join(g.cfg.state_dir, "ca.crt");
    if (!key_path || !ca_path) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if ((f = fopen(key_path, "re"))) {
        ca_key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
        if ((f = fopen(ca_path, "re"))) {
            ca_cert = PEM_read_X509(f, NULL, NULL, NULL);
            fclose(f);
        }
        /* Keep it unless it is unreadable or about to expire. */
        if (ca_key && ca_cert && X509_cmp_time(X509_get0_notAfter(ca_cert), NULL) > 0 &&
            X509_check_private_key(ca_cert, ca_key) == 1) {
            time_t soon = time(NULL) + 30 * 86400;
            if (X509_cmp_time(X509_get0_notAfter(ca_cert), &soon) > 0) {
                r = 0;
                goto out;
            }
        }
        EVP_PKEY_free(ca_key);
        X509_free(ca_cert);
        ca_key = NULL;
        ca_cert = NULL;
    }
    ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ca_cert = ca_key ? make_cert("sbxd egress CA", ca_key, NULL, NULL, 3650, true, NULL) : NULL;
    if (!ca_cert || write_pem(key_path, NULL, ca_key, 0600) < 0 || write_pem(ca_path, ca_cert, NULL, 0644) < 0) {
        snprintf(err, errlen, "cannot create the interception CA in %s", g.cfg.state_dir);
        goto out;
    }
    sbxd_log(LOG_INFO, "created the egress CA %s (trusted inside sandboxes only)", ca_path);
    r = 0;
out:
    sbx__free(key_path);
    return r;
}

int mitm_init(char *err, size_t errlen)
{
    static const char host_bundle[] = "/etc/ssl/certs/ca-certificates.crt";
    size_t hlen = 0, clen = 0;
    char *host, *mine;

    if (load_or_create_ca(err, errlen) < 0)
        return -1;
    leaf_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    server_ctx = SSL_CTX_new(TLS_server_method());
    client_ctx = SSL_CTX_new(TLS_client_method());
    if (!leaf_key || !server_ctx || !client_ctx) {
        snprintf(err, errlen, "cannot set up TLS for interception");
        return -1;
    }
    SSL_CTX_set_min_proto_version(server_ctx, TLS1_2_VERSION);
    SSL_CTX_set_alpn_select_cb(server_ctx, alpn_http11, NULL);
    SSL_CTX_set_min_proto_version(client_ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_default_verify_paths(client_ctx);
    if (g.cfg.upstream_ca && SSL_CTX_load_verify_locations(client_ctx, g.cfg.upstream_ca, NULL) != 1) {
        snprintf(err, errlen, "cannot load --upstream-ca %s", g.cfg.upstream_ca);
        return -1;
    }
    SSL_CTX_set_alpn_protos(client_ctx, (const unsigned char *)"\x08http/1.1", 9);

    /* The bundle sandboxes see in place of the host's: the host's CAs plus
     * ours, so every OpenSSL/GnuTLS-based tool accepts the intercepted
     * connections and nothing else changes. */
    host = read_file(host_bundle, 16 << 20, &hlen);
    mine = read_file(ca_path, 1 << 20, &clen);
    if (host && mine) {
        sbx__buf b = SBX__BUF_INIT;
        bundle_path = path_join(g.cfg.state_dir, "ca-bundle.crt");
        if (bundle_path && sbx__buf_append(&b, host, hlen) == SBX_OK && sbx__buf_puts(&b, "\n") == SBX_OK &&
            sbx__buf_append(&b, mine, clen) == SBX_OK &&
            write_file_atomic(bundle_path, b.data, b.len, 0644, false) < 0) {
            sbx__free(bundle_path);
            bundle_path = NULL;
        }
        sbx__buf_free(&b);
    }
    sbx__free(host);
    sbx__free(mine);
    return 0;
}

/* The leaf certificate for host, made once and cached. */
static X509 *leaf_for(const char *host)
{
    struct leaf *l, **pp;
    X509 *c = NULL;
    unsigned char ip[16];
    char san[300];

    pthread_mutex_lock(&leaf_lock);
    for (l = leaves; l; l = l->next)
        if (strcmp(l->host, host) == 0) {
            X509_up_ref(l->cert);
            c = l->cert;
            break;
        }
    pthread_mutex_unlock(&leaf_lock);
    if (c)
        return c;
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    snprintf(san, sizeof san, "%s:%s", is_ip ? "IP" : "DNS", host);
    c = make_cert(host, leaf_key, ca_cert, ca_key, 90, false, san);
    if (!c)
        return NULL;
    l = sbx__calloc(1, sizeof *l);
    if (!l)
        return c;
    snprintf(l->host, sizeof l->host, "%s", host);
    l->cert = c;
    X509_up_ref(c);
    pthread_mutex_lock(&leaf_lock);
    l->next = leaves;
    leaves = l;
    if (++nleaves > LEAF_CACHE) {
        /* Drop the oldest. */
        for (pp = &leaves; (*pp)->next; pp = &(*pp)->next)
            ;
        X509_free((*pp)->cert);
        sbx__free(*pp);
        *pp = NULL;
        nleaves--;
    }
    pthread_mutex_unlock(&leaf_lock);
    return c;
}

static void set_timeout(int fd, int seconds)
{
    struct timeval tv = {seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static bool ssl_write_all(SSL *ssl, const char *p, size_t n)
{
    while (n) {
        int w = SSL_write(ssl, p, n > 1 << 30 ? 1 << 30 : (int)n);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Read a request head (through the blank line) from the sandbox. */
static ssize_t read_head(SSL *ssl, sbx__buf *b)
{
    for (;;) {
        char chunk[4096], *end;
        int r;
        if (b->len && (end = strstr(b->data, "\r\n\r\n")) != NULL)
            return end + 4 - b->data;
        if (b->len >= HEAD_MAX)
            return -1;
        r = SSL_read(ssl, chunk, sizeof chunk);
        if (r <= 0 || sbx__buf_append(b, chunk, (size_t)r) != SBX_OK)
            return -1;
    }
}

/* The head with the injected headers in place of the sandbox's own, and one
 * request per connection. */
static char *rewrite_head(const char *head, size_t len, char *const *names, char *const *values,
                          size_t n, size_t *outlen)
{
    sbx__buf b = SBX__BUF_INIT;
    const char *line = head, *end = head + len;
    bool first = true;

    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        size_t ll = eol ? (size_t)(eol - line) : (size_t)(end - line);
        bool keep = true;
        if (ll && line[ll - 1] == '\r')
            ll--;
        if (ll == 0)
            break;
        if (!first) {
            const char *colon = memchr(line, ':', ll);
            size_t nl = colon ? (size_t)(colon - line) : ll;
            if ((nl == 10 && strncasecmp(line, "Connection", 10) == 0) ||
                (nl == 10 && strncasecmp(line, "Keep-Alive", 10) == 0) ||
                (nl == 16 && strncasecmp(line, "Proxy-Connection", 16) == 0))
                keep = false;
            for (size_t i = 0; keep && i < n; i++)
                if (names[i] && strlen(names[i]) == nl && strncasecmp(line, names[i], nl) == 0)
                    keep = false;
        }
        if (keep) {
            sbx__buf_append(&b, line, ll);
            sbx__buf_puts(&b, "\r\n");
        }
        first = false;
        line = eol ? eol + 1 : end;
    }
    for (size_t i = 0; i < n; i++)
        if (names[i] && values[i])
            sbx__buf_printf(&b, "%s: %s\r\n", names[i], values[i]);
    sbx__buf_puts(&b, "Connection: close\r\n\r\n");
    return sbx__buf_detach(&b, outlen);
}

/* SNI for the upstream handshake. OpenSSL's macro casts the name to
 * void *; it only reads it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-qual"
static int set_sni(SSL *ssl, const char *host)
{
    return (int)SSL_set_tlsext_host_name(ssl, host);
}
#pragma GCC diagnostic pop

/* Relay decrypted bytes both ways until either side ends. */
static void tls_relay(SSL *a, SSL *b)
{
    int fa = SSL_get_fd(a), fb = SSL_get_fd(b);
    char buf[16384];
    for (;;) {
        struct pollfd p[2] = {{fa, POLLIN, 0}, {fb, POLLIN, 0}};
        /* Data OpenSSL already decrypted does not show on the socket. */
        if (!SSL_pending(a) && !SSL_pending(b) && poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            SSL *from = i ? b : a, *to = i ? a : b;
            int r;
            if (!SSL_pending(from) && !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = SSL_read(from, buf, sizeof buf);
            if (r <= 0) {
                int e = SSL_get_error(from, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                    continue;
                SSL_shutdown(to);
                return;
            }
            if (!ssl_write_all(to, buf, (size_t)r))
                return;
        }
    }
}

/* The request line and header lines of a head, for a rule's match:
 * method and target cut out into *line (caller frees). */
static bool split_head(const char *head, size_t len, char **line, struct np_req *req)
{
    const char *eol = memchr(head, '\n', len);
    char *sp1, *sp2;
    size_t ll;
    if (!eol)
        return false;
    ll = (size_t)(eol - head);
    if (ll && head[ll - 1] == '\r')
        ll--;
    if (!(*line = sbx__malloc(ll + 1)))
        return false;
    memcpy(*line, head, ll);
    (*line)[ll] = '\0';
    if (!(sp1 = strchr(*line, ' ')) || !(sp2 = strchr(sp1 + 1, ' '))) {
        sbx__free(*line);
        *line = NULL;
        return false;
    }
    *sp1 = *sp2 = '\0';
    req->method = *line;
    req->target = sp1 + 1;
    req->headers = eol + 1;
    req->hlen = len - (size_t)(eol + 1 - head);
    return true;
}

void mitm_serve(int client, int upstream, const char *host, mitm_inject_fn inject, void *arg)
{
    char **names = NULL, **values = NULL, *line = NULL;
    size_t n = 0;
    struct np_req req;
    static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    SSL *up = NULL, *down = NULL;
    X509 *leaf = NULL;
    sbx__buf head = SBX__BUF_INIT;
    ssize_t hlen;
    char *rewritten = NULL;
    size_t rlen = 0;
    char msg[512];

    /* Upstream first: verified for host, or the client hears why now. */
    set_timeout(upstream, HANDSHAKE_TIMEOUT_S);
    up = SSL_new(client_ctx);
    if (!up || !SSL_set_fd(up, upstream) || !set_sni(up, host) ||
        !SSL_set1_host(up, host) || SSL_connect(up) != 1) {
        long v = up ? SSL_get_verify_result(up) : 0;
        int n2 = snprintf(msg, sizeof msg,
                          "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                          "sbxd: TLS to %s failed%s%s\n",
                          host, v != X509_V_OK ? ": " : "",
                          v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
        (void)!send(client, msg, (size_t)n2, MSG_NOSIGNAL);
        goto out;
    }
    set_timeout(upstream, 0);
    if (send(client, ok, sizeof ok - 1, MSG_NOSIGNAL) < 0)
        goto out;
    leaf = leaf_for(host);
    set_timeout(client, HANDSHAKE_TIMEOUT_S);
    down = SSL_new(server_ctx);
    if (!leaf || !down || !SSL_use_certificate(down, leaf) || !SSL_use_PrivateKey(down, leaf_key) ||
        !SSL_set_fd(down, client) || SSL_accept(down) != 1)
        goto out;
    set_timeout(client, 0);
    hlen = read_head(down, &head);
    if (hlen < 0)
        goto out;
    if (!split_head(head.data, (size_t)hlen, &line, &req)) {
        static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                                  "sbxd: malformed request line\n";
        ssl_write_all(down, bad, sizeof bad - 1);
        goto out;
    }
    n = inject(arg, &req, &names, &values);
    rewritten = rewrite_head(head.data, (size_t)hlen, names, values, n, &rlen);
    if (!rewritten || !ssl_write_all(up, rewritten, rlen) ||
        (head.len > (size_t)hlen && !ssl_write_all(up, head.data + hlen, head.len - (size_t)hlen)))
        goto out;
    sbxd_log(LOG_DEBUG, "egress: %zu header(s) set on a request to %s", n, host);
    tls_relay(down, up);
out:
    for (size_t i = 0; i < n; i++) {
        sbx__free(names[i]);
        sbx__free_secret(values[i]);
    }
    sbx__free(names);
    sbx__free(values);
    sbx__free(line);
    sbx__free_secret(rewritten);
    sbx__buf_wipe_free(&head);
    if (down)
        SSL_free(down);
    if (up)
        SSL_free(up);
    X509_free(leaf);
    ERR_clear_error();
}
