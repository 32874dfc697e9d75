# SPDX-License-Identifier: MIT
# bash completion for sbxrun. Installed as
# $datadir/bash-completion/completions/sbxrun (tools/sbxrun/meson.build).
#
# Nothing here lists sbxrun's commands or options: they are read, at each
# completion, from the program being completed ("sbxrun help" for the
# commands, "sbxrun CMD --help" for a command's second-level subcommands,
# options and their arguments), so the completion follows the program it
# runs. Options taking FILE or DIR complete paths; words after "--" (the
# program of exec and policy check, and its arguments) and other positional
# arguments get bash's default completion.

# _sbxrun_help_parse MODE WANT: parse a help text on stdin (see the awk
# program's header comment; the zsh completion has the same program).
_sbxrun_help_parse()
{
    awk -v mode="$1" -v want="${2-}" '
    # sbxrun help parser, shared by the bash and zsh completions: keep both copies
    # the same (tests/scripts/check-completion.sh compares them). Input: the text
    # of "sbxrun help" or "sbxrun CMD --help". mode=cmds: the names under
    # "commands:". mode=subs: the second-level subcommands, the lowercase word
    # after "sbxrun CMD" in the usage lines. mode=opts: the long options of the
    # subcommand want ("" when CMD has none), one per line as OPTION TAB METAVAR
    # TAB DESCRIPTION, from its usage lines and from the option rows (indented
    # lines that start with "-") of the blocks that apply to it: "WANT options:"
    # and the common ones. Options that prose merely mentions are not taken.
    function add(o, m, d) {
      if (!(o in seen)) { seen[o] = 1; order[++n] = o; meta[o] = m; desc[o] = d; return }
      if (meta[o] == "") meta[o] = m
      if (desc[o] == "") desc[o] = d
    }
    function scan(s, row,    done, pre, tok, rest, m, d) {
      done = ""
      while (match(s, /--[a-z0-9][a-z0-9-]*/)) {
        pre = done substr(s, 1, RSTART - 1)
        tok = substr(s, RSTART, RLENGTH)
        rest = substr(s, RSTART + RLENGTH)
        done = pre tok
        s = rest
        if (substr(pre, length(pre), 1) ~ /[A-Za-z0-9_-]/) continue
        if (row && pre !~ /^[ \t]*$/ && pre !~ /[,;] $/) continue
        m = ""
        if (match(rest, /^[ =][A-Z][A-Z0-9_]*/)) m = substr(rest, 2, RLENGTH - 1)
        d = ""
        if (row && pre ~ /^[ \t]*$/) {
          d = rest
          if (m != "" && match(d, /^[ =][^ \t]*/)) d = substr(d, RLENGTH + 1)
          sub(/^[ \t]+/, "", d)
          if (d ~ /^[,;-]/) d = ""
        }
        add(tok, m, d)
      }
    }
    BEGIN { scope = "*"; state = 0; cursub = "" }
    state == 0 && /^usage:/ { state = 1; sub(/^usage:/, "") }
    state == 1 {
      if ($0 ~ /^[ \t]*$/) { state = 2; next }
      if ($0 ~ /^[ \t]*sbxrun[ \t]/) {
        line = $0
        sub(/^[ \t]+/, "", line)
        nw = split(line, w, /[ \t]+/)
        cursub = (nw >= 3 && w[3] ~ /^[a-z][a-z0-9-]*$/) ? w[3] : ""
        if (cursub != "" && !(cursub in subs)) { subs[cursub] = 1; suborder[++nsubs] = cursub }
      }
      if (mode == "opts" && cursub == want) scan($0, 0)
      next
    }
    mode == "cmds" && /^commands:/ { incmds = 1; next }
    mode == "cmds" && incmds {
      if ($0 !~ /^[ \t]+[a-z]/) { incmds = 0; next }
      line = $0
      sub(/^[ \t]+/, "", line)
      name = line
      sub(/[ \t].*$/, "", name)
      d = substr(line, length(name) + 1)
      sub(/^[ \t]+/, "", d)
      if (name ~ /^[a-z][a-z0-9._-]*$/) print name "\t" d
      next
    }
    state == 2 {
      if ($0 ~ /^[ \t]*$/) { scope = "*"; next }
      if ($0 ~ /^[^ \t]/) {
        if ($0 ~ /^([a-z][a-z0-9-]* )?options:[ \t]*$/) {
          w0 = $0
          sub(/ *options:.*$/, "", w0)
          scope = (w0 in subs) ? w0 : "*"
        } else if (match($0, /^[a-z][a-z0-9-]*[ \t][ \t]/)) {
          w0 = substr($0, 1, RLENGTH)
          sub(/[ \t]+$/, "", w0)
          if (w0 in subs) scope = w0
        }
        next
      }
      if (mode == "opts" && (scope == "*" || scope == want) && $0 ~ /^[ \t]+-/) scan($0, 1)
    }
    END {
      if (mode == "subs") for (i = 1; i <= nsubs; i++) print suborder[i]
      if (mode == "opts") for (i = 1; i <= n; i++) print order[i] "\t" meta[order[i]] "\t" desc[order[i]]
    }
'
}

# _sbxrun_ask PROG ARGS...: PROG's output, nothing on stderr, no stdin, and
# at most a few seconds when timeout(1) is there.
_sbxrun_ask()
{
    local prog=$1
    shift
    if type -P timeout >/dev/null 2>&1; then
        timeout 5 "$prog" "$@" 2>/dev/null </dev/null
    else
        "$prog" "$@" 2>/dev/null </dev/null
    fi
}

# _sbxrun_paths f|d: complete the current word as a file (or directory).
_sbxrun_paths()
{
    if declare -F _filedir >/dev/null 2>&1; then
        if [[ $1 == d ]]; then _filedir -d; else _filedir; fi
        return
    fi
    local IFS=$'\n'
    if [[ $1 == d ]]; then
        COMPREPLY=($(compgen -d -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
    compopt -o filenames 2>/dev/null
}

# _sbxrun_top: read "sbxrun help" once into _sbxrun's top (the commands,
# and the options that go before one: the global options, --help,
# --version) and topmetas (their metavars). Called from _sbxrun, whose
# locals prog, top and topmetas it sets.
_sbxrun_top()
{
    local w meta line
    [[ -n $top ]] && return 0
    top=$(_sbxrun_ask "$prog" help) || true
    top=${top:-$'\n'}
    while IFS=$'\t' read -r w meta line; do
        [[ -n $w ]] && topmetas[$w]=$meta
    done < <(printf '%s\n' "$top" | _sbxrun_help_parse opts '')
}

# _sbxrun_value_of: the option whose value the current word is ("--opt
# VALUE", or "--opt=VALUE", which bash splits into "--opt" "=" "VALUE"), or
# nothing. Sets opt and may empty cur.
_sbxrun_value_of()
{
    opt=
    if [[ $cur == = && $prev == --* ]]; then
        opt=$prev
        cur=
    elif [[ $prev == = ]] && (( COMP_CWORD >= 2 )) && [[ ${COMP_WORDS[COMP_CWORD-2]-} == --* ]]; then
        opt=${COMP_WORDS[COMP_CWORD-2]}
    elif [[ $prev == --* && $cur != -* ]]; then
        opt=$prev
    fi
}

# _sbxrun_complete_value META: complete the value of an option whose
# metavar is META: paths for FILE and DIR, nothing for other values.
_sbxrun_complete_value()
{
    case $1 in
    DIR | *DIR) _sbxrun_paths d ;;
    FILE | *FILE | PATH | *PATH) _sbxrun_paths f ;;
    *) compopt +o default +o bashdefault 2>/dev/null ;; # a value: nothing to offer
    esac
}

_sbxrun()
{
    local cur=${COMP_WORDS[COMP_CWORD]-} prev= prog=${COMP_WORDS[0]-}
    local cmd= sub= cmdi=0 i w help= top= subs opt meta line
    local -a words=()
    local -A metas=() topmetas=()
    COMPREPLY=()
    (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]-}

    # The program as typed (a leading ~/ expanded); nothing when it cannot run.
    [[ $prog == '~/'* ]] && prog=$HOME/${prog#'~/'}
    if [[ $prog == */* ]]; then
        [[ -x $prog && ! -d $prog ]] || return 0
    else
        type -P -- "$prog" >/dev/null 2>&1 || return 0
    fi

    # The command: the first word that is not an option or the value of a
    # global option before it. Everything after "--" is the program run in
    # the sandbox and its arguments: nothing of sbxrun's to offer.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]-}
        [[ $w == -- ]] && return 0
        [[ -n $cmd ]] && continue
        if [[ $w != -* ]]; then
            cmd=$w
            cmdi=$i
            continue
        fi
        [[ $w == --* && $w != *=* ]] || continue
        _sbxrun_top
        [[ -n ${topmetas[$w]-} ]] || continue
        # Its value: the next word, or "=" and the word after it; bash
        # splits a value at ":" and "=" too (unix:/path, https://...).
        ((i++))
        [[ ${COMP_WORDS[i]-} == = ]] && ((i++))
        while ((i + 2 < COMP_CWORD)) && [[ ${COMP_WORDS[i+1]-} == ':' || ${COMP_WORDS[i+1]-} == '=' ]]; do
            ((i += 2))
        done
    done

    _sbxrun_value_of
    if [[ -z $cmd ]]; then
        _sbxrun_top
        if [[ -n $opt && -n ${topmetas[$opt]-} ]]; then
            _sbxrun_complete_value "${topmetas[$opt]}"
            return 0
        fi
        if [[ $cur == -* ]]; then
            while IFS=$'\t' read -r w meta line; do words+=("$w"); done \
                < <(printf '%s\n' "$top" | _sbxrun_help_parse opts '')
        else
            while IFS=$'\t' read -r w line; do words+=("$w"); done \
                < <(printf '%s\n' "$top" | _sbxrun_help_parse cmds '')
        fi
        COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
        return 0
    fi

    if [[ $cmd == help ]]; then
        (( COMP_CWORD == cmdi + 1 )) || return 0
        _sbxrun_top
        while IFS=$'\t' read -r w line; do words+=("$w"); done \
            < <(printf '%s\n' "$top" | _sbxrun_help_parse cmds '')
        COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
        return 0
    fi

    help=$(_sbxrun_ask "$prog" "$cmd" --help) || true
    [[ -n $help ]] || return 0

    # Second-level subcommands (sandbox create, transcript show, ...): the
    # word right after the command.
    subs=$(printf '%s\n' "$help" | _sbxrun_help_parse subs '')
    if [[ -n $subs ]]; then
        if (( COMP_CWORD == cmdi + 1 )); then
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "--help" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "$subs" -- "$cur"))
            fi
            return 0
        fi
        sub=${COMP_WORDS[cmdi+1]-}
    fi

    while IFS=$'\t' read -r w meta line; do
        [[ -n $w ]] || continue
        words+=("$w")
        metas[$w]=$meta
    done < <(printf '%s\n' "$help" | _sbxrun_help_parse opts "$sub")

    if [[ -n $opt && -n ${metas[$opt]-} ]]; then
        _sbxrun_complete_value "${metas[$opt]}"
        return 0
    fi

    if [[ $cur == -* ]]; then
        [[ " ${words[*]} " == *" --help "* ]] || words+=(--help)
        COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
        return 0
    fi
    # A positional argument (DIR, FILE, LOCAL, ...): bash's default.
    return 0
}

complete -o bashdefault -o default -F _sbxrun sbxrun
