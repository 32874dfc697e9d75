#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun's remote subcommands (sandbox, exec, cp) against a real sbxd:
#   check-cli-remote.sh SBXRUN SBXD
# Starts its own sbxd on a unix socket in a temporary directory; TAP output.
set -u
[ $# -eq 2 ] || { echo "usage: $0 SBXRUN SBXD" >&2; exit 2; }
sbxrun=$1 sbxd=$2
dir=$(mktemp -d /tmp/sbxrun-cli-XXXXXX)
chmod 711 "$dir"   # sandboxes run under ids of their own: they pass through to the state
n=0 fail=0
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  mountpoint -q "$dir/full" 2>/dev/null && umount "$dir/full"
  rm -rf "$dir"
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
# not_ok DESCRIPTION DETAIL...: the details also on stderr, which meson shows for a failed test.
not_ok() {
  n=$((n + 1)); fail=1; echo "not ok $n - $1"; echo "not ok $n - $1" >&2; shift
  printf '%s\n' "$@" | sed 's/^/#   /'; printf '%s\n' "$@" | cat -v >&2
}
# expect WANT_RC WANT_STDOUT_SUBSTRING DESCRIPTION -- ARGS...
expect() {
  local want=$1 text=$2 what=$3; shift 4
  out=$("$sbxrun" "$@" 2>"$dir/err"); rc=$?
  if [ "$rc" -ne "$want" ]; then not_ok "$what" "exit $rc, expected $want" "stdout: $out" "stderr: $(cat "$dir/err")"; return; fi
  case "$out" in *"$text"*) ok "$what" ;; *) not_ok "$what" "stdout: $out" "expected: $text" "stderr: $(cat "$dir/err")" ;; esac
}

"$sbxd" --listen "unix:$dir/sbxd.sock" --state-dir "$dir/state" >"$dir/out" 2>"$dir/sbxd.log" &
pid=$!
for _ in $(seq 100); do grep -q 'listening' "$dir/out" 2>/dev/null && break; sleep 0.1; done
grep -q 'listening' "$dir/out" || { echo "Bail out! sbxd did not start: $(tail -5 "$dir/sbxd.log")"; exit 1; }
# The token beside the socket is not there (it is in state/): pass it explicitly.
export SBXRUN_ENDPOINT="unix:$dir/sbxd.sock" SBXRUN_TOKEN="$(cat "$dir/state/token")"

id=$("$sbxrun" sandbox create --env GREETING=hi --port 3000 --runtime node22 2>"$dir/err")
case "$id" in sbx_*) ok "sandbox create prints the id" ;; *) not_ok "sandbox create" "$id" "$(cat "$dir/err")" ;; esac
expect 0 '"requestedRuntime": "node22"' "sandbox get --json" -- sandbox get "$id" --json
# --json: one object, the envelope (sbxrun(1), JSON OUTPUT).
# json_is EXIT PYTHON-ASSERTION DESCRIPTION -- ARGS...: the envelope e, its result d.
json_is() {
  local want=$1 test=$2 what=$3; shift 4
  out=$("$sbxrun" "$@" 2>"$dir/err"); rc=$?
  if [ "$rc" -eq "$want" ] && printf '%s' "$out" | python3 -c '
import json, sys
e = json.load(sys.stdin)
assert e["exitCode"] == int(sys.argv[1]) and e["ok"] == (e["exitCode"] == 0), e
# one result, one error, or (work cut short) what there is of the result beside the error
assert list(e)[:3] == ["sbxrun", "ok", "exitCode"] and (len(e) == 4 and ("result" in e or "error" in e) or
                                                      list(e)[3:] == ["result", "error"]), e
d = e.get("result")
assert '"$test"', e
' "$want"; then ok "$what"
  else not_ok "$what" "exit $rc, expected $want" "stdout: $out" "stderr: $(cat "$dir/err")"; fi
}
# the server's answer: {"session"} in the v2 protocol (the default), {"sandbox"} in v1
json_is 0 'e["sbxrun"] == "sandbox" and d["session"]["id"] == "'"$id"'" and d["session"]["requestedRuntime"] == "node22"' "sandbox get --json: the envelope" -- sandbox get "$id" --json
json_is 0 'd["sandbox"]["id"] == "'"$id"'"' "sandbox get --json --protocol v1" -- sandbox get "$id" --json --protocol v1
expect 0 "status:    running" "sandbox get" -- sandbox get "$id"
expect 0 "$id" "sandbox list shows it" -- sandbox list
expect 0 '"sandboxes"' "sandbox list --json" -- sandbox list --json --limit 5
expect 125 "" "sandbox get of an unknown id: no sandbox (125)" -- sandbox get sbx_nope
json_is 125 'e["error"]["status"] == "SBX_E_NOT_FOUND" and e["error"]["what"] == "get"' "errors as JSON with --json" -- sandbox get sbx_nope --json
json_is 2 'e["error"]["what"] == "usage" and "belongs to another subcommand" in e["error"]["message"]' "a usage error as JSON with --json" -- sandbox list --json --runtime node24
json_is 2 'e["error"]["what"] == "usage"' "an unknown option as JSON with --json" -- sandbox list --bogus --json
expect 2 "" "unknown subcommand" -- sandbox frob
expect 2 "" "option of another subcommand" -- sandbox list --runtime node24
expect 2 "" "get needs an id" -- sandbox get

# The token beside a unix socket is read by the library: none given here.
cp "$dir/state/token" "$dir/token"
out=$(env -u SBXRUN_TOKEN -u VERCEL_OIDC_TOKEN -u VERCEL_TOKEN "$sbxrun" sandbox list 2>"$dir/err"); rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"$id"* ]] && ok "the token file beside the socket" ||
  not_ok "the token file beside the socket" "exit $rc" "stdout: $out" "stderr: $(cat "$dir/err")"
: >"$dir/token"
out=$(env -u SBXRUN_TOKEN -u VERCEL_OIDC_TOKEN -u VERCEL_TOKEN "$sbxrun" sandbox list 2>&1); rc=$?
[ $rc -ne 0 ] && [[ "$out" == *"$dir/token"*empty* ]] && ok "an empty token file: named in the error" ||
  not_ok "an empty token file" "exit $rc" "output: $out"
rm -f "$dir/token"
# --token-file: the whole file or a clear refusal, never a token cut short.
head -c 20000 /dev/zero | tr '\0' a >"$dir/big-token"
expect 125 "" "a token file over 16 KiB is refused" -- --token-file "$dir/big-token" sandbox list
grep -q "larger than 16384 bytes: not a token" "$dir/err" && ok "... saying it is no token" ||
  not_ok "big token file message" "$(cat "$dir/err")"
expect 125 "" "a directory as the token file is refused" -- --token-file "$dir" sandbox list
grep -q "is not a regular file" "$dir/err" && ok "... saying it is not a regular file" ||
  not_ok "directory token file message" "$(cat "$dir/err")"
printf '%s\n\n' "$SBXRUN_TOKEN" >"$dir/tok-nl"
expect 0 "$id" "--token-file: trailing line breaks are not part of the token" -- --token-file "$dir/tok-nl" sandbox list

# exec: output, exit code, env, cwd, --json.
expect 0 "hi" "exec in a sandbox, with its env" -- exec --sandbox "$id" --allow sh -- sh -c 'echo $GREETING'
expect 7 "" "exec passes the exit code" -- exec --sandbox "$id" --allow sh -- sh -c 'exit 7'
out=$("$sbxrun" exec --sandbox "$id" --allow sh -- sh -c 'echo to-out; echo to-err >&2' 2>"$dir/err")
[ "$out" = "to-out" ] && [ "$(cat "$dir/err")" = "to-err" ] && ok "exec streams stdout and stderr apart" ||
  not_ok "exec streams" "out=$out" "err=$(cat "$dir/err")"
expect 0 "/tmp" "exec --cwd" -- exec --sandbox "$id" --no-policy --cwd /tmp -- pwd
expect 0 "v1 v2" "exec --env" -- exec --sandbox "$id" --env A=v1 --env B=v2 --allow sh -- sh -c 'echo $A $B'
expect 3 '"exitCode": 3' "exec --json (exit status still the program's)" -- exec --json --sandbox "$id" --allow sh -- sh -c 'echo j; exit 3'
json_is 3 'e["sbxrun"] == "exec" and d["exitCode"] == 3 and d["stdout"] == "j\n" and d["sandboxId"] == "'"$id"'"' "exec --json: the run is the result" -- exec --json --sandbox "$id" --allow sh -- sh -c 'echo j; exit 3'
json_is 0 'd["exitCode"] == 0 and d["stderr"] == "e\n"' "exec --json: ok" -- exec --json --sandbox "$id" --allow sh -- sh -c 'echo e >&2'
expect 0 "-n x" "program options are the program's" -- exec --sandbox "$id" --allow echo -- echo -n x -n x
expect 124 "" "exec --timeout kills: 124, as timeout(1)" -- exec --sandbox "$id" --timeout 500ms --allow sleep -- sleep 20
json_is 124 'e["error"]["status"] == "SBX_E_TIMEOUT" and e["error"]["what"] == "exec" and d["stdout"] == "before\n" and d["exitCode"] in (None, 137) and d["commandId"].startswith("cmd_") and d["sandboxId"] == "'"$id"'"' "exec --json --timeout: the output so far and the ids beside the error" -- exec --json --sandbox "$id" --timeout 3s --allow sh -- sh -c 'echo before; sleep 20'
expect 2 "" "exec --timeout: a bare number is seconds, an old millisecond value is refused with the fix" -- exec --sandbox "$id" --timeout 300000 --allow true -- true
expect 2 "" "exec --timeout: not a duration" -- exec --sandbox "$id" --timeout 5x --allow true -- true
expect 127 "" "program not found" -- exec --sandbox "$id" --allow no-such-program -- no-such-program
expect 2 "" "exec without a program" -- exec --sandbox "$id"
expect 125 "" "exec in an unknown sandbox" -- exec --sandbox sbx_nope --allow true -- true
json_is 125 'e["error"]["what"] == "find the sandbox" and e["error"]["status"] == "SBX_E_NOT_FOUND"' "exec --json in an unknown sandbox" -- exec --json --sandbox sbx_nope --allow true -- true
json_is 2 'e["error"]["what"] == "usage" and "no PROGRAM" in e["error"]["message"]' "exec --json without a program" -- exec --json --sandbox "$id"
# The command policy is checked before anything is created or run.
expect 3 "" "exec refuses a program the policy does not allow" -- exec --sandbox "$id" -- sh -c 'echo no'
grep -q "denied by the command policy (program_not_allowed)" "$dir/err" && ok "the reason is on stderr" || not_ok "denied reason" "$(cat "$dir/err")"
expect 3 "" "exec refuses a path outside the workspace" -- exec --sandbox "$id" -- cat /etc/passwd
grep -q "denied by the command policy (path_outside)" "$dir/err" && ok "path_outside on stderr" || not_ok "path_outside reason" "$(cat "$dir/err")"
json_is 3 'e["error"] == {"status": "SBX_E_POLICY_DENIED", "what": "policy", "message": e["error"]["message"]} and e["error"]["message"].startswith("denied by the command policy (script): ")' "exec --json reports a denial as JSON" -- exec --json --sandbox "$id" -- node -e 1
before=$("$sbxrun" sandbox list --json | grep -c '"status": "running"')
expect 3 "" "a denied one-shot exec" -- exec -- python3 -c 1
after=$("$sbxrun" sandbox list --json | grep -c '"status": "running"')
[ "$before" = "$after" ] && ok "a denied exec creates no sandbox" || not_ok "denied exec created a sandbox" "$before -> $after"
printf '{"version": 1, "allow": {"programs": ["sh"]}}' >"$dir/policy.json"
expect 0 "from-policy" "exec --policy FILE" -- exec --sandbox "$id" --policy "$dir/policy.json" -- sh -c 'echo from-policy'
expect 0 ".." "the default programs run without --allow" -- exec --sandbox "$id" -- ls -a
expect 2 "" "a policy file that does not load" -- exec --sandbox "$id" --policy "$dir/nope.json" -- ls
expect 2 "" "--no-policy with --allow" -- exec --sandbox "$id" --no-policy --allow sh -- sh
expect 2 "" "a bad --allow name" -- exec --sandbox "$id" --allow /bin/sh -- sh

# Output is redacted: shapes, --secret, secret-looking --env values.
gh=ghp_0123456789abcdefghijABCDEFGHIJ012345
expect 0 "tok [REDACTED:github]" "exec redacts a token shape" -- exec --sandbox "$id" --allow sh -- sh -c "echo tok $gh"
expect 0 "pw [REDACTED:secret]" "exec --secret" -- exec --sandbox "$id" --secret hunter2-correct-horse --allow sh -- sh -c 'echo pw hunter2-correct-horse'
expect 0 "env [REDACTED:secret]" "a secret-looking --env value" -- exec --sandbox "$id" --env API_TOKEN=tok-value-0123456 --allow sh -- sh -c 'echo env $API_TOKEN'
expect 0 "raw $gh" "exec --no-redact" -- exec --sandbox "$id" --no-redact --allow sh -- sh -c "echo raw $gh"
expect 0 '[REDACTED:github]' "exec --json redacts too" -- exec --json --sandbox "$id" --allow sh -- sh -c "echo $gh"
out=$("$sbxrun" exec --sandbox "$id" --allow sh -- sh -c "echo $gh >&2" 2>&1 >/dev/null)
[ "$out" = "[REDACTED:github]" ] && ok "stderr is redacted" || not_ok "stderr redaction" "$out"

# A one-shot exec makes its own sandbox and stops it.
before=$("$sbxrun" sandbox list --json | grep -c '"status": "running"')
expect 0 "fresh" "exec without --sandbox" -- exec --allow sh -- sh -c 'echo fresh'
after=$("$sbxrun" sandbox list --json | grep -c '"status": "running"')
[ "$before" = "$after" ] && ok "its sandbox was stopped" || not_ok "its sandbox was stopped" "$before -> $after"

# A one-shot exec's sandbox lives on a lease that sbxrun extends: alive past
# the lease while sbxrun runs, stopped soon after sbxrun is SIGKILLed (the
# server's default timeout is 5 minutes; the bounds here are loose).
"$sbxrun" exec --lease 2s --allow sh --transcript "$dir/killed.jsonl" -- sh -c 'echo started; sleep 120' \
  >"$dir/kout" 2>"$dir/kerr" &
kpid=$!
for _ in $(seq 200); do grep -q started "$dir/kout" 2>/dev/null && break; sleep 0.1; done
ksid=$(grep -o '"sandbox_id":"sbx_[A-Za-z0-9]*"' "$dir/killed.jsonl" 2>/dev/null | head -1 | cut -d'"' -f4)
if grep -q started "$dir/kout" && [ -n "$ksid" ]; then
  sleep 5
  expect 0 "status:    running" "the leased sandbox outlives its lease while sbxrun runs" -- sandbox get "$ksid"
  kill -9 "$kpid"; wait "$kpid" 2>/dev/null
  stopped=
  for _ in $(seq 60); do
    "$sbxrun" sandbox get "$ksid" 2>/dev/null | grep -q "status:    stopped" && { stopped=1; break; }
    sleep 0.5
  done
  [ -n "$stopped" ] && ok "a SIGKILLed exec's sandbox stops within 30 s (lease 2 s)" ||
    not_ok "the SIGKILLed exec's sandbox still runs" "$("$sbxrun" sandbox get "$ksid" 2>&1)"
  "$sbxrun" transcript verify "$dir/killed.jsonl" >/dev/null 2>&1; rc=$?
  [ $rc = 5 ] && ok "the killed run's transcript verifies as incomplete (5)" || not_ok "killed transcript" "rc=$rc"
else
  kill -9 "$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null
  not_ok "exec --lease did not start" "$(cat "$dir/kout" "$dir/kerr")"
fi
"$sbxrun" exec --sandbox "$id" --lease 5 --allow true -- true 2>"$dir/err"; rc=$?
[ $rc = 2 ] && grep -q "are for a new sandbox" "$dir/err" && ok "--lease is for a new sandbox" ||
  not_ok "--lease with --sandbox" "rc=$rc" "$(cat "$dir/err")"
"$sbxrun" exec --lease 999ms --allow true -- true 2>"$dir/err"; rc=$?
[ $rc = 2 ] && grep -q "lease '999ms': at least 1000ms" "$dir/err" && ok "--lease under a second" ||
  not_ok "--lease 999" "rc=$rc" "$(cat "$dir/err")"

# With no sbxd to talk to, exec starts a private one; a SIGKILLed sbxrun
# takes it down (it gets SIGTERM and stops its sandboxes) instead of leaving
# it running.
if [ "$(id -u)" = 0 ] && ! [ -S /var/lib/sbxd/sbxd.sock ]; then
  mkdir "$dir/ptmp"
  env -u SBXRUN_ENDPOINT -u SBXRUN_TOKEN -u VERCEL_OIDC_TOKEN -u VERCEL_TOKEN SBXD="$sbxd" TMPDIR="$dir/ptmp" \
    "$sbxrun" exec --allow sh -- sh -c 'echo started; sleep 120' >"$dir/pout" 2>"$dir/perr" &
  kpid=$!
  for _ in $(seq 300); do grep -q started "$dir/pout" 2>/dev/null && break; sleep 0.1; done
  # Its child, found in /proc (a fresh Debian has no procps).
  spid=$(for s in /proc/[0-9]*/stat; do read -r p c st pp rest <"$s" 2>/dev/null &&
         [ "$pp" = "$kpid" ] && echo "$p"; done 2>/dev/null | head -1)
  pstate=$(tr '\0' '\n' <"/proc/$spid/cmdline" 2>/dev/null | grep -A1 -x -- --state-dir | tail -1)
  if grep -q started "$dir/pout" && [ -n "$spid" ]; then
    case "$pstate" in "$dir/ptmp/sbxrun-"*/state) ok "the private sbxd's directory is in TMPDIR" ;;
      *) not_ok "the private sbxd's directory is not in TMPDIR" "$pstate" ;; esac
    kill -9 "$kpid"; wait "$kpid" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$spid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$spid" 2>/dev/null; then
      not_ok "the private sbxd outlived the SIGKILLed sbxrun"
      kill "$spid"; for _ in $(seq 40); do kill -0 "$spid" 2>/dev/null || break; sleep 0.25; done
    else
      ok "a SIGKILLed exec's private sbxd exits"
    fi
  else
    kill -9 "$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null
    not_ok "exec with a private sbxd did not start" "$(cat "$dir/pout" "$dir/perr")"
  fi
  # sbxrun could not remove the private server's directory.
  case "$pstate" in "$dir/ptmp/sbxrun-"*/state|/tmp/sbxrun-*/state) rm -rf "${pstate%/state}" ;; esac
else
  ok "# SKIP a private sbxd needs root and no sbxd in /var/lib/sbxd"
fi

# cp both ways, a tree in.
mkdir -p "$dir/tree/sub" && echo one > "$dir/tree/a.txt" && echo two > "$dir/tree/sub/b.txt"
expect 0 "" "cp a tree in" -- cp "$dir/tree" "$id:tree"
expect 0 "one two" "the tree arrived" -- exec --sandbox "$id" --allow sh -- sh -c 'echo $(cat tree/a.txt tree/sub/b.txt)'
expect 0 "" "cp a file out" -- cp "$id:tree/sub/b.txt" "$dir/b.out"
[ "$(cat "$dir/b.out" 2>/dev/null)" = two ] && ok "the file came out" || not_ok "the file came out"
mkdir "$dir/outdir"
json_is 0 'e["sbxrun"] == "cp" and d["direction"] == "out" and d["to"] == "'"$dir/outdir/a.txt"'"' "cp into a directory keeps the name" -- cp --json "$id:tree/a.txt" "$dir/outdir"
[ "$(cat "$dir/outdir/a.txt" 2>/dev/null)" = one ] && ok "named a.txt" || not_ok "named a.txt"
expect 1 "" "cp of a missing file" -- cp "$id:missing" "$dir/x"
grep -q "no such file.*: missing" "$dir/err" && ok "... naming the path" || not_ok "cp missing: the path" "$(cat "$dir/err")"
json_is 1 'e["sbxrun"] == "cp" and e["error"]["what"] == "cp"' "cp --json of a missing file" -- cp --json "$id:missing" "$dir/x"
json_is 125 'e["error"]["what"] == "find the sandbox"' "cp --json into an unknown sandbox" -- cp --json "$dir/tree/a.txt" sbx_nope:a.txt
[ ! -e "$dir/x" ] && ok "nothing left behind" || not_ok "nothing left behind"
expect 2 "" "cp needs one remote side" -- cp "$dir/a" "$dir/b"
# /proc files say they are empty; a pipe has no size at all.
expect 0 "" "cp a /proc file in" -- cp /proc/self/status "$id:status"
expect 0 "Name:" "its content arrived, not an empty file" -- exec --sandbox "$id" -- cat status
out=$("$sbxrun" cp <(printf 'from a pipe') "$id:piped" 2>&1) && ok "cp a pipe in" || not_ok "cp a pipe in" "$out"
expect 0 "from a pipe" "the pipe's content arrived" -- exec --sandbox "$id" -- cat piped
printf 'from stdin' | "$sbxrun" cp - "$id:stdin.txt" 2>"$dir/err" && ok "cp - reads standard input" ||
  not_ok "cp - SANDBOX:PATH" "$(cat "$dir/err")"
expect 0 "from stdin" "standard input's content arrived" -- exec --sandbox "$id" -- cat stdin.txt
# A file to standard output; a directory out, whole or not at all.
expect 0 "one" "cp SANDBOX:PATH - writes the file to stdout" -- cp "$id:tree/a.txt" -
expect 1 "" "cp of a directory to - is refused" -- cp "$id:tree" -
grep -q "is a directory: '-' takes a file" "$dir/err" && ok "and says why" || not_ok "dir to -" "$(cat "$dir/err")"
expect 2 "" "--json with - is refused (both want stdout)" -- cp --json "$id:tree/a.txt" -
"$sbxrun" exec --sandbox "$id" --no-policy -- ln -s a.txt tree/link 2>"$dir/err" || not_ok "ln -s in the sandbox" "$(cat "$dir/err")"
expect 0 "" "cp a directory out" -- cp "$id:tree" "$dir/tree.out"
diff -r "$dir/tree" "$dir/tree.out" >"$dir/diff" 2>&1 && ok "the directory came out whole" || not_ok "dir out" "$(cat "$dir/diff")"
grep -q "left out 1 entry that is not a regular file or a directory" "$dir/err" && ok "the link was left out, and said" ||
  not_ok "dir out: the link" "$(cat "$dir/err")"
json_is 0 'd["type"] == "directory" and d["files"] == 2 and d["skipped"] == 1 and d["to"] == "'"$dir/outdir/tree"'"' "cp a directory into a directory keeps its name" -- cp --json "$id:tree" "$dir/outdir"
[ "$(cat "$dir/outdir/tree/sub/b.txt" 2>/dev/null)" = two ] && ok "outdir/tree/sub/b.txt" || not_ok "outdir/tree/sub/b.txt"
expect 1 "" "a directory is never merged into one that exists" -- cp "$id:tree" "$dir/outdir"
grep -q "exists: a directory is copied to a new name" "$dir/err" && ok "and says so" || not_ok "merge refused" "$(cat "$dir/err")"
expect 0 "" "no temporary file left in the sandbox" -- exec --sandbox "$id" --no-policy -- sh -c '! ls /tmp/sbxrun-cp.* 2>/dev/null'
ls -a "$dir" "$dir/outdir" | grep -q "\.sbxrun-" && not_ok "a temporary file left beside the targets" "$(ls -a "$dir" "$dir/outdir")" ||
  ok "nothing left beside the targets"
# A sandbox whose tar climbs out of the directory: refused, nothing written,
# its name shown with its escape sequence defused. Then one that sends a tree
# deeper than PATH_MAX first: whatever stops it, nothing is left behind.
id3=$("$sbxrun" sandbox create --env PATH=/vercel/sandbox/bin:/usr/bin:/bin 2>"$dir/err")
mkdir -p "$dir/evil/bin" "$dir/evil/out"
evil_tar() { # NAMES...: bin/tar that writes those entries (python literals), to -f's file or stdout
  printf '%s\n' '#!/bin/sh' "exec python3 -c \"
import io, sys, tarfile
a = sys.argv[1:]
out = open(a[1], 'wb') if len(a) > 1 and a[0] == '-cf' and a[1] != '-' else sys.stdout.buffer
t = tarfile.open(fileobj=out, mode='w|', format=tarfile.PAX_FORMAT)
deep = '/'.join(['d' * 200] * 30)
for name in ($*):
    i = tarfile.TarInfo(name); i.size = 2
    t.addfile(i, io.BytesIO(b'x\\\\n'))
t.close()\" \"\$@\"" >"$dir/evil/bin/tar"
  "$sbxrun" cp "$dir/evil/bin" "$id3:bin" 2>>"$dir/err" &&
    "$sbxrun" exec --sandbox "$id3" --no-policy -- chmod 755 bin/tar 2>>"$dir/err"
}
evil_tar "'./ok.txt', '\\x1b[31m/../escaped.txt'"
: >"$dir/err"
expect 125 "" "a tar entry outside the directory is refused" -- cp "$id3:bin" "$dir/evil/out/bin"
if grep -qF 'has an entry outside the directory: \x1b[31m/../escaped.txt' "$dir/err" && ! grep -q $'\x1b' "$dir/err" &&
   [ -z "$(ls -A "$dir/evil/out")" ] && ! [ -e "$dir/evil/escaped.txt" ]; then
  ok "nothing written, inside or out; the name's escape sequence defused"
else not_ok "the escaping tar" "$(cat -v "$dir/err")" "out: $(ls -A "$dir/evil/out")" "tar: $(head -c 600 "$dir/evil/bin/tar")"; fi
evil_tar "'./ok.txt', deep + '/f.txt', '../escaped.txt'"
"$sbxrun" cp "$id3:bin" "$dir/evil/out/bin" >/dev/null 2>"$dir/err"; rc=$?
if [ $rc -ne 0 ] && [ -z "$(ls -A "$dir/evil/out")" ] && ! [ -e "$dir/evil/escaped.txt" ]; then
  ok "a tree deeper than PATH_MAX, then an escape: refused ($rc), nothing left"
else not_ok "the deep tar" "rc=$rc" "$(cat -v "$dir/err")" "$(ls -A "$dir/evil/out")"; fi
"$sbxrun" sandbox stop "$id3" >/dev/null 2>&1
# Progress: on a terminal only (script(1) gives it one), never when piped.
head -c 3000000 /dev/urandom >"$dir/big.bin"
if command -v script >/dev/null; then
  TERM=xterm script -qec "'$sbxrun' cp '$dir/big.bin' '$id:big.bin'" /dev/null >"$dir/tty" 2>&1
  grep -q "sbxrun cp: sent 2.9 MiB in" "$dir/tty" && ok "progress on a terminal: upload" || not_ok "tty upload" "$(cat -v "$dir/tty")"
  TERM=xterm script -qec "'$sbxrun' cp '$id:big.bin' '$dir/big.out'" /dev/null >"$dir/tty" 2>&1
  grep -q "sbxrun cp: received 2.9 MiB in" "$dir/tty" && cmp -s "$dir/big.bin" "$dir/big.out" &&
    ok "progress on a terminal: download" || not_ok "tty download" "$(cat -v "$dir/tty")"
else
  ok "# SKIP no script(1) to give sbxrun a terminal"
fi
"$sbxrun" cp "$dir/big.bin" "$id:big2.bin" >"$dir/out1" 2>&1 && "$sbxrun" cp "$id:big2.bin" "$dir/big2.out" >>"$dir/out1" 2>&1
[ ! -s "$dir/out1" ] && cmp -s "$dir/big.bin" "$dir/big2.out" && ok "no progress when piped" || not_ok "piped" "$(cat -v "$dir/out1")"
# The command line: what is missing is said.
expect 2 "" "cp with no arguments" -- cp
grep -q "missing the source and the destination: sbxrun cp SRC DEST" "$dir/err" && ok "says both are missing" || not_ok "cp" "$(cat "$dir/err")"
expect 2 "" "cp with one argument" -- cp "$dir/a"
grep -q "missing the destination: sbxrun cp SRC DEST" "$dir/err" && ok "says the destination is missing" || not_ok "cp a" "$(cat "$dir/err")"
expect 2 "" "cp with three arguments" -- cp "$dir/a" "$id:a" "$dir/c"
expect 0 "usage: sbxrun cp" "cp -h" -- cp -h

# --transcript: the run recorded, redacted, verifiable; a failing command
# and a timeout give their reasons.
"$sbxrun" exec --sandbox "$id" --allow sh --transcript "$dir/t.jsonl" --env API_TOKEN=abcdefgh-12345678 -- \
  sh -c 'echo out $API_TOKEN; echo err '"$gh"' >&2; exit 4' >/dev/null 2>&1; rc=$?
[ $rc = 4 ] && ok "exec --transcript: the program's exit code" || not_ok "exec --transcript rc" "$rc"
grep -q "abcdefgh-12345678\|$gh" "$dir/t.jsonl" && not_ok "a secret in the transcript" "$(cat "$dir/t.jsonl")" ||
  ok "no secret in the transcript"
out=$("$sbxrun" transcript verify "$dir/t.jsonl" 2>&1) && ok "the transcript verifies" || not_ok "verify" "$out"
out=$("$sbxrun" transcript show "$dir/t.jsonl" 2>&1)
case "$out" in *"sandbox $id"*"env API_TOKEN"*"exit code 4"*"command cmd_"*"out [REDACTED:secret]"*"err [REDACTED:github]"*"end: failed"*)
  ok "show: sandbox, exit code, env name, command id, redacted output, verdict" ;;
  *) not_ok "transcript show" "$out" ;; esac
"$sbxrun" exec --sandbox "$id" --allow sleep --timeout 300ms --transcript "$dir/t2.jsonl" -- sleep 5 >/dev/null 2>&1
out=$("$sbxrun" transcript show --step 1 --json "$dir/t2.jsonl" 2>&1)
printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)["result"]
assert d["reason"] == "timeout" and d["retryable"] is True, d' && ok "a timeout is recorded with its reason" ||
  not_ok "timeout in the transcript" "$out"

# A transcript that cannot be written (a full disk: a 16 KiB tmpfs, the
# header fits, the step's 32 KiB of output windows do not) fails the run
# instead of passing on the program's exit code.
mkdir "$dir/full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=16k,mode=700 tmpfs "$dir/full" 2>/dev/null; then
  "$sbxrun" exec --sandbox "$id" --allow sh --transcript "$dir/full/t.jsonl" -- \
    sh -c 'head -c 100000 /dev/zero | tr "\0" x; exit 3' >/dev/null 2>"$dir/err"; rc=$?
  [ $rc = 125 ] && grep -q "transcript $dir/full/t.jsonl could not be written.*No space left" "$dir/err" &&
    ok "exec fails (125) when its transcript cannot be written" || not_ok "transcript on a full disk" "rc=$rc" "$(cat "$dir/err")"
  rm -f "$dir/full/t.jsonl"
  out=$("$sbxrun" exec --json --sandbox "$id" --allow sh --transcript "$dir/full/t2.jsonl" -- \
    sh -c 'head -c 100000 /dev/zero | tr "\0" x; exit 3' 2>"$dir/err"); rc=$?
  [ $rc = 125 ] && printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["exitCode"] == 125 and j["ok"] is False, j
assert j["result"]["exitCode"] == 3 and j["error"]["what"] == "transcript", j' &&
    ok "exec --json: the result and the transcript's failure in one object" || not_ok "--json full disk" "rc=$rc" "$(cat "$dir/err")"
  umount "$dir/full"
else
  ok "# SKIP a full disk needs root to mount a tmpfs"
fi

# snapshot and stop.
snap=$("$sbxrun" sandbox snapshot "$id" --expiration 0 2>"$dir/err")
case "$snap" in snap_*) ok "sandbox snapshot prints the id" ;; *) not_ok "snapshot" "$snap" "$(cat "$dir/err")" ;; esac
id2=$("$sbxrun" sandbox create --snapshot "$snap")
expect 0 "one" "a sandbox from the snapshot" -- exec --sandbox "$id2" -- cat tree/a.txt
expect 0 "stopped" "sandbox stop" -- sandbox stop "$id2"
expect 0 "" "help sandbox" -- help sandbox
expect 0 "usage: sbxrun exec" "exec --help" -- exec --help
expect 0 "usage: sbxrun cp" "cp --help" -- cp --help

# Named sandboxes (the v2 protocol, which --name, --persistent, resume and
# --cursor select): a persistent one keeps its files from one session to the
# next, and lists page by cursor.
nid=$("$sbxrun" sandbox create --name cli-named --persistent 2>"$dir/err")
case "$nid" in sbx_*) ok "sandbox create --name --persistent prints its session id" ;;
  *) not_ok "sandbox create --name" "$nid" "$(cat "$dir/err")" ;; esac
echo kept > "$dir/kept.txt"
expect 0 "" "cp into the named sandbox's session" -- cp "$dir/kept.txt" "$nid:kept.txt"
expect 0 "$nid" "sandbox resume of a running sandbox: its session" -- sandbox resume cli-named
expect 0 "stopped" "sandbox stop of its session" -- sandbox stop "$nid"
nid2=$("$sbxrun" sandbox resume cli-named 2>"$dir/err")
if [[ "$nid2" == sbx_* && "$nid2" != "$nid" ]]; then ok "sandbox resume starts a new session"
else not_ok "sandbox resume" "$nid2" "$(cat "$dir/err")"; fi
expect 0 "kept" "the new session has the files of the last" -- exec --sandbox "$nid2" -- cat kept.txt
expect 0 "$nid2" "resume of a running sandbox: the same session" -- sandbox resume cli-named
# Its sessions: the new one first, then the one stopped; paged by cursor.
out=$("$sbxrun" sandbox sessions cli-named 2>"$dir/err")
[ "$(printf '%s\n' "$out" | awk 'NR > 1 && /^sbx_/ {print $1}' | head -2 | tr '\n' ' ')" = "$nid2 $nid " ] &&
  ok "sandbox sessions NAME: newest first" || not_ok "sandbox sessions" "$out" "$(cat "$dir/err")"
json_is 0 '[x["id"] for x in d["sessions"]][:2] == ["'"$nid2"'", "'"$nid"'"]' "sandbox sessions --json" -- sandbox sessions cli-named --json
expect 0 "(more: --cursor " "sandbox sessions --limit 1: a page and its cursor" -- sandbox sessions cli-named --limit 1
expect 2 "" "sandbox sessions without a name" -- sandbox sessions
expect 2 "" "--since belongs to list" -- sandbox sessions cli-named --since 5
json_is 0 'd["session"]["id"] == "'"$nid2"'" and d["sandbox"]["name"] == "cli-named"' "sandbox resume --json" -- sandbox resume cli-named --json
expect 125 "" "sandbox resume of an unknown name: no sandbox (125)" -- sandbox resume cli-nope
grep -q "sbxrun sandbox: resume: no sandbox has the name cli-nope" "$dir/err" && ok "resume of an unknown name says so as get does" ||
  not_ok "resume message" "$(cat "$dir/err")"
"$sbxrun" sandbox create --name cli-second >/dev/null 2>&1
expect 0 "(more: --cursor " "sandbox list (v2): a page and its cursor" -- sandbox list --protocol v2 --limit 1
cursor=$("$sbxrun" sandbox list --protocol v2 --limit 1 | sed -n 's/^(more: --cursor \(.*\))$/\1/p')
expect 0 "cli-named" "sandbox list --cursor: the next page" -- sandbox list --cursor "$cursor" --limit 1
expect 2 "" "--cursor with --until" -- sandbox list --cursor "$cursor" --until 5
expect 1 "" "a name that exists: the server refuses" -- sandbox create --name cli-named
expect 0 "cli-second deleted" "sandbox delete NAME" -- sandbox delete cli-second
expect 125 "" "sandbox delete of a name that is gone: no sandbox (125)" -- sandbox delete cli-second
expect 2 "" "--protocol wants v1 or v2" -- sandbox list --protocol v9
expect 2 "" "--name belongs to create" -- sandbox list --name x

# A server that stopped answering (SIGSTOP): the request's deadline ends the
# command with an error, instead of a hang.
expect 2 "" "--request-timeout: not a duration" -- sandbox list --request-timeout soon
kill -STOP "$pid"
t0=$(date +%s)
out=$(timeout 60 "$sbxrun" sandbox list --request-timeout 2s 2>&1); rc=$?
t1=$(date +%s)
kill -CONT "$pid"
if [ $rc -eq 125 ] && [ $((t1 - t0)) -lt 30 ] && [[ "$out" == *"in 2.0 s, the request's deadline; --request-timeout sets it"* ]] &&
   [[ "$out" != *"list sandboxes: list sandboxes"* ]]; then
  ok "sandbox list against a stopped server ends at --request-timeout ($((t1 - t0)) s)"
else
  not_ok "sandbox list against a stopped server" "rc=$rc after $((t1 - t0)) s" "$out"
fi
expect 0 "$id" "the server answers again once resumed" -- sandbox list

# No endpoint and no local sbxd: a clear error naming what to set.
out=$(env -u SBXRUN_ENDPOINT -u SBXRUN_TOKEN -u VERCEL_OIDC_TOKEN -u VERCEL_TOKEN HOME="$dir/home" \
      XDG_STATE_HOME="$dir/xdg" "$sbxrun" sandbox list 2>&1); rc=$?
if [ "$(id -u)" != 0 ] && [ $rc -eq 125 ] && [[ "$out" == *VERCEL_OIDC_TOKEN* ]]; then ok "no endpoint: clear error"
elif [ "$(id -u)" = 0 ] && [ $rc -ne 0 ]; then ok "no endpoint: error ($rc)"
else not_ok "no endpoint: clear error" "rc=$rc" "$out"; fi

echo "1..$n"
exit $fail
