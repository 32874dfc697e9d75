#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sbxrun's options three ways: what each (sub)command's --help lists, what
its section of doc/man/sbxrun.1 lists, and what the program accepts must
agree. Prints every disagreement (subcommand, option, where it is and is
not) and fails when there is one.

    check-cli-help-man.py SBXRUN SRCDIR

The units compared are the commands of `sbxrun help` and, for a command
whose usage lines name second-level subcommands (`sbxrun sandbox create`,
`sbxrun transcript verify`, `sbxrun policy check`), each of those.

help: the long options of the unit's usage lines, and of the option rows
  (indented lines starting with "-": the option, options after ", " or "; "
  on that row) of the blocks that apply to it ("create options:", a
  transcript-style "show    ..." paragraph, and the common ones). Options
  only mentioned in prose (npm's --ignore-scripts, `git apply --check`) are
  not listed options.
man: the options in the unit's item of the COMMANDS section (an item is a
  .TP whose heading starts with the unit's words; `cp` has two), plus those
  of COMMON OPTIONS for the commands that talk to sandboxes ("The commands
  that talk to sandboxes take": those whose help has --endpoint, today
  verify, exec, sandbox, snapshot, cp). A few options of other programs that
  the man page mentions are left out (FOREIGN).
accepted: sbxrun is run with the option (and a dummy value when the help
  shows a metavar), with an endpoint that cannot answer (--endpoint, where
  the unit takes it, and SBXRUN_ENDPOINT) under timeout 10, in a scratch
  directory; it is accepted unless stderr (before any usage text) says that
  option (or the longer one getopt_long took it for) is unknown,
  unrecognized, invalid, ambiguous, an option of another subcommand, or an
  unexpected argument. Every option named anywhere (any help, the man page,
  the long-option tables of tools/sbxrun/*.[ch]) is tried on every unit, so
  an option accepted but documented nowhere shows; an undocumented one that
  is only the start of a longer option is not reported (getopt_long takes
  unique starts). An option no sbxrun has is tried too: a unit that does
  not reject it is reported, since its probes would mean nothing.
The options that go before the command are a unit of their own: `sbxrun
help`'s usage line and option rows; the man page's SYNOPSIS (and any
section titled GLOBAL ...); `sbxrun OPTION [VALUE] version`. Such a global
option is compared for a command only where its help or man item lists it;
when `sbxrun help` says they also go "after the command", every command
must accept them there.
--help is left out of the comparison; each unit's --help must work (exit
0, a usage text), since the help is what the comparison reads.
CHECK_VERBOSE=1 in the environment prints every probe and its verdict.
"""
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Options of other programs that the man page mentions: npm's (verify passes
# it to the install), git apply's and git patch-id's (patch check says it
# gives their verdict and id).
FOREIGN = {"--ignore-scripts", "--check", "--stable"}
NOT_COMPARED = {"--help"}
OPT_RE = re.compile(r"(?<![A-Za-z0-9_-])--[a-z0-9][a-z0-9-]*")
TIMEOUT = 10


def run(argv, cwd=None, env=None, stdin=subprocess.DEVNULL):
    try:
        p = subprocess.run(["timeout", str(TIMEOUT)] + argv, cwd=cwd, env=env, stdin=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT + 5)
    except subprocess.TimeoutExpired:
        return 124, "", "(timed out)"
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


# The words of the commands and second-level subcommands (set in main):
# "--limit is for 'snapshot list'" names another one.
SUBCOMMAND_WORDS = set()
# The options that go before the command, as a unit of their own.
GLOBAL = ("(global options, before the command)", None)


def unit_name(cmd, sub):
    return cmd + (" " + sub if sub else "")


# ---- help ----------------------------------------------------------------

def help_commands(text):
    out, on = [], False
    for line in text.splitlines():
        if line.startswith("commands:"):
            on = True
            continue
        if on:
            m = re.match(r"^\s+([a-z][a-z0-9._-]*)(\s|$)", line)
            if not m:
                break
            out.append(m.group(1))
    return out


def scan_options(s, row):
    """(option, metavar) pairs of one line; row: an option row of a table."""
    out = []
    for m in OPT_RE.finditer(s):
        pre = s[:m.start()]
        if row and pre.strip() and not re.search(r"[,;] $", pre):
            continue
        rest = s[m.end():]
        mv = re.match(r"^[ =]([A-Z][A-Z0-9_]*)", rest)
        out.append((m.group(0), mv.group(1) if mv else ""))
    return out


def parse_help(text):
    """{sub or None: {option: metavar}} and {sub or None: [usage entry]}."""
    lines = text.splitlines()
    entries = []  # [sub, text]
    i = 0
    while i < len(lines) and not lines[i].startswith("usage:"):
        i += 1
    if i < len(lines):
        lines[i] = lines[i][len("usage:"):]
    while i < len(lines) and lines[i].strip():
        m = re.match(r"^\s*sbxrun\s+(\S+)(?:\s+(\S+))?", lines[i])
        if m:
            sub = m.group(2) if m.group(2) and re.fullmatch(r"[a-z][a-z0-9-]*", m.group(2)) else None
            entries.append([sub, lines[i]])
        elif entries:
            entries[-1][1] += " " + lines[i].strip()
        i += 1
    subs = []
    for sub, _ in entries:
        if sub and sub not in subs:
            subs.append(sub)
    units = subs or [None]
    opts = {u: {} for u in units}
    usage = {u: [t for s, t in entries if s == u] for u in units}

    def add(u, pairs):
        for o, mv in pairs:
            if not opts[u].get(o):
                opts[u][o] = mv

    for u in units:
        for t in usage[u]:
            add(u, scan_options(t, False))
    scope = "*"
    for line in lines[i:]:
        if not line.strip():
            scope = "*"
            continue
        if not line[0].isspace():
            m = re.match(r"^(?:([a-z][a-z0-9-]*) )?options:\s*$", line)
            if m:
                scope = m.group(1) if m.group(1) in subs else "*"
                continue
            m = re.match(r"^([a-z][a-z0-9-]*)\s\s", line)
            if m and m.group(1) in subs:
                scope = m.group(1)
            continue
        if re.match(r"^\s+-", line):
            pairs = scan_options(line, True)
            for u in units:
                if scope == "*" or scope == u:
                    add(u, pairs)
    return opts, usage


# ---- man -----------------------------------------------------------------

def man_text(raw):
    """troff source to plain text, enough to find the options in it."""
    out = []
    for line in raw.splitlines():
        if line.startswith('.\\"'):
            continue
        line = re.sub(r"^\.[A-Za-z]{1,2}\s?", "", line)
        line = line.replace('"', "")
        line = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", line)
        line = line.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
        out.append(line)
    return "\n".join(out)


def man_args(raw, opt):
    """Whether the man source shows a value after opt (an italic word)."""
    t = re.escape(opt.replace("-", "\\-"))
    return re.search(t + r"(?![a-z0-9\\-])(\\f[RBP])?\s*(\n\.(I|IR|RI)\s|\\fI| \\fI)", raw) is not None


def parse_man(path):
    raw = open(path, encoding="utf-8").read()
    sections, name, buf = {}, None, []
    for line in raw.splitlines():
        m = re.match(r"^\.SH\s+\"?([^\"]*)\"?", line)
        if m:
            if name:
                sections[name] = "\n".join(buf)
            name, buf = m.group(1).strip(), []
            continue
        buf.append(line)
    if name:
        sections[name] = "\n".join(buf)
    items = {}  # unit words -> raw text
    for part in re.split(r"^\.TP\s*$", sections.get("COMMANDS", ""), flags=re.M)[1:]:
        head = part.lstrip("\n").split("\n", 1)[0]
        head = re.sub(r"^\.B\s+", "", head)
        words = []
        for w in re.split(r"\s+", re.split(r"\\f|\[", head, 1)[0].strip()):
            if not re.fullmatch(r"[a-z][a-z0-9-]*", w):
                break
            words.append(w)
        if words:
            key = " ".join(words)
            items[key] = items.get(key, "") + "\n" + part
    common = set()
    for part in re.split(r"^\.TP\s*$", sections.get("COMMON OPTIONS", ""), flags=re.M)[1:]:
        head = man_text(part.lstrip("\n").split("\n", 1)[0])
        common.update(OPT_RE.findall(head))
    synopsis = set(OPT_RE.findall(man_text(sections.get("SYNOPSIS", ""))))
    for title, text in sections.items():
        if "GLOBAL" in title.upper():
            synopsis |= set(OPT_RE.findall(man_text(text)))
    return raw, items, common, synopsis


# ---- the program ---------------------------------------------------------

def rejects(stderr, opt, rc):
    """The line of stderr that says opt is not an option here, or None.
    Messages that name opt as unknown count whatever the exit status; those
    that say it is another subcommand's count with a usage error (exit 2),
    so that a warning about an accepted option is not taken for one."""
    # opt, or the longer option getopt_long took it for (a unique start)
    o = re.escape(opt) + r"[a-z0-9-]*(?![a-z0-9-])"
    q = r"['\"`\u2018]?"
    unknown = [
        r"(unrecognized|unknown|invalid)( global)?( or incomplete)? option:?\s*" + q + o,
        r"option\s*" + q + o + q + r"\s*is ambiguous",
        r"unexpected argument\s*" + q + o,
        r"unknown (sub)?command\s*" + q + o,
    ]
    # "option --vcpus belongs to another subcommand", "--json and --step
    # are options of show", "option --limit is for 'snapshot list'"; not
    # "--ref is for --repo" (it needs that option: a usage error, but the
    # option is known).
    other = "|".join(sorted((re.escape(w) for w in SUBCOMMAND_WORDS), key=len, reverse=True) +
                     ["another", "the other", "other"])
    elsewhere = [
        o + q + r"[^.;]*?\b(belongs to|(is|are)\s+(only\s+)?(an?\s+|the\s+)?(options?\s+)?(of|for))\s+"
        r"['\"`\u2018]?(" + other + r")\b",
    ]
    for line in stderr.splitlines():
        if re.match(r"^\s*usage:", line):
            break
        for p in unknown + (elsewhere if rc == 2 else []):
            if re.search(p, line, re.I):
                return line.strip()
    return None


def dummy(metavar, scratch):
    mv = metavar.upper()
    if ":" in mv:
        return "sbx_dummy:/tmp/x"
    if "DIR" in mv:
        return os.path.join(scratch, "dir")
    if "FILE" in mv or mv in ("LOCAL", "PATH"):
        return os.path.join(scratch, "file")
    if mv in ("PROGRAM",):
        return "true"
    if mv in ("MS", "N", "PORT", "DURATION"):
        return "1000"
    if "=" in metavar or mv in ("NAME", "KEY"):
        return "X=1"
    return "x"


def required_args(usage_entry, cmd, sub, scratch):
    """The words the unit needs besides its options, from its first usage
    line: required options with their value, positional arguments, "--"."""
    t = usage_entry
    t = re.sub(r"^\s*(usage:)?\s*sbxrun\s+" + re.escape(cmd) + (r"\s+" + re.escape(sub) if sub else ""), "", t)
    prev = None
    while prev != t:  # drop [optional] groups, nested too
        prev, t = t, re.sub(r"\[[^][]*\]", "", t)
    t = t.replace("...", " ")
    words, out, i = t.split(), [], 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and len(w) > 2:
            out.append(w)
            if i + 1 < len(words) and re.match(r"^[A-Z]", words[i + 1]):
                out.append(dummy(words[i + 1], scratch))
                i += 1
        elif w == "--":
            out.append(w)
        elif re.match(r"^[A-Z]", w):
            out.append(dummy(w, scratch))
        i += 1
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    sbxrun, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    problems = []  # (unit, text)
    notes = []

    rc, top, err = run([sbxrun, "help"])
    commands = help_commands(top)
    if rc != 0 or not commands:
        print("FAIL: `sbxrun help` exited %d and listed no commands: %s" % (rc, err.strip()))
        return 1

    helps, usages, arity = {}, {}, {}
    for cmd in commands:
        rc, out, err = run([sbxrun, cmd, "--help"])
        if rc != 0 or "usage:" not in out:
            first = (err.strip().splitlines() or ["(nothing on stderr)"])[0]
            problems.append((cmd, "`sbxrun %s --help` does not show its help (exit %d: %s)" % (cmd, rc, first)))
            helps[(cmd, None)], usages[(cmd, None)] = {}, []
            continue
        opts, usage = parse_help(out)
        for sub in opts:
            helps[(cmd, sub)], usages[(cmd, sub)] = opts[sub], usage[sub]
            if sub:
                rc2, out2, _ = run([sbxrun, cmd, sub, "--help"])
                if rc2 != 0 or "usage:" not in out2:
                    problems.append((unit_name(cmd, sub), "`sbxrun %s %s --help` does not show the help (exit %d)"
                                     % (cmd, sub, rc2)))
            for o, mv in opts[sub].items():
                if mv and not arity.get(o):
                    arity[o] = mv
    units = list(helps)
    for c, sub in units:
        SUBCOMMAND_WORDS.update(w for w in (c, sub) if w)
    # The options before the command: `sbxrun help`'s usage line and option
    # rows, the man page's SYNOPSIS (and a GLOBAL OPTIONS section, if any),
    # and what `sbxrun OPTION [VALUE] version` accepts.
    helps[GLOBAL] = parse_help(top)[0].get(None, {})
    usages[GLOBAL] = []
    for o, mv in helps[GLOBAL].items():
        if mv and not arity.get(o):
            arity[o] = mv
    global_opts = set(helps[GLOBAL]) - NOT_COMPARED - {"--version"}

    man_path = os.path.join(src, "doc", "man", "sbxrun.1")
    raw, items, common, man_global = parse_man(man_path)
    # The commands whose man item takes COMMON OPTIONS ("The commands that
    # talk to sandboxes take:"): those that connect to an endpoint.
    remote_commands = {c for (c, sub), o in helps.items() if "--endpoint" in o and (c, sub) != GLOBAL}
    mans = {GLOBAL: man_global - FOREIGN}
    for cmd, sub in units:
        key = unit_name(cmd, sub)
        if key not in items:
            problems.append((key, "no item for it in the man page's COMMANDS (sbxrun.1)"))
            mans[(cmd, sub)] = set()
            continue
        found = set(OPT_RE.findall(man_text(items[key])))
        if cmd in remote_commands:
            found |= common
        mans[(cmd, sub)] = found - FOREIGN
    units.append(GLOBAL)
    unit_keys = {unit_name(c, s) for c, s in units}
    for key in items:
        if key not in unit_keys:
            problems.append((key, "the man page has an item for it; `sbxrun help` and the usage lines do not"))
    for o in set().union(*mans.values()) if mans else set():
        if o not in arity and man_args(raw, o):
            arity[o] = "X"

    # Every option named anywhere, also in the sources' long-option tables.
    candidates = set()
    for d in list(helps.values()) + list(mans.values()):
        candidates |= set(d)
    for f in glob.glob(os.path.join(src, "tools", "sbxrun", "*.[ch]")):
        text = open(f, encoding="utf-8", errors="replace").read()
        for m in re.finditer(r'\{\s*"([a-z0-9][a-z0-9-]*)"\s*,\s*(no|required|optional)_argument', text):
            candidates.add("--" + m.group(1))
            if m.group(2) == "required" and not arity.get("--" + m.group(1)):
                arity["--" + m.group(1)] = "X"
    candidates -= NOT_COMPARED
    candidates.discard("--sbx-no-such-option")

    scratch = tempfile.mkdtemp(prefix="sbx-help-man-")
    os.mkdir(os.path.join(scratch, "dir"))
    os.mkdir(os.path.join(scratch, "cwd"))
    open(os.path.join(scratch, "file"), "w").close()
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("VERCEL_") or k.startswith("SBXRUN_"))}
    env.update(SBXRUN_ENDPOINT="unix:/nonexistent", SBXD="/nonexistent/sbxd", HOME=scratch)
    endpoint = ["--endpoint", "unix:/nonexistent"]

    def probe(unit, opt):
        cmd, sub = unit
        value = []
        if arity.get(opt):
            value = [endpoint[1] if opt == "--endpoint" else dummy(arity[opt], scratch)]
        if unit == GLOBAL:
            argv = [sbxrun, opt] + value + ["version"]
            rc, _, err = run(argv, cwd=os.path.join(scratch, "cwd"), env=env)
            return unit, opt, rejects(err, opt, rc), argv, rc
        argv = [sbxrun, cmd] + ([sub] if sub else []) + [opt] + value
        documented = set(helps[unit]) | mans[unit]
        if opt != "--endpoint" and "--endpoint" in documented:
            argv += endpoint
        if usages.get(unit):
            req = required_args(usages[unit][0], cmd, sub, scratch)
            # a required option that is the one tried has its value already
            if opt in req:
                k = req.index(opt)
                del req[k:k + (2 if k + 1 < len(req) and not req[k + 1].startswith("-") else 1)]
            argv += req
        rc, _, err = run(argv, cwd=os.path.join(scratch, "cwd"), env=env)
        return unit, opt, rejects(err, opt, rc), argv, rc

    accepted = {u: set() for u in units}
    why = {}
    # An option that no version of sbxrun has: each unit must say so, or its
    # "accepted" would mean nothing.
    bogus = "--sbx-no-such-option"
    jobs = [(u, o) for u in units for o in sorted(candidates) + [bogus]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, (os.cpu_count() or 2) * 2)) as ex:
        for unit, opt, line, argv, rc in ex.map(lambda j: probe(*j), jobs):
            if line is None:
                accepted[unit].add(opt)
            why[(unit, opt)] = (line, argv, rc)

    not_after = {o: [] for o in global_opts}  # global options a command rejects
    for unit in units:
        if bogus in accepted[unit]:
            line, argv, rc = why[(unit, bogus)]
            problems.append((unit_name(*unit), "cannot tell what it accepts: `%s` (exit %d) does not say %s is unknown"
                             % (" ".join(argv[1:]), rc, bogus)))
            continue
        h, m, a = set(helps[unit]) - NOT_COMPARED, mans[unit] - NOT_COMPARED, accepted[unit]
        if unit != GLOBAL:
            # A global option that neither the command's help nor its man
            # item lists is documented as a global one (compared there).
            for o in global_opts - h - m:
                if o not in a:
                    not_after[o].append(unit_name(*unit))
                a = a - {o}
        for opt in sorted(h | m | a):
            inh, inm, ina = opt in h, opt in m, opt in a
            if inh and inm and ina:
                continue
            # getopt_long takes a unique start of a longer option: an
            # option that is only a start of one this unit has is not known
            # to be accepted or not; undocumented, it is not reported.
            longer = sorted(x for x in candidates if x != opt and x.startswith(opt))
            if ina and longer and not (inh or inm):
                continue
            if ina and longer:
                notes.append("%s: %s is accepted, maybe only as a start of %s" % (unit_name(*unit), opt, ", ".join(longer)))
            where = "help %s, man %s, accepted %s" % ("yes" if inh else "NO", "yes" if inm else "NO",
                                                      "yes" if ina else "NO")
            detail = ""
            if not ina:
                detail = " [%s]" % why[(unit, opt)][0]
            problems.append((unit_name(*unit), "%s: %s%s" % (opt, where, detail)))

    shutil.rmtree(scratch, ignore_errors=True)

    # `sbxrun help` may say that the global options also go after the
    # command: then every command must take them there.
    after = re.search(r"after the command", top) is not None
    for o in sorted(global_opts):
        if not_after[o]:
            text = "%s: a global option, not accepted after: %s" % (o, ", ".join(not_after[o]))
            if after:
                problems.append((unit_name(*GLOBAL), text + " (`sbxrun help` says they go before or after it)"))
            else:
                notes.append(text)

    print("units: %s" % ", ".join(unit_name(*u) for u in units))
    print("options tried on each: %d (%s)" % (len(candidates), " ".join(sorted(candidates))))
    for unit in units:
        print("  %-36s help %2d, man %2d, accepted %2d" % (unit_name(*unit), len(set(helps[unit]) - NOT_COMPARED),
                                                       len(mans[unit] - NOT_COMPARED), len(accepted[unit] - {bogus})))
    if os.environ.get("CHECK_VERBOSE"):
        for (unit, opt), (line, argv, rc) in sorted(why.items(), key=lambda kv: (unit_name(*kv[0][0]), kv[0][1])):
            print("  probe %s %s: exit %d, %s: %s" % (unit_name(*unit), opt, rc,
                                                   "accepted" if line is None else "rejected", " ".join(argv[1:])))
    print("not compared: %s; other programs' options in the man page: %s"
          % (" ".join(sorted(NOT_COMPARED)), " ".join(sorted(FOREIGN))))
    for n in notes:
        print("note: " + n)
    if problems:
        print("\n%d mismatch(es):" % len(problems))
        for unit, text in problems:
            print("MISMATCH: %s: %s" % (unit, text))
        print("\nFAIL: --help, sbxrun(1) and the program disagree (%d)" % len(problems))
        return 1
    print("OK: --help, sbxrun(1) and the program agree on every option of every subcommand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
