#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun redact: stdin to stdout, --secret, --secret-env, the environment
# default, --chunk-size (output identical at every size), --stats, errors.
#   check-cli-redact.sh SBXRUN
set -u
[ $# -eq 1 ] || { echo "usage: $0 SBXRUN" >&2; exit 2; }
sbxrun=$1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

gh=ghp_0123456789abcdefghijABCDEFGHIJ012345
printf 'token %s end\n' "$gh" >"$tmp/in"
out=$(env -i "$sbxrun" redact <"$tmp/in")
[ "$out" = "token [REDACTED:github] end" ] && ok "a shape" || bad "a shape: $out"

out=$(printf 'pw=hunter2-correct-horse;\n' | env -i "$sbxrun" redact --secret hunter2-correct-horse)
[ "$out" = "pw=[REDACTED:secret];" ] && ok "--secret" || bad "--secret: $out"
out=$(printf 'u=hunter2-correct-horse%%21\n' | env -i "$sbxrun" redact --secret 'hunter2-correct-horse!')
[ "$out" = "u=[REDACTED:secret]" ] && ok "--secret, percent-encoded form" || bad "percent form: $out"

out=$(printf 'x MYVALUE-0123456789 y\n' | env -i SOME_VAR=MYVALUE-0123456789 "$sbxrun" redact --secret-env SOME_VAR)
[ "$out" = "x [REDACTED:secret] y" ] && ok "--secret-env" || bad "--secret-env: $out"

# The environment default: secret-looking names, 8 bytes or more.
out=$(printf 'a deploy-key-value-1 b short c\n' | env -i DEPLOY_TOKEN=deploy-key-value-1 MY_API_KEY=short "$sbxrun" redact)
[ "$out" = "a [REDACTED:secret] b short c" ] && ok "secret-looking variables by default" || bad "env default: $out"
out=$(printf 'a deploy-key-value-1 b\n' | env -i DEPLOY_TOKEN=deploy-key-value-1 "$sbxrun" redact --no-env)
[ "$out" = "a deploy-key-value-1 b" ] && ok "--no-env" || bad "--no-env: $out"
out=$(env -i "$sbxrun" redact --no-shapes <"$tmp/in")
[ "$out" = "token $gh end" ] && ok "--no-shapes" || bad "--no-shapes: $out"

# Any chunk size gives the same bytes.
{ for i in $(seq 1 200); do printf 'line %d %s hunter2-correct-horse https://u:p4ss@h/x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig\n' "$i" "$gh"; done; } >"$tmp/big"
env -i "$sbxrun" redact --secret hunter2-correct-horse <"$tmp/big" >"$tmp/ref"
grep -q "hunter2-correct-horse\|$gh\|p4ss" "$tmp/ref" && bad "a secret leaked" || ok "nothing leaked"
same=1
for n in 1 2 3 5 7 13 64 1000 65536; do
  env -i "$sbxrun" redact --secret hunter2-correct-horse --chunk-size "$n" <"$tmp/big" >"$tmp/got"
  cmp -s "$tmp/ref" "$tmp/got" || { same=0; bad "--chunk-size $n differs"; }
done
[ $same = 1 ] && ok "--chunk-size 1..65536: identical output"

# Binary-safe, untouched when clean.
head -c 100000 /dev/urandom >"$tmp/rand"
env -i "$sbxrun" redact --no-shapes <"$tmp/rand" | cmp -s - "$tmp/rand" && ok "clean binary input passes unchanged" ||
  bad "binary input changed"

stats=$(env -i "$sbxrun" redact --secret hunter2-correct-horse --stats <"$tmp/big" 2>&1 >/dev/null)
case "$stats" in *'"secret": 200'*'"github": 200'*) ok "--stats" ;; *) bad "--stats: $stats" ;; esac

# Errors: exit 2 with a message that does not echo the secret.
err=$(printf x | env -i "$sbxrun" redact --secret short7x 2>&1 >/dev/null); rc=$?
[ $rc = 2 ] && case "$err" in *"7 bytes"*) ! printf '%s' "$err" | grep -q short7x ;; *) false ;; esac &&
  ok "a short --secret: exit 2, not echoed" || bad "short secret: rc=$rc $err"
err=$(printf x | env -i "$sbxrun" redact --secret-env NOPE_UNSET 2>&1 >/dev/null); rc=$?
[ $rc = 2 ] && case "$err" in *NOPE_UNSET*) true ;; *) false ;; esac && ok "--secret-env of an unset variable" ||
  bad "unset var: rc=$rc $err"
for a in "--chunk-size 0" "--chunk-size x" "--frob" "extra"; do
  printf x | env -i "$sbxrun" redact $a >/dev/null 2>&1; rc=$?
  [ $rc = 2 ] && ok "usage error: $a" || bad "usage error $a: rc=$rc"
done
"$sbxrun" redact --help | grep -q "usage: sbxrun redact" && ok "--help" || bad "--help"
exit $fail
