#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun netpolicy show: every preset, its inputs, the JSON it prints, errors
# and exit codes (doc/netpolicy.md).
#   check-cli-netpolicy.sh SBXRUN
set -u
[ $# -eq 1 ] || { echo "usage: $0 SBXRUN" >&2; exit 2; }
sbxrun=$1
fail=0
tmp=$(mktemp -d)
out=$tmp/out err=$tmp/err
trap 'rm -rf "$tmp"' EXIT
ncase=0

run() { "$sbxrun" netpolicy "$@" >"$out" 2>"$err"; rc=$?; }
bad() { echo "FAIL: sbxrun netpolicy $*"; fail=1; }

# ok MODE DOMAINS CIDRS -- ARGS: exit 0 and nothing on stderr. stdout is kept
# for check_all, which wants one JSON document, newline-terminated, with that
# mode and exactly those allowedDomains and allowedCIDRs (comma-separated,
# "" = absent) and no other field.
ok() {
  local mode=$1 domains=$2 cidrs=$3; shift 4
  run "$@"
  if [ $rc -ne 0 ]; then bad "$* exited $rc, expected 0: $(cat "$err")"; return; fi
  if [ -s "$err" ]; then bad "$* wrote to stderr: $(cat "$err")"; return; fi
  ncase=$((ncase + 1))
  cp "$out" "$tmp/case$ncase.out"
  printf '%s\t%s\t%s\t%s\t%s\n' "$ncase" "$mode" "$domains" "$cidrs" "$*" >>"$tmp/cases"
}

# One python3 checks every kept output: it is slow to start.
check_all() {
  python3 - "$tmp" <<'EOF'
import json, sys
tmp = sys.argv[1]
failed = False
for line in open(f"{tmp}/cases", encoding="utf-8"):
    n, mode, domains, cidrs, args = line.rstrip("\n").split("\t")
    text = open(f"{tmp}/case{n}.out", encoding="utf-8").read()
    try:
        assert text.endswith("\n"), "output does not end in a newline"
        doc = json.loads(text)  # one document: anything after it raises
        assert isinstance(doc, dict), "not an object"
        assert doc.get("mode") == mode, f"mode {doc.get('mode')!r}, expected {mode!r}"
        want = {"mode"}
        for key, spec in (("allowedDomains", domains), ("allowedCIDRs", cidrs)):
            if spec:
                want.add(key)
                assert doc.get(key) == spec.split(","), f"{key} {doc.get(key)!r}, expected {spec.split(',')!r}"
        assert not set(doc) - want, f"unexpected fields {sorted(set(doc) - want)}"
        print(f"ok: {args} -> {mode} [{domains}] [{cidrs}]")
    except (AssertionError, ValueError) as e:
        print(f"FAIL: sbxrun netpolicy {args}: {e}: {text!r}")
        failed = True
sys.exit(1 if failed else 0)
EOF
}

# err CODE TEXT SECRET -- ARGS: exit CODE, nothing on stdout, one stderr line
# "sbxrun netpolicy: ..." holding TEXT and not SECRET (if not ""), then, for
# a usage error (2), the pointer to the help.
err() {
  local code=$1 text=$2 secret=$3; shift 4
  run "$@"
  if [ $rc -ne "$code" ]; then bad "$* exited $rc, expected $code: $(cat "$err")"; return; fi
  if [ -s "$out" ]; then bad "$* wrote to stdout: $(cat "$out")"; return; fi
  if [ "$code" -eq 2 ]; then
    if [ "$(wc -l <"$err")" -ne 2 ] || [ "$(tail -n 1 "$err")" != "(see 'sbxrun netpolicy --help')" ]; then
      bad "$* wrote $(wc -l <"$err") lines to stderr, not the message and the help pointer: $(cat "$err")"; return
    fi
  elif [ "$(wc -l <"$err")" -ne 1 ]; then bad "$* wrote $(wc -l <"$err") lines to stderr: $(cat "$err")"; return; fi
  case "$(head -n 1 "$err")" in
    "sbxrun netpolicy: "*"$text"*) ;;
    *) bad "$* said '$(cat "$err")', expected 'sbxrun netpolicy: ...$text...'"; return ;;
  esac
  if [ -n "$secret" ] && grep -qF -- "$secret" "$err"; then bad "$* showed the secret: $(cat "$err")"; return; fi
  echo "ok: ${*//$'\n'/\\n} -> $code"
}

# ---- help and usage ----
for args in "--help" "show --help" "show verify.test --help"; do
  # shellcheck disable=SC2086
  run $args
  if [ $rc -eq 0 ] && grep -q "^usage: sbxrun netpolicy show JOBTYPE" "$out" && [ ! -s "$err" ]; then
    echo "ok: $args -> 0"
  else bad "$args exited $rc: $(cat "$out" "$err")"; fi
done
run
if [ $rc -eq 2 ] && grep -q "^usage: sbxrun netpolicy" "$err" && [ ! -s "$out" ]; then echo "ok: (no args) -> 2"
else bad "(no args) exited $rc"; fi
if "$sbxrun" help netpolicy | grep -q "^usage: sbxrun netpolicy"; then echo "ok: sbxrun help netpolicy"
else bad "help netpolicy"; fi

err 2 "unknown subcommand 'list'" "" -- list
err 2 "show needs a JOBTYPE" "" -- show
err 2 "show takes one JOBTYPE" "S3CRET" -- show db.migrate url=postgres://u:S3CRET@db.example.com/app
err 2 "unknown option '--bogus'" "S3CRET" -- show verify.test --bogus=S3CRET
err 2 "unknown option '-x'" "S3CRET" -- show -xS3CRET verify.test
err 2 "option '--input' needs a value" "" -- show verify.test --input
err 2 "--input wants KEY=VALUE (this one has no '=')" "S3CRET" -- show db.migrate --input postgres://u:S3CRET@h
err 2 "empty KEY" "" -- show db.migrate --input =db.example.com

# ---- every preset ----
npm="registry.npmjs.org,registry.yarnpkg.com,repo.yarnpkg.com"
for job in verify.lint verify.typecheck verify.test verify.build repo.applyPatch; do
  ok deny-all "" "" -- show "$job"
  ok deny-all "" "" -- show "$job" --compact
  err 2 "$job: unknown input 'url' ($job takes no inputs)" "" -- show "$job" --input url=https://github.com/o/r
done
ok custom github.com "" -- show repo.clone --input url=https://github.com/o/r.git
ok custom github.com "" -- show repo.clone --input "url=https://x-access-token:S3CRET@github.com/o/r.git"
ok custom github.com "" -- show repo.clone --input url=git@github.com:o/r.git
ok custom gitlab.example.com "" -- show repo.clone --input url=ssh://git@GitLab.example.com:2222/o/r.git
ok custom git.kernel.org "" -- show repo.clone --input url=git://git.kernel.org/pub/scm/git/git.git --compact
ok custom "" 10.1.2.3/32 -- show repo.clone --input url=https://10.1.2.3/r.git
ok custom "" 2001:db8::1/128 -- show repo.clone --input "url=https://[2001:db8::1]:8443/r.git"
ok custom "$npm" "" -- show deps.install
ok custom "$npm,npm.example.com" "" -- show deps.install --input registry=https://npm.example.com:4873/
ok custom "$npm,npm.example.com" 10.0.0.9/32 -- show deps.install --input registry=https://npm.example.com/ \
  --input registry=http://10.0.0.9:8080/
# "install": deps.install's name before 1.0, still accepted.
ok custom "$npm" "" -- show install
ok custom "$npm,npm.example.com" "" -- show install --input registry=https://npm.example.com/
ok custom db.example.com "" -- show db.migrate --input "url=postgres://admin:S3CRET@db.example.com:5432/app?sslmode=require"
ok custom "cluster0.ab12c.mongodb.net,*.ab12c.mongodb.net" "" -- \
  show db.migrate --input "url=mongodb+srv://u:S3CRET@cluster0.ab12c.mongodb.net/?retryWrites=true"
ok custom "h1.example.com,h2.example.com" "" -- show db.migrate --input url=mongodb://h1.example.com,h2.example.com:27018/db
ok custom "" 10.0.0.5/32 -- show db.migrate --input "url=redis://:S3CRET@10.0.0.5:6379/0"
ok custom db.example.com "" -- show db.migrate --input host=db.example.com:5432
ok custom "" 2001:db8::7/128 -- show db.migrate --input "host=[2001:db8::7]:5432"

# Options may come before the job type; --compact prints one line.
ok custom github.com "" -- show --compact --input url=https://github.com/o/r repo.clone
if [ "$(wc -l <"$out")" -eq 1 ]; then echo "ok: --compact is one line"; else bad "--compact printed $(wc -l <"$out") lines"; fi
"$sbxrun" netpolicy show deps.install >"$out" 2>/dev/null
if [ "$(wc -l <"$out")" -gt 1 ]; then echo "ok: default output is indented"; else bad "default output is one line"; fi

# Secrets never reach stdout either.
"$sbxrun" netpolicy show db.migrate --input "url=postgres://admin:S3CRET@db.example.com/app" --compact >"$out" 2>&1
if grep -qF S3CRET "$out" || grep -qF admin "$out"; then bad "the db URL's user-info reached the output"
else echo "ok: no user-info in the output"; fi

# ---- errors ----
err 2 "unknown job type 'verify.nope'" "" -- show verify.nope
err 2 "unknown job type 'deploy'" "" -- show deploy --input url=https://x.example.com
err 2 "unknown job type 'x' (known: repo.clone, repo.applyPatch, deps.install, verify.lint, verify.typecheck, verify.test, verify.build, db.migrate)" "" -- show x
err 2 "repo.clone: input 'url' (the repository to clone) is missing" "" -- show repo.clone
err 2 "unknown input 'uri' (repo.clone takes only 'url')" "" -- show repo.clone --input uri=https://github.com/o/r
err 2 "input 'url' is given twice" "" -- show repo.clone --input url=https://a.example.com/r --input url=https://b.example.com/r
err 2 "input 'url' is empty" "" -- show repo.clone --input url=
err 2 "local file: URL" "" -- show repo.clone --input url=file:///srv/r.git
err 2 "remote helper" "" -- show repo.clone --input "url=ext::sh -c touch% /tmp/pwned"
err 2 "remote helper" "" -- show repo.clone --input url=fd::3
err 2 "'/srv/r.git' is a local path" "" -- show repo.clone --input url=/srv/r.git
err 2 "'https://***@/o/r' has no host" "S3CRET" -- show repo.clone --input "url=https://u:S3CRET@/o/r"
err 2 "the scheme 'ftp'" "S3CRET" -- show repo.clone --input "url=ftp://u:S3CRET@host.example.com/r"
err 2 "'localhost' is not a domain name" "S3CRET" -- show repo.clone --input "url=https://u:S3CRET@localhost/r"
err 2 "has a control character" "S3CRET" -- show repo.clone --input "url=https://u:S3CRET@github.com/o/r"$'\n'".git"
err 2 "is not an http:// or https:// URL" "" -- show deps.install --input registry=ftp://npm.example.com/
err 2 "unknown input 'url' (deps.install takes only 'registry')" "" -- show deps.install --input url=https://npm.example.com/
err 2 "unknown input 'url' (deps.install takes only 'registry')" "" -- show install --input url=https://npm.example.com/
err 2 "unknown database scheme 'oracle'" "S3CRET" -- show db.migrate --input "url=oracle://u:S3CRET@db.example.com/app"
err 2 "'postgres://***@/app?...' has no host" "S3CRET" -- show db.migrate --input "url=postgres://u:S3CRET@/app?host=/run"
err 2 "the port 'port'" "S3CRET" -- show db.migrate --input "url=postgres://u:S3CRET@db.example.com:port/app"
err 2 "give input 'url' or 'host', not both" "" -- show db.migrate --input url=postgres://db.example.com/a --input host=db.example.com
err 2 "input 'url' or 'host' (the database server) is missing" "" -- show db.migrate
err 2 "give the host alone" "S3CRET" -- show db.migrate --input "host=u:S3CRET@db.example.com"
err 2 "'db' is not a domain name" "" -- show db.migrate --input host=db
err 2 "IP address" "" -- show db.migrate --input "url=mongodb+srv://10.0.0.1/"

check_all || fail=1
exit $fail
