#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The documentation gate (after libfido2's man/check.sh).

Every SBX_API function in include/sbxrun/ must
  * have a /** doc comment */ directly before it, with an @since line;
  * be named in the NAME section of exactly one man page in doc/man/*.3;
  * appear in that page's SYNOPSIS with the same prototype as the header.
Every function a man page names must exist in the headers.
usage: check-docs.py SRCDIR
"""
import glob
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "."
errors = []


def squash(s):
    s = re.sub(r"SBX_DEPRECATED\([^)]*\)", "", s)
    s = s.replace("SBX_API", "")
    return re.sub(r"\s+", "", s)


decl_re = re.compile(r"SBX_API\s[^;{]*?\b(sbx_[a-z0-9_]+)\s*\([^;]*?\)\s*;", re.S)
header_protos = {}
for path in sorted(glob.glob(os.path.join(src, "include/sbxrun/*.h"))):
    text = open(path, encoding="utf-8").read()
    for m in decl_re.finditer(text):
        name = m.group(1)
        header_protos[name] = squash(m.group(0))
        before = text[: m.start()].rstrip()
        if not before.endswith("*/"):
            errors.append(f"{os.path.basename(path)}: {name} has no doc comment")
            continue
        comment = before[before.rfind("/*"):]
        if not comment.startswith("/**"):
            errors.append(f"{os.path.basename(path)}: {name}'s comment is not a /** doc comment")
        if "@since" not in comment:
            errors.append(f"{os.path.basename(path)}: {name}'s doc comment has no @since")

pages = {}
man_protos = {}
for path in sorted(glob.glob(os.path.join(src, "doc/man/*.3"))):
    page = os.path.basename(path)
    text = open(path, encoding="utf-8").read()
    name_sec = re.search(r"^\.SH NAME\s*\n(.*?)^\.SH", text, re.S | re.M)
    if not name_sec:
        errors.append(f"{page}: no NAME section")
        continue
    names = re.findall(r"\b(sbx_[a-z0-9_]+)\b", name_sec.group(1).split("\\-")[0])
    syn = re.search(r"^\.SH SYNOPSIS\s*\n(.*?)^\.SH", text, re.S | re.M)
    syn_text = syn.group(1) if syn else ""
    for p in re.finditer(r"^[^.#\n][^\n]*?\b(sbx_[a-z0-9_]+)\s*\([^;]*?\)\s*;", syn_text, re.S | re.M):
        man_protos.setdefault(p.group(1), []).append((page, squash(p.group(0))))
    for n in names:
        pages.setdefault(n, []).append(page)

for name, proto in sorted(header_protos.items()):
    where = pages.get(name, [])
    if len(where) != 1:
        errors.append(f"{name}: named in {len(where)} man pages {where}, expected exactly one")
        continue
    found = [p for (pg, p) in man_protos.get(name, []) if pg == where[0]]
    if not found:
        errors.append(f"{name}: no prototype in the SYNOPSIS of {where[0]}")
    elif proto not in found:
        errors.append(f"{name}: prototype in {where[0]} differs from the header")

for name, where in sorted(pages.items()):
    if name not in header_protos:
        errors.append(f"{name}: documented in {where} but not declared SBX_API in include/sbxrun")

if errors:
    print("\n".join("FAIL: " + e for e in errors))
    sys.exit(1)
print(f"OK: {len(header_protos)} public functions documented (doc comment, @since, man page, prototype)")
