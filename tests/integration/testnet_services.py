# SPDX-License-Identifier: MIT
"""The test internet's holder (see testnet.h): testnet.c starts this as PID 1
of new network, mount, IPC and PID namespaces, so that its death, however it
comes, takes every service, the veth pair and every file with it.

It owns what runs inside the fixture: a private tmpfs on /tmp (and /dev/shm)
holding the generated content, the HTTP server (static files, /echo, /bytes/N, /redirect?to=URL,
the git repositories over dumb HTTP and, through git http-backend, smart HTTP, an npm registry,
a PEP 503 index), git daemon and, when asked, PostgreSQL. Standard library only.

Protocol with testnet.c: one JSON line on stdin says how to set up the network
({"if", "addr", "prefix", "host_addr", "subnet", "db"}); this answers with one
line on stdout, "READY {json}" once every service answers, or "FAIL message".
EOF on stdin (the test is gone) or SIGTERM ends the fixture.
"""

import base64
import ctypes
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import select
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tarfile
import threading
import time
import urllib.parse
import zipfile

ROOT = "/tmp/testnet"           # inside the fixture's tmpfs
WWW = ROOT + "/www"             # served at http://www.test/ (and every other name)
SCRATCH = ROOT + "/scratch"     # for tests' own files (testnet_host_sh)
PG_BIN = "/usr/lib/postgresql/15/bin"
NOBODY = 65534                  # PostgreSQL refuses to run as root
HTTP_PORT, GIT_PORT, DB_PORT = 80, 9418, 5432

# Fixed identities and dates: the repository's commit ids are the same on every run.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": ROOT, "LC_ALL": "C",
    "GIT_AUTHOR_NAME": "Test Internet", "GIT_AUTHOR_EMAIL": "demo@git.test",
    "GIT_COMMITTER_NAME": "Test Internet", "GIT_COMMITTER_EMAIL": "demo@git.test",
}
NPM_NAME, NPM_VERSION = "sbx-demo", "1.0.0"
# npm packages besides sbx-demo: each directory here is a package's source,
# packed at start (deterministic bytes: tests/fixtures/ts-project's lock file
# pins their sha512), and every <name>/-/<file>.tgz under the configured
# "npm_dir" (tests/fixtures/fetch-registry.sh fills it) is served as it is.
NPM_SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "npm-packages")
TGZ_MTIME = 1704067200  # 2024-01-01T00:00:00Z: every file of every tarball made here
PY_NAME, PY_VERSION = "sbx-demo", "1.0.0"
# private.git: demo.git's history over dumb HTTP, only with this token as the
# password of HTTP basic auth (user x-access-token, as git hosts take tokens).
# Kept outside WWW, so neither git daemon nor the static files serve it.
PRIVATE_TOKEN = "tn-private-7f3c9a1e5b2d4086"
PRIVATE_DIR = ROOT + "/private"
PRIVATE_AUTH = "Basic " + base64.b64encode(("x-access-token:" + PRIVATE_TOKEN).encode()).decode()
# Smart HTTP (git http-backend as a CGI) under /smart/: demo.git, and
# private.git behind the same token. The project root holds links to the
# repositories the other endpoints serve; fetch by commit id is allowed.
SMART_ROOT = ROOT + "/smart"
SMART_CONFIG = {"uploadpack.allowAnySHA1InWant": "true", "uploadpack.allowReachableSHA1InWant": "true",
                "uploadpack.allowTipSHA1InWant": "true"}
DEMO_TEXT = "hello from sbx-demo"

_libc = ctypes.CDLL(None, use_errno=True)
_log_lock = threading.Lock()


def log(msg):
    sys.stderr.write("testnet: %s\n" % msg)
    sys.stderr.flush()


def pdeathsig():
    """preexec_fn: a second tie to the holder, besides the PID namespace."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def run(argv, **kw):
    """Run a setup command; its output goes to setup.log, and a failure says what failed."""
    with open(ROOT + "/setup.log", "ab") as out:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s exited with %d (setup.log: %s)"
                           % (" ".join(argv), r.returncode, tail(ROOT + "/setup.log")))


def tail(path, n=1500):
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace")
    except OSError:
        return "(no %s)" % path


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.chmod(path, mode)


# ---- namespaces and network ---------------------------------------------------------------------

def setup_mounts():
    # Private first: a tmpfs mounted under a shared / would show up on the host.
    run_plain(["mount", "--make-rprivate", "/"])
    run_plain(["mount", "-t", "tmpfs", "-o", "mode=1777,size=1g", "testnet", "/tmp"])
    run_plain(["mount", "-t", "tmpfs", "-o", "mode=1777,size=64m", "testnet-shm", "/dev/shm"])
    os.makedirs(WWW)
    os.makedirs(SCRATCH)
    os.chmod(SCRATCH, 0o1777)


def run_plain(argv):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), (r.stdout + r.stderr).decode(errors="replace").strip()))


def setup_network(cfg):
    run(["ip", "link", "set", "lo", "up"])
    run(["ip", "addr", "add", "%s/%d" % (cfg["addr"], cfg["prefix"]), "dev", cfg["if"]])
    run(["ip", "link", "set", cfg["if"], "up"])
    # Answers to any source (a sandbox's 10.0.2.x behind a router, say) go back to the host.
    run(["ip", "route", "add", "default", "via", cfg["host_addr"]])


# ---- content ------------------------------------------------------------------------------------

def make_www():
    write(WWW + "/index.html", "<!doctype html>\n<title>test internet</title>\n<h1>www.test</h1>\n")
    write(WWW + "/hello.txt", "hello from the test internet\n")


def git(cwd, *args, when=None):
    env = dict(os.environ, **GIT_ENV)
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = "@%d +0000" % when
    run(["git", "-C", cwd] + list(args), env=env)


def git_out(cwd, *args):
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run(["git", "-C", cwd] + list(args), env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_git():
    """demo.git: main (3 commits, README.md, hello.sh, CHANGELOG.md), tag v1.0 on the
    second commit, branch feature from v1.0 with one more commit."""
    src = ROOT + "/src/demo"
    t0 = 1704067200  # 2024-01-01T00:00:00Z
    os.makedirs(src)
    git(src, "init", "-q", "-b", "main")
    write(src + "/README.md", "# demo\n\nA tiny repository served by the sbx test internet "
          "(tests/integration/testnet.md).\n")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "Initial commit: README", when=t0)
    write(src + "/hello.sh", "#!/bin/sh\necho hello from demo\n", 0o755)
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "Add hello.sh", when=t0 + 3600)
    git(src, "tag", "-a", "v1.0", "-m", "Version 1.0", when=t0 + 3600)
    git(src, "checkout", "-q", "-b", "feature")
    write(src + "/feature.txt", "work in progress\n")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "Start the feature", when=t0 + 7200)
    git(src, "checkout", "-q", "main")
    write(src + "/CHANGELOG.md", "## 1.1\n\n- hello.sh prints a greeting\n")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "Add CHANGELOG", when=t0 + 10800)
    bare = WWW + "/demo.git"
    git(ROOT, "clone", "-q", "--bare", "--no-local", src, bare)
    # Dumb HTTP needs packs listed and info/refs written.
    git(bare, "repack", "-a", "-d", "-q")
    git(bare, "update-server-info")
    shutil.copytree(bare, PRIVATE_DIR + "/private.git")
    os.makedirs(SMART_ROOT)
    os.symlink(bare, SMART_ROOT + "/demo.git")
    os.symlink(PRIVATE_DIR + "/private.git", SMART_ROOT + "/private.git")
    info = {
        "git_head": git_out(bare, "rev-parse", "refs/heads/main"),
        "git_feature": git_out(bare, "rev-parse", "refs/heads/feature"),
        "git_tag": git_out(bare, "rev-parse", "v1.0^{commit}"),
    }
    shutil.rmtree(ROOT + "/src")
    return info


def tar_add(tar, name, data, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mode, ti.mtime = len(data), mode, TGZ_MTIME
    tar.addfile(ti, io.BytesIO(data))


def gzip_bytes(raw):
    """Deterministic gzip: no name, mtime 0, level 9 (zlib's output for the same input and level)."""
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0, compresslevel=9) as g:
        g.write(raw)
    return gz.getvalue()


def demo_tarball():
    """sbx-demo 1.0.0, made here: (manifest, tgz bytes)."""
    manifest = {"name": NPM_NAME, "version": NPM_VERSION, "description": "A tiny package served by the "
                "sbx test internet", "main": "index.js", "license": "MIT"}
    index = ("'use strict';\nmodule.exports = function hello() { return '%s'; };\n" % DEMO_TEXT).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar_add(tar, "package/package.json", json.dumps(manifest, indent=2).encode() + b"\n")
        tar_add(tar, "package/index.js", index)
    return manifest, gzip_bytes(raw.getvalue())


def pack_source(src):
    """A package directory packed as npm lays a tarball out (package/...), with
    fixed metadata so the bytes are the same on every run: (manifest, tgz bytes)."""
    with open(os.path.join(src, "package.json"), "rb") as f:
        manifest = json.loads(f.read())
    files = []
    for d, dirs, names in os.walk(src):
        dirs.sort()
        for n in sorted(names):
            files.append(os.path.relpath(os.path.join(d, n), src))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for rel in sorted(files):
            path = os.path.join(src, rel)
            with open(path, "rb") as f:
                data = f.read()
            tar_add(tar, "package/" + rel.replace(os.sep, "/"), data,
                    0o755 if os.stat(path).st_mode & 0o111 else 0o644)
    return manifest, gzip_bytes(raw.getvalue())


def npm_tarball_name(name, version):
    return "%s-%s.tgz" % (name.split("/")[-1], version)


def read_npm_packages(npm_dir):
    """Everything the registry will serve, read before /tmp is replaced (the
    sources or the tarball directory may live under the host's /tmp): a list of
    (name, version, manifest or None, tgz bytes)."""
    pkgs = []
    manifest, tgz = demo_tarball()
    pkgs.append((NPM_NAME, NPM_VERSION, manifest, tgz))
    if os.path.isdir(NPM_SOURCES):
        for n in sorted(os.listdir(NPM_SOURCES)):
            if os.path.isfile(os.path.join(NPM_SOURCES, n, "package.json")):
                manifest, tgz = pack_source(os.path.join(NPM_SOURCES, n))
                pkgs.append((manifest["name"], manifest["version"], manifest, tgz))
    if npm_dir and os.path.isdir(npm_dir):
        # <name>/-/<name>-<version>.tgz, or @scope/<name>/-/<name>-<version>.tgz: the registry's own layout.
        for d, dirs, names in os.walk(npm_dir):
            dirs.sort()
            if os.path.basename(d) != "-":
                continue
            name = os.path.relpath(os.path.dirname(d), npm_dir).replace(os.sep, "/")
            prefix = name.split("/")[-1] + "-"
            for f in sorted(names):
                if f.startswith(prefix) and f.endswith(".tgz") and not f.startswith("."):
                    with open(os.path.join(d, f), "rb") as t:
                        pkgs.append((name, f[len(prefix):-4], None, t.read()))
    return pkgs


NPM = {}          # name -> version -> {"file", "manifest", "shasum", "integrity"}, the last three None until asked
_npm_lock = threading.Lock()


def make_npm(pkgs):
    """/npm/<name>/-/<name>-<version>.tgz for each package; the packuments are
    made per request (their tarball URLs name the host the client asked)."""
    for name, version, manifest, tgz in pkgs:
        path = "%s/npm/%s/-/%s" % (WWW, name, npm_tarball_name(name, version))
        write(path, tgz)
        NPM.setdefault(name, {})[version] = {"file": path, "manifest": manifest, "shasum": None, "integrity": None}


def npm_details(v):
    """A served tarball's package.json and digests, read on first use: a large
    tarball costs the fixture's start only its copy, unless someone asks for
    its packument (npm ci with a lock file never does)."""
    with _npm_lock:
        if v["integrity"] is None:
            with open(v["file"], "rb") as f:
                tgz = f.read()
            v["shasum"] = hashlib.sha1(tgz).hexdigest()
            v["integrity"] = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
        if v["manifest"] is None:
            with tarfile.open(v["file"], mode="r:gz") as tar:
                for m in tar:
                    if m.isfile() and m.name.split("/", 1)[-1] == "package.json" and m.name.count("/") == 1:
                        v["manifest"] = json.loads(tar.extractfile(m).read())
                        break
                else:
                    v["manifest"] = {}
        return v


def version_key(v):
    """Release versions by their numbers, prereleases before their release."""
    core, _, pre = v.partition("-")
    nums = tuple(int(x) if x.isdigit() else 0 for x in core.split("+")[0].split("."))
    return nums, pre == "", pre


def packument(host, name):
    versions = {}
    for version, v in NPM[name].items():
        v = npm_details(v)
        m = {k: val for k, val in v["manifest"].items() if not k.startswith("_")}
        m.update(name=name, version=version, _id="%s@%s" % (name, version))
        m["dist"] = {"tarball": "http://%s/npm/%s/-/%s" % (host, name, npm_tarball_name(name, version)),
                     "shasum": v["shasum"], "integrity": v["integrity"]}
        versions[version] = m
    latest = max(versions, key=version_key)
    when = "2024-01-01T00:00:00.000Z"
    return {"_id": name, "name": name, "dist-tags": {"latest": latest}, "versions": versions,
            "time": dict({"created": when, "modified": when}, **{v: when for v in versions})}


def make_pypi():
    """A pure-Python wheel and the PEP 503 pages /pypi/simple/ and /pypi/simple/sbx-demo/."""
    mod = PY_NAME.replace("-", "_")
    dist = "%s-%s.dist-info" % (mod, PY_VERSION)
    files = {
        mod + "/__init__.py": "__version__ = '%s'\n\n\ndef hello():\n    return '%s'\n" % (PY_VERSION, DEMO_TEXT),
        dist + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: A tiny package served by "
                            "the sbx test internet\nLicense: MIT\n" % (PY_NAME, PY_VERSION),
        dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: testnet_services\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (name, digest, len(text.encode()))
    files[dist + "/RECORD"] = record + dist + "/RECORD,,\n"
    whl_name = "%s-%s-py3-none-any.whl" % (mod, PY_VERSION)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            zi = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, text)
    whl = buf.getvalue()
    write(WWW + "/pypi/files/" + whl_name, whl)
    sha = hashlib.sha256(whl).hexdigest()
    write(WWW + "/pypi/simple/index.html", '<!DOCTYPE html>\n<html><body>\n<a href="%s/">%s</a>\n</body></html>\n'
          % (PY_NAME, PY_NAME))
    write(WWW + "/pypi/simple/%s/index.html" % PY_NAME,
          '<!DOCTYPE html>\n<html><body>\n<a href="../../files/%s#sha256=%s">%s</a>\n</body></html>\n'
          % (whl_name, sha, whl_name))


# ---- the HTTP server ----------------------------------------------------------------------------

PATTERN = bytes(range(256)) * 256  # /bytes/N: byte i is i % 256


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: dumb-HTTP git and npm make many requests
    server_version = "testnet/1"
    sys_version = ""
    extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map,
                          **{".tgz": "application/octet-stream", ".whl": "application/octet-stream",
                             ".pack": "application/x-git-packed-objects"})

    def __init__(self, *args, **kw):
        super().__init__(*args, directory=WWW, **kw)

    def log_message(self, fmt, *args):
        # The access log is for tests (did the request arrive?), not for stderr.
        with _log_lock, open(ROOT + "/http.log", "a") as f:
            f.write("%s %s\n" % (self.client_address[0], fmt % args))

    def do_GET(self):
        self.route(True)

    def do_HEAD(self):
        self.route(False)

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/echo":
            return self.echo(True)
        if path.startswith("/smart/"):
            return self.smart_git(path, True)
        self.send_error(405)

    def route(self, body):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/echo":
            return self.echo(body)
        if path == "/redirect":
            # /redirect?to=URL: a 302 there, for tests of who follows redirects where.
            to = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("to", [""])[0]
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if path == "/private.git" or path.startswith("/private.git/"):
            return self.private_git(path, body)
        if path.startswith("/smart/"):
            return self.smart_git(path, body)
        m = re.fullmatch(r"/bytes/(\d{1,12})", path)
        if m:
            return self.send_bytes(int(m.group(1)), body)
        m = re.fullmatch(r"/npm/(@[^/]+(?:/|%2[fF])[^/]+|[^/@][^/]*)/?", path)
        if m and urllib.parse.unquote(m.group(1)) in NPM:
            host = self.headers.get("Host") or CFG["addr"]
            data = json.dumps(packument(host, urllib.parse.unquote(m.group(1)))).encode()
            return self.reply(200, "application/json", data, body)
        if m:
            return self.reply(404, "application/json", b'{"error":"Not found"}\n', body)
        return super().do_GET() if body else super().do_HEAD()

    def reply(self, code, ctype, data, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def private_git(self, path, body):
        """Dumb-HTTP private.git: 401 without the fixed token, else its files."""
        if self.headers.get("Authorization") != PRIVATE_AUTH:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private.git"')
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "13")
            self.end_headers()
            if body:
                self.wfile.write(b"unauthorized\n")
            return None
        rel = urllib.parse.unquote(path[len("/private.git"):]).lstrip("/")
        full = os.path.realpath(os.path.join(PRIVATE_DIR, "private.git", rel))
        if not full.startswith(PRIVATE_DIR + "/private.git/") or not os.path.isfile(full):
            return self.reply(404, "text/plain", b"not found\n", body)
        with open(full, "rb") as f:
            data = f.read()
        return self.reply(200, "application/octet-stream", data, body)

    def unauthorized(self, realm, body):
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="%s"' % realm)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "13")
        self.end_headers()
        if body:
            self.wfile.write(b"unauthorized\n")

    def request_body(self):
        """The request's body: Content-Length bytes, or a chunked body decoded."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()  # the chunk's CRLF
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def smart_git(self, path, body):
        """/smart/<repo>.git/...: git http-backend as a CGI (the request body,
        gzip-encoded or not, on its stdin; its Status and headers parsed).
        private.git asks for the same token as its dumb-HTTP twin."""
        data = self.request_body() if self.command == "POST" else b""
        if (path == "/smart/private.git" or path.startswith("/smart/private.git/")) \
                and self.headers.get("Authorization") != PRIVATE_AUTH:
            return self.unauthorized("private.git", body)
        env = dict(os.environ, **GIT_ENV)
        env.update(GIT_PROJECT_ROOT=SMART_ROOT, GIT_HTTP_EXPORT_ALL="1", REQUEST_METHOD=self.command,
                   PATH_INFO=path[len("/smart"):], QUERY_STRING=urllib.parse.urlsplit(self.path).query,
                   CONTENT_TYPE=self.headers.get("Content-Type") or "", CONTENT_LENGTH=str(len(data)),
                   REMOTE_ADDR=self.client_address[0], SERVER_PROTOCOL="HTTP/1.1",
                   GATEWAY_INTERFACE="CGI/1.1")
        for h in ("Content-Encoding", "Git-Protocol", "Accept"):
            if self.headers.get(h):
                env["HTTP_" + h.upper().replace("-", "_")] = self.headers[h]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        env["GIT_CONFIG_COUNT"] = str(len(SMART_CONFIG))
        for i, (k, v) in enumerate(SMART_CONFIG.items()):
            env["GIT_CONFIG_KEY_%d" % i], env["GIT_CONFIG_VALUE_%d" % i] = k, v
        # No preexec_fn in a thread; the holder's PID namespace ends it anyway.
        r = subprocess.run(["git", "http-backend"], input=data, capture_output=True, env=env)
        with _log_lock, open(ROOT + "/smart-http.log", "ab") as f:
            f.write(b"%s %s exit %d\n%s" % (self.command.encode(), self.path.encode(), r.returncode, r.stderr))
        head, sep, out = r.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, out = r.stdout.partition(b"\n\n")
        if not sep:
            return self.reply(500, "text/plain", b"git http-backend gave no headers\n", body)
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            if k.strip().lower() == "status":
                status = int(v.split()[0])
            elif k.strip().lower() != "content-length":
                headers.append((k.strip(), v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if body:
            self.wfile.write(out)
        return None

    def echo(self, body):
        text = self.requestline + "\n" + str(self.headers)
        n = int(self.headers.get("Content-Length") or 0)
        data = text.encode("latin-1", "replace")
        if n:
            data += self.rfile.read(n)
        self.reply(200, "text/plain; charset=utf-8", data, body)

    def send_bytes(self, n, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if not body:
            return
        off = 0
        while off < n:
            k = min(len(PATTERN), n - off)
            self.wfile.write(PATTERN[:k])  # n - off is a multiple of 256 until the end
            off += k


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


# ---- git daemon and PostgreSQL ----------------------------------------------------------------------

def start_git_daemon(cfg):
    log_f = open(ROOT + "/git-daemon.log", "ab")
    return subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--informative-errors",
                             "--base-path=" + WWW, "--listen=" + cfg["addr"], "--port=%d" % GIT_PORT,
                             "--log-destination=stderr", WWW],
                            env=dict(os.environ, **GIT_ENV), stdin=subprocess.DEVNULL, stdout=log_f,
                            stderr=log_f, preexec_fn=pdeathsig)


def as_nobody():
    return {"user": NOBODY, "group": NOBODY, "extra_groups": [], "preexec_fn": pdeathsig}


def start_db(cfg):
    data, sock = ROOT + "/pg/data", ROOT + "/pg/sock"
    for d in (ROOT + "/pg", data, sock):
        os.makedirs(d, mode=0o700)
        os.chown(d, NOBODY, NOBODY)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": ROOT + "/pg", "LC_ALL": "C", "LANG": "C"}
    run([PG_BIN + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
         "--no-sync", "--no-instructions"], env=env, cwd=ROOT + "/pg", **as_nobody())
    write(data + "/pg_hba.conf", "local all all trust\n"
          "host all all 127.0.0.1/32 trust\n"
          "host all all %s trust\n"
          "host all all 10.0.2.0/24 trust\n" % cfg["subnet"], 0o600)
    os.chown(data + "/pg_hba.conf", NOBODY, NOBODY)
    log_f = open(ROOT + "/pg/postgres.log", "ab")
    opts = {"listen_addresses": "%s,127.0.0.1" % cfg["addr"], "port": str(DB_PORT),
            "unix_socket_directories": sock, "fsync": "off", "synchronous_commit": "off",
            "full_page_writes": "off", "shared_buffers": "16MB", "max_connections": "40",
            "dynamic_shared_memory_type": "posix", "logging_collector": "off"}
    argv = [PG_BIN + "/postgres", "-D", data]
    for k, v in opts.items():
        argv += ["-c", "%s=%s" % (k, v)]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT + "/pg", stdin=subprocess.DEVNULL, stdout=log_f,
                            stderr=log_f, **as_nobody())
    psql = [PG_BIN + "/psql", "-X", "-q", "-h", sock, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1"]
    deadline = time.monotonic() + 30
    while subprocess.run(psql + ["-c", "SELECT 1"], env=env, stdin=subprocess.DEVNULL,
                         capture_output=True).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("PostgreSQL did not start: %s" % tail(ROOT + "/pg/postgres.log"))
        time.sleep(0.05)
    run(psql + ["-c", "CREATE ROLE app LOGIN", "-c", "CREATE DATABASE app OWNER app"], env=env)
    return proc


def wait_tcp(addr, port, what, proc=None, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((addr, port), timeout=2).close()
            return
        except OSError as e:
            if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
                raise RuntimeError("%s does not answer on %s:%d: %s" % (what, addr, port, e))
            time.sleep(0.02)


# ---- main ---------------------------------------------------------------------------------------

CFG = {}


def main():
    os.environ["PATH"] = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"  # ip, mount
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))  # PID 1 ignores it otherwise
    line = sys.stdin.readline()
    if not line:
        os._exit(0)  # the test died before the network was ready
    CFG.update(json.loads(line))
    try:
        npm_pkgs = read_npm_packages(CFG.get("npm_dir"))
        setup_mounts()
        setup_network(CFG)
        make_www()
        info = make_git()
        make_npm(npm_pkgs)
        make_pypi()
        # Processes first, threads after: preexec_fn is not safe in a threaded process.
        git_d = start_git_daemon(CFG)
        db = start_db(CFG) if CFG.get("db") else None
        server = Server(("0.0.0.0", HTTP_PORT), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        wait_tcp(CFG["addr"], HTTP_PORT, "the HTTP server")
        wait_tcp(CFG["addr"], GIT_PORT, "git daemon", git_d)
        run(["git", "ls-remote", "git://%s/demo.git" % CFG["addr"]], env=dict(os.environ, **GIT_ENV))
        if db:
            wait_tcp(CFG["addr"], DB_PORT, "PostgreSQL", db)
    except Exception as e:  # noqa: BLE001 - any failure is the fixture's answer
        msg = "%s: %s" % (type(e).__name__, e)
        sys.stdout.write("FAIL %s\n" % msg.replace("\n", " | "))
        sys.stdout.flush()
        os._exit(1)
    info.update(root=ROOT, www=WWW, scratch=SCRATCH, http_port=HTTP_PORT, git_port=GIT_PORT,
                db_port=DB_PORT if db else 0)
    sys.stdout.write("READY %s\n" % json.dumps(info))
    sys.stdout.flush()
    # Until the test closes our stdin (or dies): reap orphans, report dead services.
    procs = {"git daemon": git_d, "PostgreSQL": db}
    while True:
        r, _, _ = select.select([0], [], [], 1.0)
        if r and not os.read(0, 4096):
            os._exit(0)
        for name, p in list(procs.items()):
            if p is not None and p.poll() is not None:
                log("%s exited with %s" % (name, p.returncode))
                procs[name] = None
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass


def serve_npm(port, npm_dir):
    """Not for tests: the npm registry alone on 127.0.0.1:PORT, in a temporary
    directory, for making a lock file against it (tests/fixtures/ts-project/README.md).
    Prints each tarball's integrity."""
    import tempfile
    global ROOT, WWW
    ROOT = tempfile.mkdtemp(prefix="testnet-npm-")
    WWW = ROOT + "/www"
    make_npm(read_npm_packages(npm_dir))
    for name in sorted(NPM):
        for version, v in sorted(NPM[name].items()):
            print("%s@%s %s" % (name, version, npm_details(v)["integrity"]))
    CFG["addr"] = "127.0.0.1:%d" % port
    print("serving http://127.0.0.1:%d/npm/ from %s (Ctrl-C or SIGTERM ends)" % (port, WWW), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # and so the temporary directory goes
    try:
        Server(("127.0.0.1", port), Handler).serve_forever()
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve-npm":
        serve_npm(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        main()
