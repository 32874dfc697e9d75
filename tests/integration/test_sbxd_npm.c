/* SPDX-License-Identifier: MIT */
/*
 * npm: package installs inside sandboxes from the test internet's registry,
 * as `sbxrun verify` runs them. tests/fixtures/ts-project is uploaded to a
 * sandbox of an sbxd that resolves registry.test (testnet_sbxd_args), where its
 * lock file's http://registry.test/npm/... URLs work as they are: no
 * --registry, no --replace-registry-host. npm ci with install scripts off
 * leaves no lifecycle marker; lint, typecheck, build and test pass; with
 * scripts on, the marker is there. Needs node and npm on the host (the
 * sandbox sees the host's /usr) and the registry directory
 * (tests/fixtures/fetch-registry.sh).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "testnet.h"

#ifndef TESTNET_FIXTURES_DIR
#define TESTNET_FIXTURES_DIR ""
#endif

/* The fixture's tracked files (what verify would upload). */
static const char *const ts_files[] = {
    "package.json", "package-lock.json", "tsconfig.json", "tsconfig.test.json", "scripts/lint.js",
    "src/index.ts", "src/version.ts", "test/node-test.d.ts", "test/probe.test.ts", "test/version.test.ts", NULL,
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
    buf = malloc((size_t)n + 1);
    ck_assert(buf != NULL);
    ck_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void upload_ts_project(struct sbxd *d, const char *sid, const char *dest)
{
    for (size_t i = 0; ts_files[i]; i++) {
        char src[4096], dst[512];
        size_t len;
        char *data;
        snprintf(src, sizeof src, "%s/ts-project/%s", TESTNET_FIXTURES_DIR, ts_files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dest, ts_files[i]);
        data = slurp(src, &len);
        sbx_write_file(d, sid, dst, data, len, 0644);
        free(data);
    }
}

static void need_registry_dir(void)
{
    char tgz[4096];
    struct stat st;
    snprintf(tgz, sizeof tgz, "%s/typescript/-/typescript-5.4.5.tgz", testnet_npm_dir());
    ck_assert_msg(stat(tgz, &st) == 0,
                  "%s: %s; fetch the registry's tarballs first: tests/fixtures/fetch-registry.sh (scripts/dev test "
                  "does), or set TESTNET_NPM_DIR", tgz, strerror(errno));
}

/* npm in the sandbox: its own cache and configuration, no proxy, quiet. */
#define NPM "env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY npm_config_userconfig=/dev/null " \
            "npm --cache /tmp/npm-cache --no-audit --no-fund --no-update-notifier --loglevel=error "

START_TEST(test_sbxd_npm_ci_ts_project)
{
    struct testnet *t;
    struct sbxd *d;
    struct cmd_result *c;
    char *sid, want[128], *log;
    int st;

    need_registry_dir();
    ck_assert_msg(access("/usr/bin/node", X_OK) == 0 || system("command -v node >/dev/null") == 0,
                  "node and npm are needed (scripts/dev deps, or apt-get install -y nodejs npm)");
    t = testnet_start(0);
    d = sbxd_start(testnet_sbxd_args(t), NULL);
    sid = sbx_create(d, NULL);
    upload_ts_project(d, sid, "/vercel/sandbox/ts");

    /* The lock file's URLs as they are; install scripts off. */
    c = sbx_sh(d, sid,
               "cd /vercel/sandbox/ts && node --version && " NPM "ci --ignore-scripts && "
               "if test -e lifecycle-ran; then echo 'MARKER WITHOUT SCRIPTS'; exit 1; fi && "
               "npm run -s lint && npm run -s typecheck && npm run -s build && npm test && ls dist");
    ck_assert_msg(c->exit_code == 0, "npm in the sandbox: exit %d\nstdout: %s\nstderr: %s", c->exit_code, c->out,
                  c->err);
    ck_assert_msg(contains(c->out, "# pass 4\n") && contains(c->out, "index.js\n"), "npm test: %s", c->out);
    cmd_result_free(c);
    /* Each tarball was fetched by name, from the sandbox (not the host's end of the veth). */
    log = testnet_sh_out(t, &st, "cat %s/http.log", t->root);
    ck_assert_int_eq(st, 0);
    ck_assert_msg(contains(log, "\"GET /npm/typescript/-/typescript-5.4.5.tgz HTTP/1.1\" 200") &&
                      contains(log, "\"GET /npm/sbx-lifecycle-probe/-/sbx-lifecycle-probe-1.0.0.tgz HTTP/1.1\" 200"),
                  "access log:\n%s", log);
    free(log);

    /* Scripts on: the dependency's postinstall leaves its marker. */
    c = sbx_sh(d, sid, "cd /vercel/sandbox/ts && rm -rf node_modules && " NPM "ci --ignore-scripts=false && "
                       "cat lifecycle-ran");
    snprintf(want, sizeof want, "sbx-lifecycle-probe postinstall, pid ");
    ck_assert_msg(c->exit_code == 0 && contains(c->out, want), "with scripts: exit %d\nstdout: %s\nstderr: %s",
                  c->exit_code, c->out, c->err);
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
    testnet_stop(t);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_npm");
    TCase *tc = sbx_tcase("ts_project", 240);
    tcase_add_test(tc, test_sbxd_npm_ci_ts_project);
    suite_add_tcase(s, tc);
    return s;
}
