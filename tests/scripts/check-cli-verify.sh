#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun verify (the main job) on examples/demo-project against a real sbxd:
#   check-cli-verify.sh SBXRUN SBXD SOURCE_ROOT
# The demo is copied into a git repository of its own (verify reads the
# files tracked at a revision), then verified with each patch: exit codes,
# the --json envelope, the transcript, patches refused before any sandbox,
# the private sbxd used when no endpoint is set. TAP output.
set -u
[ $# -eq 3 ] || { echo "usage: $0 SBXRUN SBXD SOURCE_ROOT" >&2; exit 2; }
sbxrun=$1 sbxd=$2 src=$3
dir=$(mktemp -d /tmp/sbxrun-verify-XXXXXX)
chmod 711 "$dir"
n=0 fail=0
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; printf '%s\n' "$@" | sed 's/^/#   /'; }
# run WANT_RC DESCRIPTION -- ARGS...: stdout in $out, stderr in $dir/err
run() {
  local want=$1 what=$2; shift 3
  out=$("$sbxrun" "$@" 2>"$dir/err"); rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$what"
  else not_ok "$what" "exit $rc, expected $want" "stdout: $out" "stderr: $(tail -20 "$dir/err")"; fi
}
# py DESCRIPTION PYTHON: an assertion on the envelope e (from $out), d its result
py() {
  if printf '%s' "$out" | python3 -c '
import json, sys
e = json.load(sys.stdin)
d = e.get("result")
assert '"$2"', e
' 2>"$dir/pyerr"; then ok "$1"; else not_ok "$1" "$(tail -3 "$dir/pyerr")"; fi
}

command -v node >/dev/null || { echo "Bail out! node is needed (scripts/dev installs nodejs)"; exit 1; }
demo="$dir/demo"
cp -r "$src/examples/demo-project" "$demo"
git -C "$demo" init -q && git -C "$demo" add -A &&
  git -C "$demo" -c user.name=t -c user.email=t@t commit -qm base || { echo "Bail out! git"; exit 1; }
patches="$src/examples/demo-project/patches"

# 1. A private sbxd, started and stopped by verify itself (no endpoint set).
unset SBXRUN_ENDPOINT SBXRUN_TOKEN VERCEL_OIDC_TOKEN VERCEL_TOKEN
export XDG_STATE_HOME="$dir/nostate" SBXD="$sbxd"
run 0 "the demo at its base passes (a private sbxd)" -- verify "$demo"
grep -q "lint: passed" "$dir/err" && grep -q "test: passed" "$dir/err" && ok "lint and test ran" ||
  not_ok "lint and test lines" "$(cat "$dir/err")"

# 2. Our own sbxd from here on: its log shows what reached it.
"$sbxd" --listen "unix:$dir/sbxd.sock" --state-dir "$dir/state" --log-level debug >"$dir/out" 2>"$dir/sbxd.log" &
pid=$!
for _ in $(seq 100); do grep -q 'listening' "$dir/out" 2>/dev/null && break; sleep 0.1; done
grep -q 'listening' "$dir/out" || { echo "Bail out! sbxd did not start: $(tail -5 "$dir/sbxd.log")"; exit 1; }
export SBXRUN_ENDPOINT="unix:$dir/sbxd.sock" SBXRUN_TOKEN="$(cat "$dir/state/token")"
# Sandboxes created, whichever protocol version made them.
created() { grep -cE 'POST /v[0-9]+/sandboxes -> 20[01]' "$dir/sbxd.log"; }
created_v1() { grep -cE 'POST /v1/sandboxes -> 20[01]' "$dir/sbxd.log"; }
# schema: the result d validates against doc/schemas/run-result-1.json
schema() {
  if printf '%s' "$out" | python3 -c '
import json, sys, jsonschema
e = json.load(sys.stdin)
with open(sys.argv[1]) as f:
    jsonschema.validate(e["result"], json.load(f))
' "$src/doc/schemas/run-result-1.json" 2>"$dir/pyerr"; then ok "$1"; else not_ok "$1" "$(tail -3 "$dir/pyerr")"; fi
}

run 1 "a patch that breaks a test: exit 1" -- verify "$demo" --patch "$patches/break-test.patch"
[ "$(created)" -ge 1 ] && ok "the server's log counts the sandbox verify created" ||
  not_ok "no sandbox creation in the log" "$(grep -m3 POST "$dir/sbxd.log")"
grep -q -- "---- stdout" "$dir/err" && grep -q "test: failed" "$dir/err" && ok "the failing test's output is shown" || not_ok "failing tail" "$(cat "$dir/err")"
run 0 "a patch that adds a feature with its test: exit 0" -- verify "$demo" --patch "$patches/add-feature.patch"

run 1 "--json on a failure" -- verify "$demo" --patch "$patches/break-test.patch" --json
py "the envelope of a failed run" 'e["sbxrun"] == "verify" and e["ok"] is False and e["exitCode"] == 1 and d["status"] == "failed"'
py "jobs in order, the failing one last" '[j["jobType"] for j in d["jobs"]] == ["verify.lint", "verify.test"] and d["jobs"][1]["status"] == "failed" and d["jobs"][1]["exitCode"] != 0'
py "the patch and the base commit are in the result" 'd["patches"][0]["files"][0]["path"] == "src/text.js" and len(d["baseCommit"]) == 40'
schema "a failed run's result follows run-result-1.json"
[ "$(printf '%s' "$out" | head -c1)" = "{" ] && ok "--json: nothing but the object on stdout" || not_ok "stdout" "$out"

run 0 "--json on a pass" -- verify "$demo" --patch "$patches/add-feature.patch" --json
py "passed" 'e["ok"] is True and d["status"] == "passed" and all(j["status"] == "passed" for j in d["jobs"])'
schema "a passed run's result follows run-result-1.json"
! grep -q "warning" "$dir/err" && ok "a tree of regular files only: no warning" || not_ok "a warning" "$(cat "$dir/err")"
py "a tree of regular files only: nothing under notUploaded" '"notUploaded" not in d'

# The upload takes regular files only: the tree's symbolic links and
# submodules are named in a warning, and in the --json result.
cp -r "$demo" "$dir/linked" && ln -s src/text.js "$dir/linked/text.js" && git -C "$dir/linked" add -A &&
  git -C "$dir/linked" update-index --add --cacheinfo "160000,$(git -C "$dir/linked" rev-parse HEAD),vendor/lib" &&
  git -C "$dir/linked" -c user.name=t -c user.email=t@t commit -qm links || { echo "Bail out! git"; exit 1; }
warning="sbxrun verify: warning: 1 symbolic link and 1 submodule of the tree are not sent (a sandbox's file upload takes regular files only): text.js, vendor/lib"
run 0 "a tree with a symbolic link and a submodule" -- verify "$dir/linked" --no-install
grep -qxF "$warning" "$dir/err" && ok "the warning names them and why" || not_ok "warning" "$(cat "$dir/err")"
run 0 "the same with --json" -- verify "$dir/linked" --no-install --json
grep -qxF "$warning" "$dir/err" && ok "--json: the warning on stderr" || not_ok "--json warning" "$(cat "$dir/err")"
py "--json: notUploaded in the result" 'd["notUploaded"] == {"symlinks": 1, "submodules": 1, "examples": ["text.js", "vendor/lib"]}'
schema "a result with notUploaded follows run-result-1.json"

# Patches refused on this machine: nothing reaches the server.
before=$(created)
printf 'diff --git a/../x b/../x\nnew file mode 100644\n--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n' >"$dir/unsafe.patch"
run 3 "an unsafe patch: exit 3" -- verify "$demo" --patch "$dir/unsafe.patch"
grep -q "(rule dotdot)" "$dir/err" && ok "the rule is named" || not_ok "unsafe message" "$(cat "$dir/err")"
printf 'diff --git a/src/text.js b/src/text.js\n--- a/src/text.js\n+++ b/src/text.js\n@@ -1,1 +1,1 @@\n-no such line\n+x\n' >"$dir/stale.patch"
run 4 "a patch that does not apply: exit 4" -- verify "$demo" --patch "$dir/stale.patch"
run 4 --json -- verify "$demo" --patch "$dir/stale.patch" --json
py "does-not-apply as an error envelope" 'e["exitCode"] == 4 and e["error"]["status"] == "SBX_E_PATCH" and "does not apply" in e["error"]["message"]'
run 3 "a step the policy refuses: exit 3, before any sandbox" -- verify "$demo" --test "sh -c 'exit 0'"
grep -q "program_not_allowed" "$dir/err" && ok "the policy's reason is shown" || not_ok "denied message" "$(cat "$dir/err")"
[ "$(created)" = "$before" ] && ok "no sandbox was created for a refused patch or step" ||
  not_ok "sandboxes created" "$before -> $(created)"
# Stacked patches: each is checked against what the ones before it leave.
cp -r "$demo" "$dir/stack" && git -C "$dir/stack" apply "$patches/add-feature.patch" &&
  git -C "$dir/stack" add -A && git -C "$dir/stack" -c user.name=t -c user.email=t@t commit -qm feature &&
  sed -i 's/^module.exports = {/\/\/ stacked on add-feature\nmodule.exports = {/' "$dir/stack/src/text.js" &&
  git -C "$dir/stack" diff >"$dir/on-top.patch" && [ -s "$dir/on-top.patch" ] ||
  { echo "Bail out! could not make a stacked patch"; exit 1; }
run 0 "two patches, the second on top of the first: exit 0" -- verify "$demo" --patch "$patches/add-feature.patch" \
  --patch "$dir/on-top.patch" --json
py "both patches in the result, in order" 'len(d["patches"]) == 2 and d["patches"][1]["files"][0]["path"] == "src/text.js" and d["status"] == "passed"'
run 4 "the second patch alone does not apply to the base: exit 4" -- verify "$demo" --patch "$dir/on-top.patch"
run 4 "the same patch twice: the second does not apply: exit 4" -- verify "$demo" \
  --patch "$patches/add-feature.patch" --patch "$patches/add-feature.patch"
run 2 "a shell operator in a step: exit 2" -- verify "$demo" --test "node --test | cat"
# Usage errors are found before any endpoint is opened (which may start a
# private sbxd): with one that does not exist, each still exits 2 with its
# own message.
mkdir "$dir/noscripts" && echo x >"$dir/noscripts/README" && git -C "$dir/noscripts" init -q &&
  git -C "$dir/noscripts" add -A && git -C "$dir/noscripts" -c user.name=t -c user.email=t@t commit -qm x ||
  { echo "Bail out! git"; exit 1; }
nowhere=unix:/nonexistent/sock
usage_first() { # DESCRIPTION MESSAGE ARGS...: exit 2 with MESSAGE, no endpoint opened
  local what=$1 msg=$2; shift 2
  SBXRUN_ENDPOINT=$nowhere run 2 "$what, before any endpoint: exit 2" -- verify "$@"
  grep -qF -- "$msg" "$dir/err" && ! grep -q "nonexistent" "$dir/err" && ok "$what: its own message" ||
    not_ok "$what: message" "$(cat "$dir/err")"
}
usage_first "nothing to verify" "nothing to verify: the project (no package.json)" "$dir/noscripts"
usage_first "a shell operator in a step" "'|' in \"node --test | cat\": commands run without a shell" "$demo" \
  --test "node --test | cat"
usage_first "--env of a variable sbxrun does not have" "--env SBX_NO_SUCH_VARIABLE: no such variable" "$demo" \
  --env SBX_NO_SUCH_VARIABLE
usage_first "--env with a bad name" "--env 1BAD: environment variable name" "$demo" --env 1BAD=x
run 2 "a directory outside any repository: exit 2" -- verify /
run 2 "an empty --test command: exit 2" -- verify "$demo" --test ""

# --install CMD: run as given in place of the lockfile's install, under the
# install's policy and preset.
run 0 "--install CMD runs that command" -- verify "$demo" --install "npm install --ignore-scripts --no-audit --no-fund" --json
py "the install step ran the command given" 'd["jobs"][0]["jobType"] == "deps.install" and d["jobs"][0]["status"] == "passed" and d["jobs"][0]["steps"][0]["argv"][:2] == ["npm", "install"]'
run 3 "--install CMD the install's policy refuses: exit 3" -- verify "$demo" --install "node -e 1"
run 2 "--install CMD with --allow-scripts: exit 2" -- verify "$demo" --install "npm ci" --allow-scripts

# The same verify speaks protocol v1 too.
before=$(created_v1)
SBXRUN_PROTOCOL=v1 run 1 "protocol v1: a patch that breaks a test: exit 1" -- verify "$demo" --patch "$patches/break-test.patch" --json
py "protocol v1: the failing job" 'd["status"] == "failed" and [j["jobType"] for j in d["jobs"]] == ["verify.lint", "verify.test"]'
[ "$(created_v1)" -gt "$before" ] && ok "protocol v1: the sandbox was created with POST /v1/sandboxes" ||
  not_ok "no v1 creation" "$(grep -m3 POST "$dir/sbxd.log")"
SBXRUN_PROTOCOL=v1 run 0 "protocol v1: a patch that adds a feature: exit 0" -- verify "$demo" --patch "$patches/add-feature.patch"

# Steps given on the command line; a timeout.
run 0 "--test CMD replaces the script" -- verify "$demo" --test "node --test" --lint "node scripts/lint.js"
printf 'const { test } = require("node:test");\ntest("slow", () => new Promise((r) => setTimeout(r, 60000)));\n' >"$demo/test/slow.test.js"
git -C "$demo" add -A && git -C "$demo" -c user.name=t -c user.email=t@t commit -qm slow
run 124 "past --timeout: exit 124" -- verify "$demo" --timeout 4s
# Ctrl-C: the running step is cancelled, the sandbox stopped, exit 130.
running() { "$sbxrun" sandbox list --json 2>/dev/null | grep -c '"status": "running"'; }
before=$(running)
"$sbxrun" verify "$demo" >/dev/null 2>"$dir/err" &
vpid=$!
for _ in $(seq 100); do grep -q "test$" "$dir/err" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -INT "$vpid"; wait "$vpid"; rc=$?
[ "$rc" -eq 130 ] && ok "SIGINT: exit 130" || not_ok "SIGINT exit" "exit $rc" "$(cat "$dir/err")"
[ "$(running)" = "$before" ] && ok "SIGINT: the sandbox was stopped" || not_ok "sandbox left running" "$before -> $(running)"
# The same with a private sbxd: it goes too.
env -u SBXRUN_ENDPOINT -u SBXRUN_TOKEN XDG_STATE_HOME="$dir/nostate2" "$sbxrun" verify "$demo" >/dev/null 2>"$dir/err" &
vpid=$!
for _ in $(seq 100); do grep -q "test$" "$dir/err" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
spid=$(pgrep -P "$vpid" -x sbxd | head -1)
kill -INT "$vpid"; wait "$vpid"; rc=$?
[ "$rc" -eq 130 ] && ok "SIGINT with a private sbxd: exit 130" || not_ok "SIGINT exit (private)" "exit $rc" "$(cat "$dir/err")"
if [ -z "$spid" ]; then not_ok "no private sbxd was found under verify"
else
  for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$spid" 2>/dev/null && not_ok "the private sbxd $spid was left after SIGINT" || ok "SIGINT: the private sbxd is gone"
fi
git -C "$demo" reset -q --hard HEAD~1
run 0 "--base names another revision" -- verify "$demo" --base HEAD

# --repo: fetched here with libgit2, the patches checked against --ref.
git clone -q --bare "$demo" "$dir/src.git"
run 2 "--ref without --repo: exit 2" -- verify "$demo" --ref main
run 125 "--repo that cannot be fetched: exit 125" -- verify --repo "file://$dir/nowhere.git"
grep -q "cannot fetch" "$dir/err" && ok "the fetch failure is named" || not_ok "fetch message" "$(cat "$dir/err")"
run 4 "--repo: a patch checked against the fetched commit" -- verify --repo "$dir/src.git" --patch "$dir/stale.patch"
run 2 "--repo: no such --ref" -- verify --repo "$dir/src.git" --ref no-such-branch
# A token is never part of the URL: --token-env names the variable that
# holds it. Refused before anything is fetched or opened.
SBXRUN_ENDPOINT=$nowhere run 2 "--repo with user:password@: exit 2" -- verify \
  --repo "https://u:pw-never-shown@git.example.com/r.git"
grep -qF -- "--token-env NAME" "$dir/err" && ! grep -q "pw-never-shown" "$dir/err" &&
  ok "it says how to give the token, and does not repeat the password" || not_ok "userinfo message" "$(cat "$dir/err")"
SBXRUN_ENDPOINT=$nowhere run 2 "--repo https://TOKEN@host: exit 2" -- verify --repo "https://ghp_0123456789@git.example.com/r.git"
! grep -q "ghp_0123456789" "$dir/err" && ok "the token in the URL is not repeated" || not_ok "token shown" "$(cat "$dir/err")"
run 2 "--token-env without --repo: exit 2" -- verify "$demo" --token-env HOME
grep -q -- "--token-env is for --repo" "$dir/err" && ok "--token-env without --repo: why" || not_ok "message" "$(cat "$dir/err")"
run 2 "--token-env of a variable sbxrun does not have: exit 2" -- verify --repo "https://git.example.com/r.git" \
  --token-env SBX_NO_SUCH_VARIABLE
SBX_TEST_REPO_TOKEN=tok-0123456789abcdef SBXRUN_ENDPOINT=$nowhere run 2 "--token-env with a --repo that is not http(s): exit 2" \
  -- verify --repo "$dir/src.git" --token-env SBX_TEST_REPO_TOKEN
grep -q "must be an http:// or https:// URL" "$dir/err" && ! grep -q "tok-0123456789abcdef" "$dir/err" &&
  ok "--token-env: the URL's scheme, said before the fetch" || not_ok "message" "$(cat "$dir/err")"
# A local repository is fetched here, but the sandbox's clone of a host
# path is refused by the command policy before any sandbox is made.
run 3 "--repo: a host path the sandbox may not clone" -- verify --repo "$dir/src.git" --json
py "the run says why" 'd["status"] == "denied" and "repo.clone" in d["message"] and "path_outside" in d["message"] and d["sandboxId"] is None'
schema "a denied run's result follows run-result-1.json"

# --env: the variable is given to the steps, its value redacted everywhere;
# nothing else of sbxrun's environment reaches them.
cat >"$demo/scripts/env.js" <<'JS'
console.log(`token=${process.env.SBX_TEST_TOKEN} home=${process.env.SBX_HOST_ONLY}`);
process.stdout.write("\u001b]0;pwned\u0007 title\n");
JS
git -C "$demo" add -A && git -C "$demo" -c user.name=t -c user.email=t@t commit -qm env
secret=verify-env-secret-0123456789
SBX_HOST_ONLY=host-value run 0 "--env NAME=VALUE" -- verify "$demo" --no-install --test "node scripts/env.js" \
  --env "SBX_TEST_TOKEN=$secret" --json
py "the value reached the step, redacted" '"token=[REDACTED" in d["jobs"][-1]["stdoutTail"] and "'"$secret"'" not in json.dumps(e)'
py "sbxrun's own environment did not" '"home=undefined" in d["jobs"][-1]["stdoutTail"]'
run 2 "--env of a variable sbxrun does not have" -- verify "$demo" --env SBX_NO_SUCH_VARIABLE
# On a terminal the project's output cannot drive it: escape sequences in
# what a step prints are shown as '?'.
TERM=xterm script -qec "'$sbxrun' verify '$demo' --no-install --test 'node scripts/env.js' --verbose" /dev/null >"$dir/tty" 2>&1
grep -q '?\]0;pwned' "$dir/tty" && ! grep -q $'\e\]0;pwned' "$dir/tty" && ok "escape sequences from a step are neutralised on a terminal" ||
  not_ok "terminal escapes" "$(od -c "$dir/tty" | grep -m2 pwned)"
git -C "$demo" reset -q --hard HEAD~1
# A terminal gets the live view in colour; NO_COLOR keeps the view without
# colours, TERM=dumb gets the plain lines.
TERM=xterm script -qec "'$sbxrun' verify '$demo' --no-install" /dev/null >"$dir/tty" 2>&1
grep -q $'\e\[32m' "$dir/tty" && grep -q $'\r\e\[K' "$dir/tty" && ok "a terminal: colours and the live view" ||
  not_ok "terminal view" "$(od -c "$dir/tty" | head -5)"
NO_COLOR=1 TERM=xterm script -qec "'$sbxrun' verify '$demo' --no-install" /dev/null >"$dir/tty" 2>&1
! grep -q $'\e\[3[0-9]m' "$dir/tty" && grep -q '✓' "$dir/tty" && ok "NO_COLOR: the view without colours" ||
  not_ok "NO_COLOR" "$(od -c "$dir/tty" | head -5)"
TERM=dumb script -qec "'$sbxrun' verify '$demo' --no-install" /dev/null >"$dir/tty" 2>&1
! grep -q $'\e' "$dir/tty" && grep -q 'sbxrun verify: test: passed' "$dir/tty" && ok "TERM=dumb: plain lines" ||
  not_ok "TERM=dumb" "$(od -c "$dir/tty" | head -5)"

# The transcript of a run verifies.
run 1 "--transcript" -- verify "$demo" --patch "$patches/break-test.patch" --transcript "$dir/run.jsonl"
run 0 "the transcript verifies" -- transcript verify "$dir/run.jsonl"
grep -q '"verdict":"failed"' "$dir/run.jsonl" && ok "the transcript has the verdict" || not_ok "verdict" "$(tail -2 "$dir/run.jsonl")"
grep -q '"type":"run"' "$dir/run.jsonl" && ok "the transcript's job is the run" || not_ok "run header" "$(head -2 "$dir/run.jsonl")"
# What was verified: the base commit and each patch's id (git patch-id's).
base=$(git -C "$demo" rev-parse HEAD) patchid=$(git patch-id --stable <"$patches/break-test.patch" | cut -d' ' -f1)
if head -1 "$dir/run.jsonl" | python3 -c '
import json, sys
i = json.load(sys.stdin)["job"]["inputs"]
assert i["baseCommit"] == sys.argv[1] and i["patchIds"] == sys.argv[2], i
' "$base" "$patchid" 2>"$dir/pyerr"; then ok "the transcript names the base commit and the patch id"
else not_ok "transcript inputs" "$(tail -3 "$dir/pyerr")"; fi
head -1 "$dir/run.jsonl" | grep -q '"policy":{"jobs":\[{"allow"' && ok "the transcript has the policies used" ||
  not_ok "transcript policies" "$(head -1 "$dir/run.jsonl")"

echo "1..$n"
exit $fail
