#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The zsh completion of sbxrun (tools/sbxrun/completion/_sbxrun): it loads
# with `autoload -U compinit; compinit` and defines _sbxrun for sbxrun,
# without a word on stderr; then real completions in an interactive zsh on a
# pseudo-terminal (zsh/zpty), whose matches are recorded by a compadd
# wrapper. Skipped (77) without zsh (Debian package: zsh).
#   check-completion-zsh.sh SBXRUN SRCDIR
set -u
[ $# -eq 2 ] || { echo "usage: $0 SBXRUN SRCDIR" >&2; exit 2; }
command -v zsh >/dev/null || { echo "SKIP: no zsh (apt-get install zsh)"; exit 77; }
sbxrun=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# compinit finds the file in $fpath, as in a user's shell. -D: no dump file,
# -u: no complaint about the directory's owner.
mkdir "$tmp/fpath" "$tmp/home"
cp "$src/tools/sbxrun/completion/_sbxrun" "$tmp/fpath/"
out=$(HOME=$tmp/home zsh -f -c '
  fpath=("$1" $fpath)
  autoload -U compinit && compinit -u -D || exit 3
  print -r -- "comps[sbxrun]=${_comps[sbxrun]-}"
  (( $+functions[_sbxrun] )) && print -r -- "_sbxrun defined"
  autoload +X _sbxrun && print -r -- "_sbxrun loads"
' zsh "$tmp/fpath" 2>"$tmp/stderr")
rc=$?
[ $rc -eq 0 ] || fail "zsh -f with compinit exited $rc: $out"
[ -s "$tmp/stderr" ] && fail "compinit or loading _sbxrun wrote on stderr: $(head -c 500 "$tmp/stderr")"
grep -qx 'comps\[sbxrun\]=_sbxrun' <<<"$out" || fail "compinit does not map sbxrun to _sbxrun: $out"
grep -qx '_sbxrun defined' <<<"$out" || fail "_sbxrun is not defined after compinit: $out"
grep -qx '_sbxrun loads' <<<"$out" || fail "autoload +X _sbxrun failed: $out"
[ $failures -eq 0 ] && echo "ok: compinit loads _sbxrun for sbxrun, nothing on stderr"

# Sourced, the file only defines its functions (it completes when compinit's
# autoload runs it); its parser reads the commands from the help.
out=$(zsh -f -c 'source "$1" && _sbxrun_help_parse cmds "" < <("$2" help) | cut -f1 | tr "\n" " "' zsh \
  "$src/tools/sbxrun/completion/_sbxrun" "$sbxrun" 2>"$tmp/stderr")
[ -s "$tmp/stderr" ] && fail "sourcing _sbxrun wrote on stderr: $(head -c 500 "$tmp/stderr")"
if [[ " $out " == *" exec "* && " $out " == *" sandbox "* ]]; then
  echo "ok: sourced, the parser lists the commands: $out"
else
  fail "sourced, the parser listed: '$out'"
fi

# Completions in an interactive zsh. Each case types a line and TAB, waits
# for the widget to say it ended, and clears the line; the compadd wrapper
# appends every match to the log.
if ! zsh -f -c 'zmodload zsh/zpty' 2>/dev/null; then
  echo "SKIP (part): no zsh/zpty module, interactive completions not checked"
else
  mkdir -p "$tmp/cwd/a dir" && : >"$tmp/cwd/a file.json"
  cat >"$tmp/drive.zsh" <<'EOF'
zmodload zsh/zpty
local log=$1 err=$2 fp=$3 bindir=$4 cwd=$5
shift 5
zpty -b z "cd ${(q)cwd} && HOME=${(q)cwd} PATH=${(q)bindir}:\$PATH zsh -f -i 2>${(q)err}"
zpty -w z "PS1='> '; fpath=(${(q)fp} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd() { local -a m; builtin compadd -O m \"\$@\"; (( \$#m )) && print -rl -- \$m >>${(q)log}; builtin compadd \"\$@\"; }"
zpty -w z "_t_main() { _main_complete; print -r -- '<END>' >>${(q)log}; }; zle -C t-complete complete-word _t_main; bindkey '^I' t-complete"
local line i
for line in "$@"; do
  : >$log
  zpty -n -w z "$line"$'\t'
  for (( i = 0; i < 200; i++ )); do grep -q '<END>' $log && break; sleep 0.05; done
  grep -q '<END>' $log || print -r -- "<TIMEOUT>" >>$log
  zpty -n -w z $'\x15'
  print -r -- "== $line"
  # Matches as compadd got them, some quoted for the command line (a\ dir).
  grep -v '<END>' $log | sed 's/\\\(.\)/\1/g' | sort -u
done
zpty -d z
EOF
  cases=('sbxrun ex' 'sbxrun ' 'sbxrun sandbox ' 'sbxrun policy check --j' 'sbxrun exec --'
         'sbxrun sandbox list --' 'sbxrun exec -- ls --' 'sbxrun exec --timeout ' 'sbxrun patch check --repo '
         'sbxrun exec --policy a' 'sbxrun verify --ig' 'sbxrun --' 'sbxrun --endpoint unix:/x ex')
  zsh -f "$tmp/drive.zsh" "$tmp/log" "$tmp/stderr" "$tmp/fpath" "$(dirname "$sbxrun")" "$tmp/cwd" "${cases[@]}" \
    >"$tmp/results" 2>&1
  # got LINE: the matches of that case, space-separated.
  got() { awk -v c="== $1" '$0 == c { on = 1; next } /^== / { on = 0 } on' "$tmp/results" | tr '\n' ' ' | sed 's/ $//'; }
  # check LINE EXPECTED: exactly these matches (sorted, space-separated).
  check() {
    local g
    g=$(got "$1")
    if [ "$g" = "$2" ]; then echo "ok: zsh '$1<TAB>': [$g]"; else fail "zsh '$1<TAB>': [$g], expected [$2]"; fi
  }
  # has LINE WORDS...: these are among the matches.
  has() {
    local l=$1 g w
    shift
    g=" $(got "$l") "
    for w in "$@"; do [[ $g == *" $w "* ]] || fail "zsh '$l<TAB>': no '$w' in [$g]"; done
    echo "ok: zsh '$l<TAB>' has $*"
  }
  grep -q '<TIMEOUT>' "$tmp/results" && fail "a zsh completion did not end: $(cat "$tmp/results")"
  commands=$("$sbxrun" help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' | sort | tr '\n' ' ' | sed 's/ $//')
  check 'sbxrun ex' 'exec'
  check 'sbxrun ' "$commands"
  has 'sbxrun sandbox ' create list get stop
  check 'sbxrun policy check --j' '--job --json'
  has 'sbxrun exec --' --sandbox --cwd --env --timeout --json --endpoint --help
  has 'sbxrun sandbox list --' --limit --json
  case " $(got 'sbxrun sandbox list --') " in *" --vcpus "*) fail "zsh: sandbox list offers --vcpus" ;; esac
  check 'sbxrun exec -- ls --' ''
  check 'sbxrun exec --timeout ' ''
  check 'sbxrun patch check --repo ' 'a dir'
  check 'sbxrun exec --policy a' 'a dir a file.json'
  check 'sbxrun verify --ig' ''
  has 'sbxrun --' --help --version
  if "$sbxrun" help | grep -qE '^ +--endpoint URL'; then
    check 'sbxrun --endpoint unix:/x ex' 'exec'
  fi
  [ -s "$tmp/stderr" ] && fail "the interactive zsh wrote on stderr: $(head -c 1000 "$tmp/stderr")"
fi

if [ "$failures" -ne 0 ]; then
  echo "FAILED: $failures check(s)"
  exit 1
fi
echo "OK: zsh completion"
