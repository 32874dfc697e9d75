/* SPDX-License-Identifier: MIT */
/*
 * command: run one command in a new sandbox and print its output as it
 * arrives. The endpoint and credentials come from the environment
 * (SBXRUN_ENDPOINT, or Vercel's variables: doc/client.md).
 *
 *   cc command.c -o command $(pkg-config --cflags --libs libsbxrun)
 *   SBXRUN_ENDPOINT=unix:/tmp/sbxd/sock ./command sh -c 'echo hello'
 *
 * Valid C11 and C++17.
 */
#include <stdio.h>

#include <sbxrun/sbxrun.h>

static int on_output(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    (void)user;
    fwrite(data, 1, len, stream == SBX_STREAM_STDERR ? stderr : stdout);
    fflush(stream == SBX_STREAM_STDERR ? stderr : stdout);
    return 0; /* go on */
}

int main(int argc, char **argv)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_command *k = NULL;
    int rc = 2;

    if (argc < 2) {
        fprintf(stderr, "usage: command PROGRAM [ARG...]\n");
        return 2;
    }
    if (sbx_global_init() != SBX_OK) {
        fprintf(stderr, "command: sbx_global_init failed\n");
        return 2;
    }
    c = sbx_client_new();
    s = c ? sbx_sandbox_new(c) : NULL;
    if (!s) {
        fprintf(stderr, "command: out of memory\n");
        goto out;
    }
    if (sbx_sandbox_set_timeout_ms(s, 300000) != SBX_OK || sbx_sandbox_create(s) != SBX_OK) {
        fprintf(stderr, "command: create a sandbox: %s\n", sbx_sandbox_last_error(s));
        goto out;
    }
    k = sbx_command_new(s);
    if (!k || sbx_command_set_argv(k, (size_t)(argc - 1), (const char *const *)(argv + 1)) != SBX_OK ||
        sbx_command_set_output_cb(k, on_output, NULL) != SBX_OK || sbx_command_run(k) != SBX_OK) {
        fprintf(stderr, "command: %s\n", k ? sbx_command_last_error(k) : "out of memory");
        goto stop;
    }
    rc = sbx_command_exit_code(k);
stop:
    if (sbx_sandbox_stop(s) != SBX_OK)
        fprintf(stderr, "command: stop the sandbox: %s\n", sbx_sandbox_last_error(s));
out:
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbx_global_cleanup();
    return rc;
}
