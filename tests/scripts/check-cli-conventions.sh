#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun's command-line conventions against a real sbxd: -h everywhere,
# global options before the command, "did you mean", durations, Ctrl-C
# (a real SIGINT), --detach, standard input, sandbox extend, snapshot
# list/get/delete, network-policy values, the runtime warning, and --json
# on a cut-short run.
#   check-cli-conventions.sh SBXRUN SBXD
set -u
[ $# -eq 2 ] || { echo "usage: $0 SBXRUN SBXD" >&2; exit 2; }
sbxrun=$1 sbxd=$2
dir=$(mktemp -d /tmp/sbxrun-conv-XXXXXX)
chmod 711 "$dir"
n=0 fail=0
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; printf '%s\n' "$@" | sed 's/^/#   /'; }
# expect WANT_RC STDOUT_SUBSTRING STDERR_SUBSTRING DESCRIPTION -- ARGS...
expect() {
  local want=$1 text=$2 etext=$3 what=$4; shift 5
  out=$("$sbxrun" "$@" 2>"$dir/err" </dev/null); rc=$?
  if [ "$rc" -ne "$want" ]; then not_ok "$what" "exit $rc, expected $want" "stdout: $out" "stderr: $(cat "$dir/err")"; return; fi
  case "$out" in *"$text"*) ;; *) not_ok "$what" "stdout: $out" "expected: $text"; return ;; esac
  case "$(cat "$dir/err")" in *"$etext"*) ok "$what" ;; *) not_ok "$what" "stderr: $(cat "$dir/err")" "expected: $etext" ;; esac
}

# ---- offline: help, typos, durations ----
for c in verify exec sandbox snapshot cp policy netpolicy redact transcript patch; do
  out=$("$sbxrun" "$c" -h 2>&1); rc=$?
  [ $rc = 0 ] && [[ "$out" == usage:* ]] && ok "$c -h prints its help" || not_ok "$c -h" "rc=$rc" "$out"
  out2=$("$sbxrun" help "$c" 2>&1)
  [ "$out" = "$out2" ] && ok "sbxrun help $c is $c -h" || not_ok "help $c" "$out2"
  out3=$("$sbxrun" -h "$c" 2>&1)
  [ "$out" = "$out3" ] && ok "sbxrun -h $c is $c -h" || not_ok "-h $c" "$out3"
done
# A command of subcommands: none, or an option first, says which come first.
for c in sandbox snapshot policy transcript patch; do
  expect 2 "" "which subcommand?" "sbxrun $c alone names its subcommands" -- "$c"
done
expect 2 "" "comes before the options: 'sbxrun sandbox list --endpoint" "an option before the subcommand says where it goes" \
  -- sandbox --endpoint http://127.0.0.1:9 list
expect 0 '"libsbxrun"' "" "version --json" -- version --json
SBXRUN_TOKEN= expect 125 "" "or give it with --token-file FILE" "no token: the advice names the option, not the C call" \
  -- sandbox list --endpoint http://127.0.0.1:9
for c in "sandbox create" "sandbox list" "snapshot list" "policy check" "transcript verify" "patch check"; do
  # shellcheck disable=SC2086
  out=$("$sbxrun" $c -h 2>&1); rc=$?
  [ $rc = 0 ] && [[ "$out" == usage:* ]] && ok "$c -h" || not_ok "$c -h" "rc=$rc" "$out"
done
expect 2 "" "did you mean 'sandbox'?" "a typo of a command: did you mean" -- sandbx list
expect 2 "" "did you mean 'snapshot'?" "a typo of a command: did you mean (2)" -- snapshto list
expect 2 "" "unknown command 'zzzzzz'" "no guess when nothing is close" -- zzzzzz
[[ "$(cat "$dir/err")" != *"did you mean"* ]] && ok "no 'did you mean' for a word far from every command" ||
  not_ok "far typo" "$(cat "$dir/err")"
[ "$(wc -l <"$dir/err")" -le 2 ] && ok "a typo does not print the whole help" || not_ok "typo help" "$(cat "$dir/err")"
expect 2 "" "did you mean 'list'?" "a typo of a subcommand" -- sandbox lsit
expect 2 "" "did you mean '--timeout'?" "a typo of an option" -- exec --tiemout 5 -- true
expect 2 "" "option '--timeout' needs a value" "an option without its value" -- exec --timeout
expect 2 "" "a bare number is seconds" "an old millisecond value is refused with the fix" -- exec --timeout 300000 -- true
expect 2 "" "write 300000ms" "... and the fix is given" -- exec --timeout 300000 -- true
expect 2 "" "is not a duration" "not a duration" -- exec --timeout 5min -- true
expect 2 "" "did you mean 'deny-all'?" "--network-policy deny suggests deny-all" -- exec --network-policy deny -- true
expect 2 "" "unknown global option '--endpont' (did you mean '--endpoint'?)" "a typo of a global option" -- --endpont x sandbox list
expect 2 "" "unknown option '-x'" "an unknown short option inside a cluster is the one named" -- exec --sudo -xh -- ls
expect 2 "" "'0x10' is not a duration" "hex is not a duration" -- exec --timeout 0x10 -- true
expect 2 "" "'1e3' is not a duration" "an exponent is not a duration" -- exec --timeout 1e3 -- true
expect 2 "" "option '--json' takes no value" "--json=1 before the command" -- --json=1 sandbox list
expect 2 "" "no PROGRAM to check" "policy check with no program: usage (2)" -- policy check
expect 2 "" "known: repo.clone" "policy check --job lists the job types" -- policy check --job test -- ls

# ---- against sbxd ----
"$sbxd" --listen "unix:$dir/sbxd.sock" --state-dir "$dir/state" >"$dir/out" 2>"$dir/sbxd.log" &
pid=$!
for _ in $(seq 100); do grep -q 'listening' "$dir/out" 2>/dev/null && break; sleep 0.1; done
grep -q 'listening' "$dir/out" || { echo "Bail out! sbxd did not start: $(tail -5 "$dir/sbxd.log")"; exit 1; }
ep="unix:$dir/sbxd.sock"
export SBXRUN_TOKEN="$(cat "$dir/state/token")"
unset SBXRUN_ENDPOINT

# Global options before the command; the command's own win.
id=$("$sbxrun" --endpoint "$ep" sandbox create 2>"$dir/err")
case "$id" in sbx_*) ok "--endpoint before the command" ;; *) not_ok "global --endpoint" "$id" "$(cat "$dir/err")" ;; esac
expect 0 '"ok": true' "" "--json before the command" -- --json --endpoint "$ep" sandbox get "$id"
expect 0 "$id" "" "--endpoint=URL before, and --protocol" -- --endpoint="$ep" --protocol v2 sandbox get "$id"
expect 125 "" "" "the command's own --endpoint wins over the global one" -- --endpoint "$ep" sandbox get "$id" --endpoint unix:/nonexistent/sock
export SBXRUN_ENDPOINT="$ep"

# sandbox extend: the timeout grows by the duration.
before=$("$sbxrun" sandbox get "$id" --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print((r.get("session") or r.get("sandbox"))["timeout"])')
expect 0 "timeout" "" "sandbox extend ID 10m" -- sandbox extend "$id" 10m
[[ "$out" =~ " timeout "([0-9]+[dhm] ?)+$ ]] && ok "extend prints the new timeout as a duration ($out)" ||
  not_ok "extend output" "$out"
out=$("$sbxrun" sandbox get "$id")
[[ "$out" =~ timeout:\ +[0-9]+[dhm] ]] && ok "sandbox get prints the timeout as a duration" || not_ok "get output" "$out"
after=$("$sbxrun" sandbox get "$id" --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print((r.get("session") or r.get("sandbox"))["timeout"])')
[ "$((after - before))" = 600000 ] && ok "extend added 10 minutes ($before -> $after)" || not_ok "extend" "$before -> $after"
expect 2 "" "the DURATION is missing" "extend without a duration says so" -- sandbox extend "$id"
expect 2 "" "the ID comes first, then the DURATION: 'sbxrun sandbox extend $id 10m'" "extend DURATION ID names the order" \
  -- sandbox extend 10m "$id"

# The runtime: asked for one the host does not give, the server says which it gives, and sbxrun warns.
have=$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/node\1/')
want=node22; [ "$have" = node22 ] && want=node24
sid=$("$sbxrun" sandbox create --runtime "$want" 2>"$dir/err")
if [ -n "$have" ] && grep -q "warning: asked for runtime $want, the server provides $have" "$dir/err"; then
  ok "a runtime the server does not provide is warned about ($want -> $have)"
else
  not_ok "runtime warning" "have=$have want=$want" "$(cat "$dir/err")"
fi
"$sbxrun" sandbox stop "$sid" >/dev/null 2>&1

# Network policies: the SDK's own shape is taken.
sid=$("$sbxrun" sandbox create --network-policy '{"allow": ["example.com"], "subnets": {"deny": ["10.0.0.0/8"]}}' 2>"$dir/err")
if [ -n "$sid" ] && "$sbxrun" sandbox get "$sid" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)["result"]; p = (r.get("session") or r.get("sandbox"))["networkPolicy"]
assert p["mode"] == "custom" and "example.com" in p["allowedDomains"] and p["deniedCIDRs"] == ["10.0.0.0/8"], p'; then
  ok "--network-policy takes the SDK's {allow, subnets}"
else
  not_ok "SDK network policy" "$sid" "$(cat "$dir/err")"
fi
"$sbxrun" sandbox stop "$sid" >/dev/null 2>&1

# Standard input: data is refused (the protocol has none), --no-stdin passes; an open, empty pipe is fine.
out=$(echo hi | "$sbxrun" exec --sandbox "$id" --allow cat -- cat 2>"$dir/err"); rc=$?
[ $rc = 2 ] && grep -q "standard input holds data" "$dir/err" && ok "stdin with data is refused (2)" ||
  not_ok "stdin refused" "rc=$rc" "$(cat "$dir/err")"
out=$(echo hi | "$sbxrun" exec --no-stdin --sandbox "$id" --allow echo -- echo ran 2>"$dir/err"); rc=$?
[ $rc = 0 ] && [ "$out" = ran ] && ok "--no-stdin runs it" || not_ok "--no-stdin" "rc=$rc" "$out" "$(cat "$dir/err")"
out=$( (sleep 3 | "$sbxrun" exec --sandbox "$id" --allow echo -- echo ran) 2>"$dir/err"); rc=$?
[ $rc = 0 ] && [ "$out" = ran ] && ok "an open, empty pipe (as CI leaves) is not refused" ||
  not_ok "empty pipe" "rc=$rc" "$(cat "$dir/err")"
out=$("$sbxrun" exec --sandbox "$id" --allow echo -- echo ran </dev/null 2>"$dir/err"); rc=$?
[ $rc = 0 ] && ok "/dev/null is not refused" || not_ok "/dev/null" "rc=$rc" "$(cat "$dir/err")"

# --detach: the id, and the command keeps running.
cid=$("$sbxrun" exec --detach --sandbox "$id" --allow sh -- sh -c 'sleep 1; echo done > detached' 2>"$dir/err" </dev/null)
case "$cid" in cmd_*) ok "--detach prints the command id" ;; *) not_ok "--detach" "$cid" "$(cat "$dir/err")" ;; esac
sleep 2.5
expect 0 "done" "" "the detached command ran on after sbxrun exited" -- exec --sandbox "$id" --allow cat -- cat detached
expect 2 "" "--detach needs --sandbox" "--detach without --sandbox" -- exec --detach --allow true -- true

# Ctrl-C (a real SIGINT): the command is killed in the sandbox, exit 130, the message says so.
"$sbxrun" exec --sandbox "$id" --allow sh -- sh -c 'echo $$ > victim.pid; echo started; exec sleep 60' \
  >"$dir/cout" 2>"$dir/cerr" </dev/null &
epid=$!
for _ in $(seq 100); do grep -q started "$dir/cout" 2>/dev/null && break; sleep 0.1; done
kill -INT "$epid"
wait "$epid"; rc=$?
[ $rc = 130 ] && grep -q "interrupted: the command was killed in the sandbox" "$dir/cerr" &&
  ok "Ctrl-C: exit 130, and it says the command was killed" || not_ok "Ctrl-C" "rc=$rc" "$(cat "$dir/cerr")"
vpid=$("$sbxrun" exec --sandbox "$id" --allow cat -- cat victim.pid 2>/dev/null </dev/null)
out=$("$sbxrun" exec --sandbox "$id" --allow sh -- sh -c "kill -0 $vpid 2>/dev/null && echo alive || echo gone" </dev/null 2>&1)
[ "$out" = gone ] && ok "the interrupted command no longer runs in the sandbox" || not_ok "still running" "$vpid: $out"

# --json of a run cut short by Ctrl-C: its output so far, the ids, and the error.
"$sbxrun" exec --json --sandbox "$id" --allow sh -- sh -c 'echo partial; exec sleep 60' >"$dir/jout" 2>/dev/null </dev/null &
epid=$!
sleep 2
kill -INT "$epid"
wait "$epid"; rc=$?
[ $rc = 130 ] && python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
assert not e["ok"] and e["exitCode"] == 130 and list(e) == ["sbxrun", "ok", "exitCode", "result", "error"], e
# null, or 137 when the kill answer already saw the program end (man sbxrun)
assert e["result"]["stdout"] == "partial\n" and e["result"]["exitCode"] in (None, 137) and e["result"]["commandId"], e
assert e["error"]["status"] == "SBX_E_CANCELLED", e' "$dir/jout" && ok "--json on Ctrl-C: partial output beside the error" ||
  not_ok "--json Ctrl-C" "rc=$rc" "$(cat "$dir/jout")"

# Snapshots: made by sandbox snapshot, then listed, read and deleted.
sid=$("$sbxrun" sandbox create 2>/dev/null)
snap=$("$sbxrun" sandbox snapshot "$sid" --expiration 1h 2>"$dir/err")
case "$snap" in snap_*) ok "sandbox snapshot --expiration 1h" ;; *) not_ok "snapshot" "$snap" "$(cat "$dir/err")" ;; esac
# Progress on a terminal only: a snapshot of 64 MiB takes long enough to show its clock.
sid2=$("$sbxrun" sandbox create 2>/dev/null)
"$sbxrun" exec --sandbox "$sid2" --allow sh -- sh -c 'head -c 67108864 /dev/urandom > big' </dev/null >/dev/null 2>&1
TERM=xterm script -qec "$(printf '%q ' "$sbxrun" sandbox snapshot "$sid2")" /dev/null >"$dir/tty" 2>&1 </dev/null
snap2=$(grep -o 'snap_[A-Za-z0-9]*' "$dir/tty" | tail -1)
grep -q 'snapshotting\.\.\. [0-9.]*s' "$dir/tty" && ok "on a terminal, a snapshot shows its progress" ||
  not_ok "snapshot progress on a tty" "$(cat -v "$dir/tty")"
sid3=$("$sbxrun" sandbox create --snapshot "$snap2" 2>"$dir/err3" </dev/null)
"$sbxrun" sandbox snapshot "$sid3" >"$dir/piped" 2>&1 </dev/null
grep -q 'snapshotting' "$dir/piped" && not_ok "progress when piped" "$(cat -v "$dir/piped")" ||
  ok "piped, a snapshot prints its id and nothing else"
[ "$(wc -l <"$dir/piped")" = 1 ] || not_ok "piped snapshot output" "$(cat -v "$dir/piped")"
expect 0 "$snap" "" "snapshot list shows it" -- snapshot list
expect 0 "status:    created" "" "snapshot get" -- snapshot get "$snap"
expect 0 "\"id\": \"$snap\"" "" "snapshot get --json" -- snapshot get "$snap" --json
expect 0 "$snap deleted" "" "snapshot delete" -- snapshot delete "$snap"
out=$("$sbxrun" snapshot list 2>&1)
[[ "$out" != *"$snap"* ]] && ok "a deleted snapshot is not listed" || not_ok "listed after delete" "$out"
expect 0 "status:    deleted" "" "snapshot get of a deleted one says deleted" -- snapshot get "$snap"
expect 125 "" "" "snapshot get of an unknown id: no snapshot (125)" -- snapshot get snap_doesnotexist
expect 2 "" "did you mean 'list'?" "snapshot lst" -- snapshot lst
expect 2 "" "is for 'snapshot list'" "snapshot get --limit" -- snapshot get "$snap" --limit 3

# A named sandbox (v2) by its name, wherever an id is taken; a stopped one
# is resumed for exec and cp.
"$sbxrun" sandbox create --name conv-named --persistent >/dev/null 2>"$dir/err" </dev/null ||
  not_ok "create a named sandbox" "$(cat "$dir/err")"
expect 0 "hello" "" "exec --sandbox NAME" -- exec --sandbox conv-named --allow sh -- sh -c 'echo hello > f.txt; cat f.txt'
expect 0 "name:      conv-named" "" "sandbox get NAME" -- sandbox get conv-named
expect 0 "stopped" "" "sandbox stop NAME" -- sandbox stop conv-named
expect 0 "hello" "" "cp out of a stopped named sandbox resumes it" -- cp conv-named:f.txt -
expect 125 "" "no sandbox has the id or the name nope-nope" "an unknown id or name: no sandbox (125)" -- exec --sandbox nope-nope --allow true -- true
"$sbxrun" sandbox delete conv-named >/dev/null 2>&1

# cp of a directory named "-" (cd -- - is $OLDPWD in sh) copies that one;
# one whose tar prints megabytes of complaints does not hang on them.
"$sbxrun" exec --sandbox "$id" --allow sh -- sh -c 'mkdir -p ./-/in && echo dash > ./-/in/f.txt' </dev/null >/dev/null 2>&1
expect 0 "" "" "cp SANDBOX:- (a directory named -)" -- cp "$id:-" "$dir/dash"
[ "$(cat "$dir/dash/in/f.txt" 2>/dev/null)" = dash ] && [ "$(find "$dir/dash" -type f | wc -l)" = 1 ] &&
  ok "... and only that directory" || not_ok "cp of '-'" "$(find "$dir/dash" | head)"
"$sbxrun" exec --sandbox "$id" --allow sh -- sh -c 'mkdir noread && cd noread && i=0; while [ $i -lt 30000 ]; do : > "unreadable-file-with-a-long-name-$i"; i=$((i+1)); done; chmod 000 *' </dev/null >/dev/null 2>&1
t0=$(date +%s)
timeout 120 "$sbxrun" cp "$id:noread" "$dir/noread" >/dev/null 2>"$dir/err" </dev/null; rc=$?
t1=$(date +%s)
[ $rc != 124 ] && [ $rc != 0 ] && [ ! -e "$dir/noread" ] && [ -z "$(ls -d "$dir"/noread.sbxrun-* 2>/dev/null)" ] &&
  ok "a pack that prints >1 MiB of errors fails ($rc, $((t1 - t0)) s) instead of hanging, nothing left" ||
  not_ok "noisy pack" "rc=$rc after $((t1 - t0)) s" "$(tail -c 600 "$dir/err")"
"$sbxrun" exec --sandbox "$id" --allow sh -- sh -c 'chmod -R 700 noread; rm -rf noread; ls /tmp | grep -c sbxrun-cp' </dev/null >"$dir/left" 2>/dev/null
[ "$(cat "$dir/left")" = 0 ] && ok "no packed file left in the sandbox's /tmp" || not_ok "sandbox /tmp" "$(cat "$dir/left")"

# Every command's --json output against the envelope's schema (doc/schemas/cli-envelope-1.json):
# results, errors (usage ones too) and the cut-short form.
schema="$(dirname "$0")/../../doc/schemas/cli-envelope-1.json"
printf 'x\n' >"$dir/in.txt"
i=0
while IFS= read -r line; do
  i=$((i + 1))
  eval "set -- $line"
  "$sbxrun" "$@" >"$dir/j$i" 2>/dev/null </dev/null
  printf '%s\n' "$line" >"$dir/j$i.cmd"
done <<EOF2
--json policy check -- ls
--json policy check -- npx x
--json policy check
verify --json --no-such-option
--json netpolicy show verify.test
--json netpolicy show nope
--json transcript verify $dir/in.txt
--json patch check --repo $dir $dir/in.txt
--json sandbox get $id
--json sandbox get sbx_nope
--json sandbox list
--json snapshot list
--json snapshot get snap_nope
--json sandbox lsit
--json exec --sandbox $id --allow echo -- echo hi
--json exec --sandbox $id --timeout 2s --allow sh -- sh -c 'echo a; sleep 9'
--json exec --sandbox $id -- npx x
--json cp $dir/in.txt $id:in.txt
--json sandbx
--json
--json --bogus sandbox list
--json --endpoint
--json --json=1 version
sandbox --json
sandbox frob --json
snapshot --json
transcript --json
policy --json
patch --json
version --json
--json version
EOF2
printf 'secret ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n' | "$sbxrun" redact --json --no-env >"$dir/j0" 2>/dev/null
echo "redact --json" >"$dir/j0.cmd"
out=$(python3 - "$schema" "$dir" "$i" <<'PY'
import json, sys
from pathlib import Path
import jsonschema
schema = json.load(open(sys.argv[1]))
d = Path(sys.argv[2])
bad = []
forms = set()
for k in range(int(sys.argv[3]) + 1):
    cmd = (d / f"j{k}.cmd").read_text().strip()
    text = (d / f"j{k}").read_text()
    try:
        e = json.loads(text)
        jsonschema.validate(e, schema)
        assert list(e)[:3] == ["sbxrun", "ok", "exitCode"] and text.endswith("}\n"), "key order / one object"
        forms.add(tuple(list(e)[3:]))
        # An error says what was wrong, not where to look for it.
        assert "see standard error" not in e.get("error", {}).get("message", ""), "placeholder message"
    except Exception as x:
        bad.append(f"{cmd}: {x}: {text[:300]!r}")
if forms != {("result",), ("error",), ("result", "error")}:
    bad.append(f"not every form was seen: {sorted(forms)}")
print("\n".join(bad))
PY
)
[ -z "$out" ] && ok "every --json output ($((i + 1)) commands, all three forms) matches the envelope's schema" ||
  not_ok "envelope schema" "$out"

"$sbxrun" sandbox stop "$id" >/dev/null 2>&1
echo "1..$n"
exit $fail
