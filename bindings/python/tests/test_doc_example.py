# SPDX-License-Identifier: MIT
"""The program of doc/python.md runs as printed (the endpoint, token and
paths pointed at the test's sbxd and tree)."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_getting_started_program_runs(sbxd, tmp_path, monkeypatch):
    text = (ROOT / "doc" / "python.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len(code.splitlines()) <= 40
    code = (code.replace('"http://127.0.0.1:7878"', repr(sbxd.endpoint))
                .replace('"/tmp/sbxd/token"', repr(str(sbxd.state / "token")))
                .replace('"examples/demo-project"', repr(str(ROOT / "examples" / "demo-project"))))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "doc/python.md", "exec"), {})
    printed = out.getvalue()
    assert "b'hello\\n'" in printed
    assert "stdout b'1\\n'" in printed and "stdout b'2\\n'" in printed
    assert "passed ['passed', 'passed']" in printed
    assert (tmp_path / "run.jsonl").exists()
