/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for what sbxd reads from request bodies (tools/sbxd/parse.c,
 * tools/sbxd/netpolicy.c): the input is a body, loaded as sbxd loads one
 * (duplicate keys refused, an object required), then read as a command run
 * (command, args, env, cwd) and a sandbox create (timeout, resources.vcpus,
 * env, networkPolicy), the integer fields of the other endpoints, and the
 * network policy is matched against a few hosts and addresses. Checks:
 * every env entry is NAME=VALUE for one key of the object, with the value
 * unchanged; every argument is one string of the array; an accepted policy
 * echoes no header value. Built with libFuzzer by -Dfuzz=true (clang);
 * built without it (with standalone.c) it runs over the files named on its
 * command line, which `meson test` does on the seeds.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/alloc.h"
#include "netpolicy.h"
#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_env(json_t *env)
{
    sbx__strlist out = SBX__STRLIST_INIT;
    char err[256] = "";
    if (parse_env(env, "env", &out, err, sizeof err) < 0) {
        if (!err[0])
            abort();
    } else {
        if (out.n != (json_is_object(env) ? json_object_size(env) : 0))
            abort();
        for (size_t i = 0; i < out.n; i++) {
            const char *eq = strchr(out.v[i], '=');
            json_t *v;
            if (!eq || eq == out.v[i])
                abort(); /* NAME=VALUE, the name not empty */
            v = json_object_getn(env, out.v[i], (size_t)(eq - out.v[i]));
            if (!json_is_string(v) || strcmp(json_string_value(v), eq + 1) != 0)
                abort(); /* one key of the object, its value unchanged */
        }
    }
    sbx__strlist_wipe(&out);
}

static void check_args(json_t *args)
{
    sbx__strlist out = SBX__STRLIST_INIT;
    char err[256] = "";
    if (parse_strings(args, "args", &out, err, sizeof err) < 0) {
        if (!err[0])
            abort();
    } else {
        if (out.n != json_array_size(args))
            abort();
        for (size_t i = 0; i < out.n; i++)
            if (strcmp(out.v[i], json_string_value(json_array_get(args, i))) != 0)
                abort();
    }
    sbx__strlist_clear(&out);
}

static void check_ints(json_t *body)
{
    static const char *const keys[] = {"timeout", "duration", "expiration", "signal"};
    int64_t v = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *j = json_object_get(body, keys[i]);
        int r = json_get_int64(body, keys[i], &v);
        if (!j ? r != 0 : json_is_integer(j) ? r != 1 || v != json_integer_value(j)
                        : json_is_real(j) ? r != 1 && r != -1 : r != -1)
            abort(); /* 1 found, 0 absent, -1 not an integer */
    }
    json_get_int64(json_object_get(body, "resources"), "vcpus", &v);
}

static void check_policy(json_t *j)
{
    static const char *const hosts[] = {"example.com", "a.b.example.org", "localhost", "x"};
    static const char *const addrs[] = {"10.1.2.3", "127.0.0.1", "::1", "2001:db8::1"};
    char err[512] = "";
    struct netpolicy *p = netpolicy_parse(j, err, sizeof err);
    json_t *echo, *rules, *r;
    size_t i;
    if (!p) {
        if (!err[0])
            abort();
        return;
    }
    if ((p->mode != NP_CUSTOM && (p->ndomains || p->nallow || p->ndeny || p->ninject)) || !p->echo)
        abort();
    echo = netpolicy_json(p);
    rules = json_object_get(echo, "injectionRules");
    json_array_foreach(rules, i, r)
        if (json_object_get(r, "headers"))
            abort(); /* header values are secrets: never echoed */
    json_decref(echo);
    for (i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
        /* no request (the CONNECT), then request heads a match reads */
        static const struct np_req reqs[] = {
            {"GET", "/", "", 0},
            {"POST", "/v1/models/../x?a=1&b=%41%zz&=&c", "X-Tenant: t-1\r\nHost: a\r\n", 24},
            {"PUT", "/a%2fb/./c?scope=read%3Aall", "x:\r\n:y\r\nNoColon\r\n", 17},
        };
        netpolicy_domain_allowed(p, hosts[i]);
        for (size_t q = 0; q <= sizeof reqs / sizeof reqs[0]; q++) {
            char **names = NULL, **values = NULL;
            size_t n = netpolicy_inject_for(p, hosts[i], q ? &reqs[q - 1] : NULL, &names, &values);
            for (size_t k = 0; k < n; k++) {
                sbx__free(names[k]);
                sbx__free_secret(values[k]);
            }
            sbx__free(names);
            sbx__free(values);
        }
    }
    for (i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
        unsigned char a[16];
        int fam = strchr(addrs[i], ':') ? AF_INET6 : AF_INET;
        if (inet_pton(fam, addrs[i], a) != 1)
            abort();
        netpolicy_addr_verdict(p, fam, a);
    }
    netpolicy_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = size ? json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL) : json_object();
    json_t *np;
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    check_args(json_object_get(body, "args"));
    check_env(json_object_get(body, "env"));
    check_ints(body);
    if ((np = json_object_get(body, "networkPolicy")) != NULL)
        check_policy(np);
    else
        check_policy(body); /* a POST /network-policy body is the policy itself */
    json_decref(body);
    return 0;
}
