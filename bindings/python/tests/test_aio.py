# SPDX-License-Identifier: MIT
"""asyncio: operations awaited on an event loop driven by the client's fd."""
from __future__ import annotations

import asyncio
import os
import time

import pytest

import sbxrun


def test_two_commands_at_once_on_one_loop(client):
    # One waits for a file the other makes: it ends only if both run together.
    async def main():
        s = await client.sandbox(timeout_ms=120000).create_async()
        try:
            waiter = s.run_async(["sh", "-c", "while ! test -e /tmp/flag; do sleep 0.05; done; echo seen"])
            maker = s.run_async(["sh", "-c", "sleep 0.3; touch /tmp/flag; echo made"])
            a, b = await asyncio.wait_for(asyncio.gather(waiter, maker), 60)
            assert (a.stdout, b.stdout) == (b"seen\n", b"made\n")
            await s.stop_async()
        finally:
            s.close()
    asyncio.run(main())


def test_the_loop_keeps_ticking_while_a_command_runs(sandbox):
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        t = asyncio.create_task(ticker())
        chunks = []
        async for stream, chunk in sandbox.command(["sh", "-c", "echo a; sleep 1; echo b"]).output_async():
            chunks.append((stream, chunk))
        t.cancel()
        assert chunks == [(1, b"a\n"), (1, b"b\n")]
        assert ticks >= 10, f"the loop was blocked: {ticks} ticks in a 1 s command"
    asyncio.run(main())


def test_output_is_read_with_for_or_async_for(sandbox):
    argv = ["sh", "-c", "echo a; sleep 1; echo b >&2"]
    # for: blocking, as before
    assert list(sandbox.command(argv).output()) == [(1, b"a\n"), (2, b"b\n")]

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        t = asyncio.create_task(ticker())
        # async for on the same call: the loop goes on meanwhile
        with sandbox.command(argv) as cmd:
            chunks = [item async for item in cmd.output()]
            assert cmd.exit_code == 0
        t.cancel()
        assert chunks == [(1, b"a\n"), (2, b"b\n")]
        assert ticks >= 10, f"the loop was blocked: {ticks} ticks in a 1 s command"
        # the old name is the same thing
        assert [item async for item in sandbox.command(argv).output_async()] == chunks
        # one output is read one way
        out = sandbox.command(["echo", "x"]).output()
        assert await out.__anext__() == (1, b"x\n")
        with pytest.raises(RuntimeError):
            iter(out)
        with pytest.raises(StopAsyncIteration):
            await out.__anext__()
        # leaving early cancels the wait; the command goes on, the client too
        with sandbox.command(["sh", "-c", "for i in $(seq 100); do echo y; sleep 0.05; done"]) as cmd:
            out = cmd.output()
            async for _ in out:
                break
            await out.aclose()
        assert (await sandbox.run_async(["echo", "after"])).stdout == b"after\n"
    asyncio.run(main())
    out = sandbox.command(["echo", "z"]).output()
    assert next(out) == (1, b"z\n")
    with pytest.raises(RuntimeError):
        out.__aiter__()
    out.close()


def test_cancelling_the_task_cancels_the_operation(sandbox):
    async def main():
        task = asyncio.create_task(sandbox.run_async(["sleep", "30"]))
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - t0 < 5
        # the client goes on, on this loop and on the next
        assert (await sandbox.run_async(["echo", "again"])).stdout == b"again\n"
    asyncio.run(main())
    assert sandbox.run(["echo", "sync"]).stdout == b"sync\n"
    asyncio.run(_echo(sandbox))


async def _echo(sandbox):
    assert (await sandbox.run_async(["echo", "new loop"])).stdout == b"new loop\n"


def test_a_run_awaited(client):
    async def main():
        with sbxrun.Run(client) as run:
            run.add_job("verify.test", argv=["node", "--version"])
            result = await run.execute_async()
            assert result["status"] == "passed", result
    asyncio.run(main())


def test_upload_and_download_awaited_with_progress(sandbox, tmp_path):
    size = 8 << 20
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(size))

    async def main():
        up, down = [], []
        await sandbox.upload_async(src, "big.bin", progress=lambda d, t: up.append((d, t)))
        await sandbox.download_async("big.bin", tmp_path / "back.bin", progress=lambda d, t: down.append((d, t)))
        return up, down
    up, down = asyncio.run(main())
    assert up[-1][0] == up[-1][1] and up[-1][1] > size
    assert down[-1] == (size, size)
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()

    class Stop(Exception):
        pass

    def stop(d, t):
        raise Stop()

    async def failing():
        await sandbox.download_async("big.bin", tmp_path / "maybe.bin", progress=stop)
    with pytest.raises(Stop):
        asyncio.run(failing())
