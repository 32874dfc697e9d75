#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun patch check: the file lines, exit codes, refusals, --json, --base,
# stdin, usage errors, and the patch id against git's.
#   check-cli-patch.sh SBXRUN
set -u
[ $# -eq 1 ] || { echo "usage: $0 SBXRUN" >&2; exit 2; }
sbxrun=$1
command -v git >/dev/null || { echo "SKIP: no git"; exit 77; }
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A git of its own: no user or system configuration.
export HOME="$tmp" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
repo=$tmp/repo
g() { git -C "$repo" "$@"; }

# expect EXIT STDOUT-SUBSTRING STDERR-SUBSTRING ARGS...
expect() {
  local want=$1 out_want=$2 err_want=$3; shift 3
  "$sbxrun" patch "$@" >"$tmp/out" 2>"$tmp/err" <"${stdin:-/dev/null}"; local rc=$?
  local out err; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
  if [ $rc -ne "$want" ]; then
    echo "FAIL: sbxrun patch $* exited $rc, expected $want (stdout '$out', stderr '$err')"; fail=1; return
  fi
  case "$out" in *"$out_want"*) ;; *) echo "FAIL: sbxrun patch $*: stdout '$out' lacks '$out_want'"; fail=1; return ;; esac
  case "$err" in *"$err_want"*) ;; *) echo "FAIL: sbxrun patch $*: stderr '$err' lacks '$err_want'"; fail=1; return ;; esac
  echo "ok: sbxrun patch $* -> $rc"
}

# The repository: two commits.
git init -q "$repo" || { echo "FAIL: git init"; exit 1; }
mkdir -p "$repo/src" "$repo/doc"
printf 'one\ntwo\nthree\n' >"$repo/src/a.c"
printf 'old doc\n' >"$repo/doc/old.md"
printf 'gone\n' >"$repo/del.txt"
g add -A && g commit -qm first || { echo "FAIL: first commit"; exit 1; }
first=$(g rev-parse HEAD)
printf 'one\n2\nthree\n' >"$repo/src/a.c"
g commit -qam second || { echo "FAIL: second commit"; exit 1; }

# A patch against HEAD: a modification, an addition, a deletion, a rename.
printf 'one\n2\nthree\nfour\nfive\n' >"$repo/src/a.c"
printf 'new\nfile\n' >"$repo/src/b.c"
g rm -q del.txt
g mv doc/old.md doc/new.md
g add -A
g diff --cached -M >"$tmp/good.diff"
g reset -q --hard

expect 0 "M  src/a.c (+2 -0)" "" check --repo "$repo" "$tmp/good.diff"
expect 0 "A  src/b.c (+2 -0)" "" check --repo "$repo" "$tmp/good.diff"
expect 0 "D  del.txt (+0 -1)" "" check --repo "$repo" "$tmp/good.diff"
expect 0 "R  doc/old.md -> doc/new.md" "" check --repo "$repo" "$tmp/good.diff"
expect 0 "4 files changed, 4 insertions(+), 1 deletion(-); patch id " "" check --repo "$repo" "$tmp/good.diff"
expect 0 "M  src/a.c" "" check "$tmp/good.diff" --repo "$repo" --base HEAD
# Nothing in the repository changed.
[ -z "$(g status --porcelain)" ] || { echo "FAIL: the work tree or index changed"; fail=1; }

# The same patch without the rename, and one whose rename changes the file.
printf 'one\n2\nthree\nfour\nfive\n' >"$repo/src/a.c"
printf 'new\nfile\n' >"$repo/src/b.c"
g rm -q del.txt
g add -A
g diff --cached >"$tmp/hunks.diff"
g reset -q --hard
printf 'old doc\nmore\n' >"$repo/doc/old.md"
g mv doc/old.md doc/new.md
printf 'one\n2\n3\n' >"$repo/src/a.c"
g add -A
g diff --cached -M >"$tmp/rename-edit.diff"
g reset -q --hard
expect 0 "R  doc/old.md -> doc/new.md (+1 -0)" "" check --repo "$repo" "$tmp/rename-edit.diff"

# The patch id is git's.
git_id() { git patch-id --stable <"$1" | cut -d' ' -f1; }
for d in hunks rename-edit; do
  expect 0 "; patch id $(git_id "$tmp/$d.diff")" "" check --repo "$repo" "$tmp/$d.diff"
done
# A file without a hunk (the pure rename) followed by another file: git
# (2.39) folds the first into the second's hash; the id must do the same.
expect 0 "; patch id $(git_id "$tmp/good.diff")" "" check --repo "$repo" "$tmp/good.diff"

# Standard input.
stdin="$tmp/good.diff" expect 0 "M  src/a.c (+2 -0)" "" check --repo "$repo" -
stdin="$tmp/hunks.diff" expect 0 "patch id $(git_id "$tmp/hunks.diff")" "" check --repo "$repo" -

# A patch that does not apply: its context is the first commit's.
cat >"$tmp/stale.diff" <<'EOF'
diff --git a/src/a.c b/src/a.c
--- a/src/a.c
+++ b/src/a.c
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
EOF
expect 4 "M  src/a.c (+1 -1)" "the patch does not apply: src/a.c: " check --repo "$repo" "$tmp/stale.diff"
expect 4 "" "src/a.c: hunk @@ -1,3 +1,3 @@: its context and removed lines are not in the file" check --repo "$repo" "$tmp/stale.diff"
# --base: it applies to the first commit, by id or as HEAD~1.
expect 0 "M  src/a.c (+1 -1)" "" check --repo "$repo" --base "$first" "$tmp/stale.diff"
expect 0 "1 file changed, 1 insertion(+), 1 deletion(-)" "" check --repo "$repo" --base HEAD~1 "$tmp/stale.diff"
# And the first patch does not apply there.
expect 4 "" "the patch does not apply: " check --repo "$repo" --base "$first" "$tmp/good.diff"

# The verdict is git apply --check's, on HEAD and on the first commit.
for base in HEAD "$first"; do
  for d in good hunks rename-edit stale; do
    g checkout -q --detach "$base" && git -C "$repo" apply --check "$tmp/$d.diff" 2>/dev/null && want=0 || want=4
    g checkout -q -
    "$sbxrun" patch check --repo "$repo" --base "$base" "$tmp/$d.diff" >/dev/null 2>&1; rc=$?
    if [ $rc -eq $want ]; then echo "ok: $d.diff on $base: $rc, as git apply --check"
    else echo "FAIL: $d.diff on $base: exit $rc, git apply --check says $want"; fail=1; fi
  done
done

# Malformed: exit 4 too, told apart.
printf 'this is not a patch\n' >"$tmp/junk.diff"
expect 4 "" "malformed patch: " check --repo "$repo" "$tmp/junk.diff"

# Unsafe: 3, the rule named.
cat >"$tmp/dotdot.diff" <<'EOF'
diff --git a/../x b/../x
new file mode 100644
--- /dev/null
+++ b/../x
@@ -0,0 +1 @@
+x
EOF
expect 3 "" "(rule dotdot)" check --repo "$repo" "$tmp/dotdot.diff"
cat >"$tmp/dotdot-u.diff" <<'EOF'
--- a/src/a.c
+++ b/src/../../x
@@ -1,3 +1,3 @@
 one
-2
+3
 three
EOF
expect 3 "" "(rule dotdot)" check --repo "$repo" "$tmp/dotdot-u.diff"
cat >"$tmp/hook.diff" <<'EOF'
diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout
new file mode 100755
--- /dev/null
+++ b/.git/hooks/post-checkout
@@ -0,0 +1,2 @@
+#!/bin/sh
+touch /tmp/pwned
EOF
expect 3 "" "(rule git-dir)" check --repo "$repo" "$tmp/hook.diff"
expect 3 "" ".git/hooks/post-checkout" check --repo "$repo" "$tmp/hook.diff"
cat >"$tmp/symlink.diff" <<'EOF'
diff --git a/link b/link
new file mode 120000
--- /dev/null
+++ b/link
@@ -0,0 +1 @@
+/etc/passwd
\ No newline at end of file
EOF
expect 3 "" "unsafe patch: 'link': a symbolic link created, changed or written through (rule symlink)" check --repo "$repo" "$tmp/symlink.diff"
cat >"$tmp/abs.diff" <<'EOF'
diff --git a//etc/cron.d/x b//etc/cron.d/x
new file mode 100644
--- /dev/null
+++ b//etc/cron.d/x
@@ -0,0 +1 @@
+x
EOF
expect 3 "" "(rule absolute)" check --repo "$repo" "$tmp/abs.diff"
cat >"$tmp/abs-rename.diff" <<'EOF'
diff --git a/src/a.c b/src/a.c
similarity index 100%
rename from src/a.c
rename to /etc/a.c
EOF
expect 3 "" "(rule absolute)" check --repo "$repo" "$tmp/abs-rename.diff"
# Refused whatever the base.
expect 3 "" "(rule git-dir)" check --repo "$repo" --base "$first" "$tmp/hook.diff"

# --json: the envelope (sbxrun(1), JSON OUTPUT), the verdict's object its
# result, whatever the verdict; exitCode is the exit status.
json_check() { # FILE VERDICT [RULE] EXIT
  python3 -c '
import json, sys
e = json.load(sys.stdin)
want_verdict, want_rule, want_exit = sys.argv[1], sys.argv[2], int(sys.argv[3])
assert list(e) == ["sbxrun", "ok", "exitCode", "result"], list(e)
assert e["sbxrun"] == "patch" and e["exitCode"] == want_exit and e["ok"] == (want_exit == 0), e
d = e["result"]
for k in ("verdict", "rule", "message", "patchId", "files", "diffstat"):
    assert k in d, "no " + k
assert d["verdict"] == want_verdict, d["verdict"]
if want_rule:
    assert d["rule"] == want_rule, d["rule"]
for k in ("files", "additions", "deletions"):
    assert k in d["diffstat"], "no diffstat." + k
' "$2" "${3:-}" "${4:-0}" <"$1"
}
"$sbxrun" patch check --json --repo "$repo" "$tmp/good.diff" >"$tmp/j" 2>/dev/null; rc=$?
if [ $rc -eq 0 ] && json_check "$tmp/j" applies && python3 -c '
import json, sys
d = json.load(sys.stdin)["result"]
assert d["patchId"] == sys.argv[1], d["patchId"]
assert d["rule"] is None and d["message"] is None, d
assert d["diffstat"] == {"files": 4, "additions": 4, "deletions": 1}, d["diffstat"]
files = {f["path"]: f for f in d["files"]}
assert set(files) == {"src/a.c", "src/b.c", "del.txt", "doc/new.md"}, files
assert files["doc/new.md"]["oldPath"] == "doc/old.md", files["doc/new.md"]
assert files["src/a.c"]["additions"] == 2 and files["src/a.c"]["deletions"] == 0
' "$(git_id "$tmp/good.diff")" <"$tmp/j"; then echo "ok: --json applies"; else echo "FAIL: --json of an applying patch (exit $rc): $(cat "$tmp/j")"; fail=1; fi
# Pretty, 2-space indent, one trailing newline.
if python3 -c '
import sys
s = open(sys.argv[1]).read()
assert s.startswith("{\n  \"") and s.endswith("}\n") and not s.endswith("\n\n")
' "$tmp/j"; then echo "ok: --json layout"
else echo "FAIL: --json is not indented by 2 with one trailing newline"; fail=1; fi
"$sbxrun" patch check --json --repo "$repo" "$tmp/stale.diff" >"$tmp/j" 2>/dev/null; rc=$?
if [ $rc -eq 4 ] && json_check "$tmp/j" does-not-apply "" 4; then echo "ok: --json does-not-apply"
else echo "FAIL: --json of a stale patch (exit $rc): $(cat "$tmp/j")"; fail=1; fi
"$sbxrun" patch check --json --repo "$repo" "$tmp/hook.diff" >"$tmp/j" 2>/dev/null; rc=$?
if [ $rc -eq 3 ] && json_check "$tmp/j" unsafe git-dir 3; then echo "ok: --json unsafe"
else echo "FAIL: --json of an unsafe patch (exit $rc): $(cat "$tmp/j")"; fail=1; fi
"$sbxrun" patch check --json --repo "$repo" "$tmp/junk.diff" >"$tmp/j" 2>/dev/null; rc=$?
if [ $rc -eq 4 ] && json_check "$tmp/j" malformed "" 4; then echo "ok: --json malformed"
else echo "FAIL: --json of a malformed patch (exit $rc): $(cat "$tmp/j")"; fail=1; fi
# With --json too, the verdict's reason on stderr.
expect 4 '"verdict": "does-not-apply"' "the patch does not apply: src/a.c: " check --json --repo "$repo" "$tmp/stale.diff"
expect 3 '"verdict": "unsafe"' "unsafe patch: '.git/hooks/" check --json --repo "$repo" "$tmp/hook.diff"
stdin="$tmp/hunks.diff" expect 0 "\"patchId\": \"$(git_id "$tmp/hunks.diff")\"" "" check --json --repo "$repo" -

# A series: each patch on the tree the ones before it leave.
git clone -q "$repo" "$tmp/series" && git -C "$tmp/series" apply --index "$tmp/good.diff" &&
  git -C "$tmp/series" commit -qm good && printf 'six\n' >>"$tmp/series/src/b.c" &&
  git -C "$tmp/series" diff >"$tmp/on-top.diff" && [ -s "$tmp/on-top.diff" ] ||
  { echo "FAIL: could not make a patch on top of good.diff"; exit 1; }
expect 0 "$tmp/on-top.diff:
M  src/b.c (+1 -0)" "" check --repo "$repo" "$tmp/good.diff" "$tmp/on-top.diff"
expect 0 "$tmp/good.diff:
D  del.txt (+0 -1)" "" check --repo "$repo" "$tmp/good.diff" "$tmp/on-top.diff"
expect 4 "" "the patch does not apply: src/b.c" check --repo "$repo" "$tmp/on-top.diff"
expect 4 "" "patch 2 of 2 ($tmp/good.diff): the patch does not apply" check --repo "$repo" "$tmp/good.diff" "$tmp/good.diff"
expect 3 "" "patch 3 of 3 ($tmp/hook.diff): unsafe patch: '.git/hooks/post-checkout': " check --repo "$repo" "$tmp/good.diff" \
  "$tmp/on-top.diff" "$tmp/hook.diff"
stdin="$tmp/on-top.diff" expect 0 "M  src/b.c" "" check --repo "$repo" "$tmp/good.diff" -
"$sbxrun" patch check --json --repo "$repo" "$tmp/good.diff" "$tmp/on-top.diff" "$tmp/good.diff" >"$tmp/j" 2>/dev/null; rc=$?
if [ $rc -eq 4 ] && python3 -c '
import json, sys
e = json.load(sys.stdin)
assert e["exitCode"] == 4 and isinstance(e["result"], list), e
assert [d["verdict"] for d in e["result"]] == ["applies", "applies", "does-not-apply"], e["result"]
assert e["result"][1]["files"][0]["path"] == "src/b.c"
' <"$tmp/j"; then echo "ok: --json of a series: an array, up to the one that does not apply"
else echo "FAIL: --json of a series (exit $rc): $(cat "$tmp/j")"; fail=1; fi
"$sbxrun" patch check --json --repo "$repo" "$tmp/good.diff" "$tmp/missing.diff" >"$tmp/j" 2>/dev/null; rc=$?
if [ $rc -eq 2 ] && python3 -c '
import json, sys
e = json.load(sys.stdin)  # one envelope: the error, not the array as well
assert e["exitCode"] == 2 and "error" in e and "result" not in e, e
' <"$tmp/j"; then echo "ok: --json of a series with a missing file: one error envelope"
else echo "FAIL: --json of a series with a missing file (exit $rc): $(cat "$tmp/j")"; fail=1; fi

# Usage and input errors: 2, saying what is wrong.
expect 2 "" "needs a patch FILE" check --repo "$repo"
expect 2 "" "needs --repo" check "$tmp/good.diff"
expect 2 "" "unknown option '--frobnicate'" check --frobnicate --repo "$repo" "$tmp/good.diff"
expect 2 "" "unknown option '-x'" check -x --repo "$repo" "$tmp/good.diff"
expect 2 "" "option '--base' needs a value" check --repo "$repo" "$tmp/good.diff" --base
expect 2 "" "standard input (-) can be read once, not 2 times" check --repo "$repo" - -
expect 2 "" "$tmp/nope" check --repo "$tmp/nope" "$tmp/good.diff"
expect 2 "" "no-such-rev" check --repo "$repo" --base no-such-rev "$tmp/good.diff"
expect 2 "" "$tmp/missing.diff" check --repo "$repo" "$tmp/missing.diff"
# With --json a usage error is the error object, the message as on stderr.
for args in "check --json --repo $repo $tmp/missing.diff" "check --json --frobnicate --repo $repo $tmp/good.diff" \
            "check --frobnicate --json --repo $repo $tmp/good.diff" "check --json $tmp/good.diff"; do
  "$sbxrun" patch $args >"$tmp/out" 2>/dev/null; rc=$?
  if [ $rc -eq 2 ] && python3 -c '
import json, sys
e = json.load(sys.stdin)
assert list(e) == ["sbxrun", "ok", "exitCode", "error"], list(e)
assert e["sbxrun"] == "patch" and e["ok"] is False and e["exitCode"] == 2, e
assert e["error"]["status"] == "SBX_E_INVALID_ARG" and e["error"]["what"] == "usage" and e["error"]["message"], e
' <"$tmp/out"; then echo "ok: --json usage error: $args"
  else echo "FAIL: --json usage error ($args): exit $rc: $(cat "$tmp/out")"; fail=1; fi
done
expect 2 "" "unknown subcommand 'apply'" apply --repo "$repo" "$tmp/good.diff"
expect 2 "" "which subcommand? (check)"
expect 0 "usage: sbxrun patch check" "" --help
expect 0 "usage: sbxrun patch check" "" check -h
expect 0 "usage: sbxrun patch check" "" check --help
"$sbxrun" help patch | grep -q "usage: sbxrun patch check" && echo "ok: sbxrun help patch" ||
  { echo "FAIL: sbxrun help patch"; fail=1; }
"$sbxrun" --help | grep -q "^  patch " && echo "ok: patch in sbxrun --help" ||
  { echo "FAIL: patch is not in sbxrun --help"; fail=1; }
exit $fail
