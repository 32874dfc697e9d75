# SPDX-License-Identifier: MIT
"""The library's version is checked before anything else is bound: an old,
newer-major or foreign library is refused at import with both versions and
its path, not with the first missing function."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sbxrun

PKG = Path(__file__).resolve().parents[1]


def stub(tmp_path: Path, name: str, source: str) -> Path:
    """A shared library built from source, exporting what it defines."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a stub library with")
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    so = tmp_path / f"{name}.so"
    # The compiler without the sanitiser runtime an ASan build preloads
    # for the library (its leak check would stop cc).
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(c)], check=True, env=env)
    return so


def import_with(library: Path, stub: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, SBXRUN_LIBRARY=str(library), PYTHONPATH=str(PKG), PYTHONDONTWRITEBYTECODE="1")
    if stub:  # no sanitiser runtime for a stub (an ASan build preloads one for the library)
        env.pop("LD_PRELOAD", None)
    return subprocess.run([sys.executable, "-c", "import sbxrun"], env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("num, shown", [(0x000900, "0.9.0"), (0x020000, "2.0.0")])
def test_a_library_of_another_version_is_refused_by_name(tmp_path, num, shown):
    so = stub(tmp_path, "old", f"unsigned sbx_version_num(void) {{ return {num:#x}u; }}\n")
    r = import_with(so)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: "), r.stderr
    assert f"sbxrun {sbxrun.__version__} needs libsbxrun 1.x, {sbxrun.__version__} or newer" in last
    assert f"{os.path.realpath(so)} is libsbxrun {shown}" in last
    assert "AttributeError" not in r.stderr


def test_a_library_that_is_not_libsbxrun_is_refused_by_name(tmp_path):
    so = stub(tmp_path, "foreign", "int something_else(void) { return 0; }\n")
    r = import_with(so)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: "), r.stderr
    assert f"{os.path.realpath(so)} is not libsbxrun (it has no sbx_version_num)" in last
    assert f"needs libsbxrun 1.x, {sbxrun.__version__} or newer" in last
    assert "AttributeError" not in r.stderr


def test_the_library_being_tested_is_accepted():
    lib = os.environ.get("SBXRUN_LIBRARY")
    if not lib:
        pytest.skip("SBXRUN_LIBRARY is not set")
    r = import_with(Path(lib), stub=False)
    assert r.returncode == 0, r.stderr
