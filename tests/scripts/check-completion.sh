#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completion of sbxrun (tools/sbxrun/completion/sbxrun.bash), in a
# bash --norc without bash-completion: COMP_WORDS/COMP_CWORD as bash sets
# them, then COMPREPLY. Its words come from the program's own help, so the
# expected words are taken from that help here too (a few fixed ones are
# checked besides, so that an empty help cannot pass). Also: the awk parser
# is the same in the bash and zsh files, and meson installs both files.
#   check-completion.sh SBXRUN SRCDIR BUILDDIR
set -u
[ $# -eq 3 ] || { echo "usage: $0 SBXRUN SRCDIR BUILDDIR" >&2; exit 2; }
sbxrun=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd) build=$3
comp=$src/tools/sbxrun/completion
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cwd" # where the completions run: the paths they offer
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The expected words, read from the help with sed/grep (not the completion's
# awk): the commands under "commands:", a command's second-level
# subcommands from its usage lines.
commands=$("$sbxrun" help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' | sort)
[ -n "$commands" ] || { echo "FAIL: no commands in 'sbxrun help'"; exit 1; }
sandbox_subs=$("$sbxrun" sandbox --help | sed -n '/^usage:/,/^$/s/^\(usage:\)\{0,1\} *sbxrun sandbox \([a-z][a-z0-9-]*\).*/\2/p' | sort -u)

# Run the completion for one command line in a fresh bash --norc, the last
# word being the one completed. Prints COMPREPLY one per line (sorted), and
# what the completion wrote on stderr to $tmp/stderr. COMP_LINE and
# COMP_POINT are set too, as bash does.
complete_words() {
  local dir=$1
  shift
  (cd "$dir" && PATH="$(dirname "$sbxrun"):$PATH" bash --norc --noprofile -c '
    source "$1" || exit 3
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(( $# - 1 ))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    set -u
    _sbxrun || exit 4
    printf "%s\n" "${COMPREPLY[@]}"
  ' completion "$comp/sbxrun.bash" "$@" 2>"$tmp/stderr") | sed '/^$/d' | sort
}

# expect NAME WANT WORDS...: COMPREPLY is exactly WANT (newline-separated, sorted).
expect() {
  local name=$1 want=$2 got
  shift 2
  got=$(complete_words "$tmp/cwd" "$@")
  if [ -s "$tmp/stderr" ]; then
    fail "$name: the completion wrote on stderr: $(head -c 500 "$tmp/stderr")"
  fi
  if [ "$got" != "$want" ]; then
    fail "$name: COMPREPLY is [$(echo $got)], expected [$(echo $want)]"
  else
    echo "ok: $name: [$(echo $got)]"
  fi
}

# expect_has NAME 'MUST...' 'MUSTNOT...' WORDS...: COMPREPLY has every word
# of MUST, none of MUSTNOT, and only options that the command's help shows.
expect_has() {
  local name=$1 must=$2 mustnot=$3 got w help
  shift 3
  got=$(complete_words "$tmp/cwd" "$@")
  [ -s "$tmp/stderr" ] && fail "$name: the completion wrote on stderr: $(head -c 500 "$tmp/stderr")"
  for w in $must; do
    grep -qxF -- "$w" <<<"$got" || fail "$name: '$w' is not offered (got: $(echo $got))"
  done
  for w in $mustnot; do
    grep -qxF -- "$w" <<<"$got" && fail "$name: '$w' is offered (got: $(echo $got))"
  done
  help=$("$sbxrun" "$2" --help 2>&1)
  for w in $got; do
    case $w in
    --help) ;;
    --*) grep -qE -- "(^|[^a-z0-9-])$w([^a-z0-9-]|\$)" <<<"$help" || fail "$name: '$w' is not in 'sbxrun $2 --help'" ;;
    *) fail "$name: '$w' is not an option" ;;
    esac
  done
  echo "ok: $name: [$(echo $got)]"
}

# The cases of the request.
expect 'sbxrun <TAB>' "$commands" sbxrun ''
for w in verify exec sandbox cp policy transcript patch help version; do
  grep -qx "$w" <<<"$commands" || fail "'sbxrun help' does not list '$w'"
done
expect 'sbxrun ex<TAB>' "exec" sbxrun ex
# The options the help lists for exec: its usage lines and option rows.
exec_opts=$( { "$sbxrun" exec --help | sed -n '/^usage:/,/^$/p' | grep -oE -- '--[a-z0-9][a-z0-9-]*'
               "$sbxrun" exec --help | grep -oE -- '^ +--[a-z0-9][a-z0-9-]*' | tr -d ' '
               echo --help; } | sort -u)
expect 'sbxrun exec --<TAB>' "$exec_opts" sbxrun exec --
expect_has 'sbxrun exec --<TAB> (fixed words)' '--sandbox --cwd --env --timeout --json --endpoint --help' '--' sbxrun exec --
[ -n "$sandbox_subs" ] || fail "no subcommands in 'sbxrun sandbox --help'"
expect 'sbxrun sandbox <TAB>' "$sandbox_subs" sbxrun sandbox ''
for w in create list get stop; do
  grep -qx "$w" <<<"$sandbox_subs" || fail "'sbxrun sandbox --help' does not list '$w'"
done
expect 'sbxrun policy check --j<TAB>' "$(printf '%s\n' --job --json)" sbxrun policy check --j

# More: per second-level subcommand, the top level, help, after "--",
# option arguments, an unknown or missing program.
expect_has 'sbxrun sandbox create --<TAB>' '--runtime --vcpus --git --depth --json' '--limit --expiration' sbxrun sandbox create --
expect_has 'sbxrun sandbox list --<TAB>' '--limit --json' '--vcpus --expiration' sbxrun sandbox list --
expect_has 'sbxrun transcript verify --<TAB>' '--expect --allow-incomplete' '--step' sbxrun transcript verify --
expect 'sbxrun transcript <TAB>' "$("$sbxrun" transcript --help | sed -n '/^usage:/,/^$/s/^\(usage:\)\{0,1\} *sbxrun transcript \([a-z][a-z0-9-]*\).*/\2/p' | sort -u)" sbxrun transcript ''
expect 'sbxrun sandbox cr<TAB>' "create" sbxrun sandbox cr
expect 'sbxrun help <TAB>' "$commands" sbxrun help ''
expect 'sbxrun help sandbox <TAB>' "" sbxrun help sandbox ''
# Before the command: what "sbxrun help" lists (its usage line, its option
# rows: --help, --version and, when it has them, the global options).
top_opts=$( { "$sbxrun" help | sed -n '/^usage:/,/^$/p' | grep -oE -- '--[a-z0-9][a-z0-9-]*'
              "$sbxrun" help | grep -E '^ +--' | grep -oE -- '--[a-z0-9][a-z0-9-]*'; } | sort -u)
expect 'sbxrun --<TAB>' "$top_opts" sbxrun --
for w in --help --version; do
  grep -qx -- "$w" <<<"$top_opts" || fail "'sbxrun help' does not list '$w'"
done
# A global option's value before the command is not the command (bash
# splits unix:/x into unix : /x, and --endpoint=... at the "=").
if "$sbxrun" help | grep -qE '^ +--endpoint URL'; then
  expect 'sbxrun --endpoint unix:/x ex<TAB>' "exec" sbxrun --endpoint unix : /x ex
  expect 'sbxrun --endpoint=unix:/x sandbox <TAB>' "$sandbox_subs" sbxrun --endpoint = unix : /x sandbox ''
  expect 'sbxrun --endpoint <TAB>' "" sbxrun --endpoint ''
else
  echo "skip: 'sbxrun help' lists no global --endpoint URL"
fi
# Options that prose in the help mentions but that are not sbxrun's: npm's
# --ignore-scripts (verify), git apply's --check (patch check).
expect 'sbxrun verify --ig<TAB>' "" sbxrun verify --ig
expect 'sbxrun patch check --ch<TAB>' "" sbxrun patch check --ch
expect 'sbxrun exec -- ls --<TAB>' "" sbxrun exec -- ls --
expect 'sbxrun policy check -- cat --j<TAB>' "" sbxrun policy check -- cat --j
expect 'sbxrun exec --timeout <TAB>' "" sbxrun exec --timeout ''
expect 'sbxrun nosuchcommand --<TAB>' "" sbxrun nosuchcommand --
expect 'program not found' "" /nonexistent/sbxrun ''
expect 'absolute path to the program' "exec" "$sbxrun" ex

# FILE and DIR arguments complete paths, names with spaces and quotes included.
mkdir -p "$tmp/cwd/a dir" "$tmp/cwd/b'dir"
: >"$tmp/cwd/a file.json"
: >"$tmp/cwd/b\"file"
expect 'sbxrun exec --policy <TAB> (FILE)' "$(printf '%s\n' "a dir" "a file.json" "b\"file" "b'dir" | sort)" sbxrun exec --policy ''
expect 'sbxrun exec --policy a<TAB>' "$(printf '%s\n' "a dir" "a file.json" | sort)" sbxrun exec --policy a
expect 'sbxrun patch check --repo <TAB> (DIR)' "$(printf '%s\n' "a dir" "b'dir" | sort)" sbxrun patch check --repo ''
if "$sbxrun" help | grep -qE '^ +--.*--token-file FILE'; then
  expect 'sbxrun --token-file a<TAB> (global, FILE)' "$(printf '%s\n' "a dir" "a file.json" | sort)" sbxrun --token-file a
fi
expect 'sbxrun exec --transcript=a<TAB>' "$(printf '%s\n' "a dir" "a file.json" | sort)" sbxrun exec --transcript = a

# The awk program is the same in both files.
extract_awk() { sed -n '/awk -v mode=/,/^'"'"'$/p' "$1"; }
if [ -z "$(extract_awk "$comp/sbxrun.bash")" ]; then
  fail "no awk program found in sbxrun.bash"
elif ! diff <(extract_awk "$comp/sbxrun.bash") <(extract_awk "$comp/_sbxrun") >"$tmp/awk.diff"; then
  fail "the awk programs of sbxrun.bash and _sbxrun differ:"; cat "$tmp/awk.diff"
else
  echo "ok: the bash and zsh files have the same help parser"
fi

# meson installs both files where bash-completion and Debian's zsh look.
installed=$build/meson-info/intro-installed.json
if [ ! -f "$installed" ]; then
  fail "no $installed"
else
  grep -qE '"[^"]*/tools/sbxrun/completion/sbxrun\.bash": "[^"]*/bash-completion/completions/sbxrun"' "$installed" ||
    fail "meson does not install completion/sbxrun.bash as .../bash-completion/completions/sbxrun"
  grep -qE '"[^"]*/tools/sbxrun/completion/_sbxrun": "[^"]*/zsh/site-functions/_sbxrun"' "$installed" ||
    fail "meson does not install completion/_sbxrun as .../zsh/site-functions/_sbxrun"
  echo "ok: install list has $(grep -oE '"[^"]*/(bash-completion/completions/sbxrun|zsh/site-functions/_sbxrun)"' "$installed" | tr '\n' ' ')"
fi

if [ "$failures" -ne 0 ]; then
  echo "FAILED: $failures check(s)"
  exit 1
fi
echo "OK: bash completion"
