# SPDX-License-Identifier: MIT
"""The Client, Sandbox and Command classes against a real sbxd."""
from __future__ import annotations

import gc
import os
import signal
import threading
import time

import pytest

import sbxrun
from sbxrun import _lib, errors


def test_library_and_package_versions_agree():
    assert sbxrun.library_version() == sbxrun.__version__


def test_one_class_per_status_named_from_the_library():
    seen = 0
    for code in range(1, 128):
        name = _lib.text(_lib.lib.sbx_status_name(code))
        if name is None:
            continue
        seen += 1
        e = errors.error_for(code, "m")
        assert type(e).__name__ == errors.class_name(name), name
        assert type(e) is not sbxrun.SbxError, f"{name} has no class of its own"
        assert e.status == code and e.name == name and e.message == "m"
    assert seen >= 22
    # a code the library does not know is a plain SbxError
    assert type(errors.error_for(10_000, "x")) is sbxrun.SbxError


def test_bad_arguments_raise_before_anything_is_sent(sbxd):
    with pytest.raises(sbxrun.UnknownOptionError) as ei:
        sbxd.client(options={"no.such.option": "1"})
    assert "no.such.option" in str(ei.value)
    with pytest.raises(sbxrun.InvalidArgError):
        sbxrun.Client("ftp://x")
    with sbxd.client() as c:
        with pytest.raises(ValueError):  # InvalidArgError is a ValueError
            c.sandbox(vcpus=1000)
        with pytest.raises(ValueError):  # NUL never reaches C
            c.sandbox(name="a\0b")
        with pytest.raises(TypeError):
            c.sandbox().command("echo hi")


def test_sandbox_command_and_files(sandbox):
    r = sandbox.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.exit_code, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    assert r.id
    with pytest.raises(sbxrun.CommandFailed) as ei:
        sandbox.run(["false"], check=True)
    assert ei.value.result.exit_code == 1
    data = bytes(range(256)) * 1000
    sandbox.write_file("bin.dat", data, 0o600)
    assert sandbox.read_file("/vercel/sandbox/bin.dat") == data
    assert sandbox.run(["stat", "-c", "%a", "bin.dat"]).stdout == b"600\n"
    with pytest.raises(sbxrun.NotFoundError):
        sandbox.read_file("/vercel/sandbox/missing")
    sandbox.mkdir("/vercel/sandbox/d")
    assert sandbox.run(["test", "-d", "d"]).exit_code == 0


def test_upload_and_download_report_progress(sandbox, tmp_path):
    size = 16 << 20
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(size))
    up: list[tuple[int, int | None]] = []
    sandbox.upload(src, "big.bin", progress=lambda done, total: up.append((done, total)))
    # the body is the file as a gzip tar: a little more than the file
    done, total = up[-1]
    assert total is not None and size < total < size + size // 50 and done == total
    assert all(a[0] <= b[0] for a, b in zip(up, up[1:]))
    down: list[tuple[int, int | None]] = []
    out = tmp_path / "back.bin"
    sandbox.download("big.bin", out, progress=lambda done, total: down.append((done, total)))
    assert down[-1] == (size, size)
    assert out.read_bytes() == src.read_bytes()

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop()

    # a callback that raises cancels a transfer still under way (its last
    # call comes after the end): the exception goes on, no temporary is left
    with pytest.raises(Stop):
        sandbox.download("big.bin", tmp_path / "maybe.bin", progress=stop)
    assert {p.name for p in tmp_path.iterdir()} <= {"back.bin", "big.bin", "maybe.bin"}


def test_output_streams_as_it_arrives(sandbox):
    cmd = sandbox.command(["sh", "-c", "echo first; sleep 2; echo second"])
    t0 = time.monotonic()
    it = cmd.output()
    stream, chunk = next(it)
    assert (stream, chunk) == (1, b"first\n")
    assert time.monotonic() - t0 < 1.8, "the first line came only with the end"
    assert list(it) == [(1, b"second\n")]
    assert cmd.exit_code == 0
    cmd.close()


def test_stopping_an_iterator_early_leaves_no_operation(sandbox):
    cmd = sandbox.command(["sh", "-c", "while :; do echo x; sleep 0.05; done"])
    for _ in cmd.output():
        break  # GeneratorExit: the wait is cancelled, the op freed
    cmd.close()
    assert sandbox.run(["echo", "ok"]).stdout == b"ok\n"


def test_errors_carry_the_server_code(client):
    s = client.sandbox()
    with pytest.raises(sbxrun.NotFoundError) as ei:
        s.fetch("sbx_doesnotexist")
    assert ei.value.http_status == 404
    assert ei.value.error_code == "not_found"
    with pytest.raises(sbxrun.MisuseError):
        s.stop()  # nothing created
    s.close()
    with pytest.raises(ValueError):
        s.stop()  # closed


def test_named_persistent_sandbox_resumes_by_itself(client):
    with client.create_sandbox(name=f"py-{os.getpid()}", persistent=True) as s:
        assert s.name == f"py-{os.getpid()}" and s.persistent is True
        first = s.id
        s.write_file("kept.txt", b"kept\n")
        s.stop()
        # the next operation meets the stopped session: resumed, repeated
        assert s.run(["cat", "kept.txt"]).stdout == b"kept\n"
        assert s.id != first
        # its two sessions, newest first
        sessions = client.list_sessions(s.name)["sessions"]
        assert [x["id"] for x in sessions] == [s.id, first]
        s.update(persistent=False, tags={"team": "py"})
        assert s.persistent is False
        s.delete()


def test_ctrl_c_interrupts_a_blocking_call_promptly(sandbox):
    # A real SIGINT while run() waits for a long command.
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        sandbox.run(["sleep", "30"])
    assert time.monotonic() - t0 < 5, "Ctrl-C waited for the command"
    # the client goes on
    assert sandbox.run(["echo", "after"]).stdout == b"after\n"


def test_handles_freed_in_any_order(sbxd):
    c = sbxd.client()
    s = c.create_sandbox()
    k = s.command(["echo", "late"])
    c.close()  # the library keeps what the others need
    s.close()
    k.close()
    c2 = sbxd.client()
    del c2
    gc.collect()


def test_versions_in_the_tree_agree():
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    meta = tomllib.loads((root / "bindings/python/pyproject.toml").read_text())
    assert meta["project"]["version"] == sbxrun.__version__
    assert f"version: '{sbxrun.__version__}'" in (root / "meson.build").read_text()
