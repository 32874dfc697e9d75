# SPDX-License-Identifier: MIT
"""The venv route of README.md: pip installs the package from the source
tree, offline, with Debian's setuptools (PEP 668 keeps pip out of the
system interpreter, and there is no package index here)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1]


def test_pip_installs_into_a_venv_and_the_package_runs(tmp_path):
    import importlib.util
    for mod in ("pip", "setuptools"):  # found, not imported: setuptools patches distutils when it is
        if importlib.util.find_spec(mod) is None:
            pytest.fail(f"{mod} is missing: apt-get install -y python3-pip python3-setuptools")
    # a copy: setuptools writes build/ and *.egg-info beside the sources
    src = tmp_path / "src"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # pip itself runs without an ASan build's preloaded runtime; the probe,
    # which loads the library, keeps it
    tool_env = {k: v for k, v in env.items() if k not in ("LD_PRELOAD", "PYTHONMALLOC")}
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, env=tool_env)
    py = venv / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                        "--disable-pip-version-check", str(src)], capture_output=True, text=True, env=tool_env)
    assert r.returncode == 0, r.stdout + r.stderr
    probe = ("import sbxrun, pathlib; print(sbxrun.__file__); print(sbxrun.__version__, sbxrun.library_version()); "
             "print((pathlib.Path(sbxrun.__file__).parent / 'py.typed').exists())")
    r = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    where, versions, typed = r.stdout.splitlines()
    assert Path(where).is_relative_to(venv), where  # the installed copy, not the tree's
    pkg, lib = versions.split()
    assert pkg == lib
    assert typed == "True"
