# SPDX-License-Identifier: MIT
"""asyncio: the library's operations awaited on an event loop.

The client's one file descriptor is watched with ``loop.add_reader`` and
its next deadline with ``loop.call_later``; both call
``sbx_client_process``, which does the ready work without blocking (the
"single fd" way of doc/client.md). Everything runs on the loop's thread:
one client is driven by one loop. Cancelling the task that awaits an
operation cancels the operation; the library finishes it in the
background and the driver frees it.
"""
from __future__ import annotations

import asyncio
from ctypes import byref, c_int, c_int64, c_size_t
from typing import Any, Callable

from . import _lib
from .errors import check

_L = _lib.lib


class _Driver:
    """Drives one client from one event loop."""

    def __init__(self, client: Any, loop: asyncio.AbstractEventLoop):
        fd = c_int(-1)
        check(_L.sbx_client_get_fd(client._handle, byref(fd)), _L.sbx_client_last_error(client._handle))
        self.client = client
        self.loop = loop
        self.fd = fd.value
        self.ops: dict[int, asyncio.Future | None] = {}  # None: abandoned, freed when done
        self.wakers: set[asyncio.Event] = set()
        self.timer: asyncio.TimerHandle | None = None
        loop.add_reader(self.fd, self.tick)

    def watch(self, op: int) -> asyncio.Future:
        fut = self.loop.create_future()
        self.ops[op] = fut
        self.loop.call_soon(self.tick)  # the new requests go out now
        return fut

    def abandon(self, op: int) -> None:
        _L.sbx_op_cancel(op)
        self.ops[op] = None
        self.loop.call_soon(self.tick)

    def tick(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.client._h is None:
            return
        running = c_size_t()
        _L.sbx_client_process(self.client._handle, byref(running))
        for op, fut in list(self.ops.items()):
            if _L.sbx_op_done(op):
                del self.ops[op]
                if fut is None:
                    _L.sbx_op_free(op)
                elif not fut.done():
                    fut.set_result(None)
        for ev in self.wakers:
            ev.set()
        if self.ops or self.wakers:
            ms = c_int64(-1)
            _L.sbx_client_get_timeout(self.client._handle, byref(ms))
            if ms.value >= 0:
                self.timer = self.loop.call_later(ms.value / 1000.0, self.tick)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.loop.remove_reader(self.fd)


def driver(client: Any) -> _Driver:
    """The client's driver on the running loop (made on first use)."""
    loop = asyncio.get_running_loop()
    d = getattr(client, "_aio", None)
    if d is None or d.loop is not loop or d.loop.is_closed():
        if d is not None and not d.loop.is_closed():
            d.close()
        d = _Driver(client, loop)
        client._aio = d
    return d


async def wait(client: Any, op: int, every: Callable[[], None] | None = None) -> str | None:
    """Await an operation, free it, raise for its failure; returns its JSON
    result (text) where it has one. every, if given, is called about ten
    times a second while it runs and once when it has succeeded; an
    exception it raises cancels the operation and goes on."""
    d = driver(client)
    fut = d.watch(op)
    try:
        if every is None:
            await fut
        else:
            while not fut.done():
                await asyncio.wait({fut}, timeout=0.1)
                if not fut.done():
                    every()
            await fut
            if _L.sbx_op_status(op) == _lib.OK:
                every()
    except BaseException:
        if fut.done():
            _L.sbx_op_free(op)  # it has ended: the driver let it go
        else:
            d.abandon(op)
        raise
    from .client import finish_op
    return finish_op(op)
