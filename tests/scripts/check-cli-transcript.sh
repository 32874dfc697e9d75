#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun transcript show|verify, on transcripts written by sbxrun exec
# --transcript (a command the policy denies: no sandbox is needed, and the
# record is still written): verify's exit codes and messages (a changed
# byte, a removed line, a torn last line, --expect), show for people and
# --json/--step, usage errors.
#   check-cli-transcript.sh SBXRUN
set -u
[ $# -eq 1 ] || { echo "usage: $0 SBXRUN" >&2; exit 2; }
sbxrun=$1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

t=$tmp/denied.jsonl
gh=ghp_0123456789abcdefghijABCDEFGHIJ012345
env -i "$sbxrun" exec --transcript "$t" -- npx evil-package --token="$gh" >/dev/null 2>&1; rc=$?
[ $rc = 3 ] && [ -s "$t" ] && ok "a denied exec writes its transcript" || bad "denied exec: rc=$rc"
grep -q "$gh" "$t" && bad "the token is in the transcript" || ok "argv redacted in the file"
[ "$(stat -c %a "$t")" = 600 ] && ok "mode 0600" || bad "mode $(stat -c %a "$t")"

out=$("$sbxrun" transcript verify "$t"); rc=$?
[ $rc = 0 ] && case "$out" in *"the chain holds: 1 steps, complete"*) true ;; *) false ;; esac &&
  ok "verify: exit 0" || bad "verify: rc=$rc $out"
hash=${out##*last hash }

out=$("$sbxrun" transcript show "$t"); rc=$?
[ $rc = 0 ] && case "$out" in *"job exec"*"step 1 (exec): npx evil-package --token=[REDACTED:github]"*"policy-denied"*"end: denied"*) true ;; *) false ;; esac &&
  ok "show: the job, the step, the verdict" || bad "show: rc=$rc $out"
out=$("$sbxrun" transcript show --json "$t"); rc=$?
[ $rc = 0 ] && printf '%s' "$out" | python3 -c '
import json, sys
e = json.load(sys.stdin)
assert e["sbxrun"] == "transcript" and e["ok"] is True and e["exitCode"] == 0, e
types = [x["type"] for x in e["result"]]
assert types == ["job", "step", "end"], types
assert e["result"][1]["argv"][0] == "npx", e["result"][1]' && ok "show --json: the entries, in order" ||
  bad "show --json: rc=$rc $out"
out=$("$sbxrun" transcript show "$t" --step 1 --json); rc=$?
[ $rc = 0 ] && printf '%s' "$out" | python3 -c '
import json, sys
e = json.load(sys.stdin)["result"]
assert e["step"] == 1 and e["reason"] == "policy-denied" and e["exit_code"] is None, e' &&
  ok "show --step 1 --json" || bad "show --step: rc=$rc $out"
out=$("$sbxrun" transcript show "$t" --step 2 --json 2>/dev/null); rc=$?
[ $rc = 1 ] && printf '%s' "$out" | python3 -c '
import json, sys
e = json.load(sys.stdin)
assert e["ok"] is False and e["exitCode"] == 1 and "no step 2" in e["error"]["message"], e' &&
  ok "show --step 2 --json: the error object" || bad "show --step 2 --json: rc=$rc $out"
err=$("$sbxrun" transcript show "$t" --step 2 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && case "$err" in *"no step 2"*) true ;; *) false ;; esac && ok "show --step 2: no such step" ||
  bad "step 2: rc=$rc $err"

"$sbxrun" transcript verify --expect "$hash" "$t" >/dev/null && ok "verify --expect with the last hash" ||
  bad "verify --expect"
err=$("$sbxrun" transcript verify --expect 0000 "$t" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && case "$err" in *"not 0000"*) true ;; *) false ;; esac && ok "verify --expect: another hash, exit 1" ||
  bad "--expect other: rc=$rc $err"

# A changed byte, a removed line, a torn last line.
sed 's/evil-package/evil-packagf/' "$t" >"$tmp/changed"
err=$("$sbxrun" transcript verify "$tmp/changed" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && case "$err" in *"entry 1 is broken"*"changed"*) true ;; *) false ;; esac &&
  ok "verify: a changed byte names entry 1" || bad "changed: rc=$rc $err"
sed '2d' "$t" >"$tmp/removed"
err=$("$sbxrun" transcript verify "$tmp/removed" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && case "$err" in *"entry 1 is broken"*) true ;; *) false ;; esac &&
  ok "verify: a removed entry" || bad "removed: rc=$rc $err"
head -c -20 "$t" >"$tmp/torn"
err=$("$sbxrun" transcript verify "$tmp/torn" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && case "$err" in *"entry 2 is torn"*) true ;; *) false ;; esac && ok "verify: a torn last line" ||
  bad "torn: rc=$rc $err"
out=$("$sbxrun" transcript show "$tmp/torn"); rc=$?
[ $rc = 0 ] && case "$out" in *"step 1"*"incomplete"*"torn last line"*) true ;; *) false ;; esac &&
  ok "show: a torn transcript is shown and said to be so" || bad "show torn: rc=$rc $out"

# Intact but incomplete (no end entry, as a killed job leaves it): exit 5,
# unless the caller accepts that.
head -n 2 "$t" >"$tmp/incomplete"
out=$("$sbxrun" transcript verify "$tmp/incomplete" 2>"$tmp/err"); rc=$?
[ $rc = 5 ] && case "$out$(cat "$tmp/err")" in *"incomplete (no end entry)"*"incomplete: no end entry"*) true ;; *) false ;; esac &&
  ok "verify: an incomplete transcript exits 5" || bad "incomplete: rc=$rc $out $(cat "$tmp/err")"
out=$("$sbxrun" transcript verify --allow-incomplete "$tmp/incomplete" 2>&1); rc=$?
[ $rc = 0 ] && case "$out" in *"the chain holds: 1 steps, incomplete"*) true ;; *) false ;; esac &&
  ok "verify --allow-incomplete: exit 0" || bad "--allow-incomplete: rc=$rc $out"
"$sbxrun" transcript verify --allow-incomplete "$t" >/dev/null && ok "--allow-incomplete on a complete one" ||
  bad "--allow-incomplete complete"
err=$("$sbxrun" transcript verify --allow-incomplete "$tmp/torn" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && ok "--allow-incomplete does not accept a torn line" || bad "torn with --allow-incomplete: rc=$rc $err"

# Not transcripts, and usage.
printf 'hello\n' >"$tmp/not"
err=$("$sbxrun" transcript verify "$tmp/not" 2>&1); rc=$?
[ $rc = 1 ] && case "$err" in *"not an sbxrun transcript"*) true ;; *) false ;; esac && ok "not a transcript" ||
  bad "not a transcript: rc=$rc $err"
err=$("$sbxrun" transcript show "$tmp/missing" 2>&1); rc=$?
[ $rc = 125 ] && case "$err" in *"$tmp/missing"*) true ;; *) false ;; esac && ok "a missing file is named (125, as any unreadable local file)" ||
  bad "missing: rc=$rc $err"
err=$("$sbxrun" transcript verify "$tmp/missing" 2>&1); rc=$?
[ $rc = 125 ] && ok "verify of a missing file: 125" || bad "verify missing: rc=$rc $err"
for a in "" "show" "frob $t" "verify $t $t" "verify --step 1 $t" "show --expect x $t" "show --step 0 $t" "show --allow-incomplete $t"; do
  "$sbxrun" transcript $a >/dev/null 2>&1; rc=$?
  [ $rc = 2 ] && ok "usage error: '$a'" || bad "usage '$a': rc=$rc"
done
"$sbxrun" transcript --help | grep -q "usage: sbxrun transcript show" && ok "--help" || bad "--help"
"$sbxrun" transcript verify -h | grep -q "usage: sbxrun transcript show" && ok "verify -h" || bad "verify -h"
# verify --json: one envelope, valid and complete, or the broken entry beside the error
out=$("$sbxrun" transcript verify --json "$t"); rc=$?
[ $rc = 0 ] && printf '%s' "$out" | python3 -c 'import json,sys; e=json.load(sys.stdin); r=e["result"]
assert e["ok"] and r["valid"] and r["complete"] and r["steps"] >= 1 and len(r["headHash"]) == 64' &&
  ok "verify --json" || bad "verify --json: rc=$rc $out"
out=$("$sbxrun" --json transcript verify "$tmp/not" 2>/dev/null); rc=$?
[ $rc = 1 ] && printf '%s' "$out" | python3 -c 'import json,sys; e=json.load(sys.stdin)
assert not e["ok"] and e["exitCode"] == 1 and e["error"]["status"]' &&
  ok "--json before the command, on a failure" || bad "global --json: rc=$rc $out"
"$sbxrun" exec --help | grep -q -- "--transcript FILE" && ok "exec --help names --transcript" ||
  bad "exec --help"
exit $fail
