# SPDX-License-Identifier: MIT
"""A real sbxd for the tests: started per test module on a unix socket in a
temporary directory (SBXD names the program; meson sets it), stopped after."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package in this tree, not an installed one


class Sbxd:
    def __init__(self, tmp: Path):
        exe = os.environ.get("SBXD")
        if not exe:
            pytest.fail("SBXD (the sbxd program to test) is not set in the environment")
        self.dir = tmp
        self.sock = tmp / "sock"
        self.state = tmp / "state"
        self.log = open(tmp / "sbxd.log", "wb")
        self.proc = subprocess.Popen(
            [exe, "--listen", f"unix:{self.sock}", "--state-dir", str(self.state), "--log-level", "debug"],
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("sbxd listening on"):
            self.stop()
            pytest.fail(f"sbxd did not start: {line!r}; log: {(tmp / 'sbxd.log').read_text()[-2000:]}")
        self.endpoint = f"unix:{self.sock}"
        self.token = (self.state / "token").read_text().strip()

    def client(self, **kw):
        import sbxrun
        return sbxrun.Client(self.endpoint, token=self.token, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def sbxd():
    # Sandboxes run under host ids of their own, which must pass through
    # the directories above the state directory (pytest's are 0700).
    tmp = Path(tempfile.mkdtemp(prefix="sbxrun-py-"))
    tmp.chmod(0o711)
    d = Sbxd(tmp)
    yield d
    d.stop()
    assert d.proc.returncode == 0, f"sbxd exited {d.proc.returncode}: {(tmp / 'sbxd.log').read_text()[-2000:]}"
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def client(sbxd):
    with sbxd.client() as c:
        yield c


@pytest.fixture
def sandbox(client):
    with client.create_sandbox(timeout_ms=120000) as s:
        yield s
        try:
            s.stop()
        except Exception:
            pass
