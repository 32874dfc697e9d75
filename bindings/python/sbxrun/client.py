# SPDX-License-Identifier: MIT
"""Client, Sandbox and Command: the sandbox API of libsbxrun.

Every call that talks to the server runs as one of the library's operations,
waited for in slices of 100 ms so that Ctrl-C (KeyboardInterrupt) is noticed
promptly: the operation is then cancelled and waited for before the
interrupt goes on. Handles are freed by ``close()``, by a ``with`` block, or
when the object is collected; the library keeps what they share alive until
the last one goes, so they may be closed in any order.
"""
from __future__ import annotations

import ctypes
import json
import os
from ctypes import byref, c_char_p, c_int64, c_size_t, c_uint8, c_uint64, c_void_p
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterator, Mapping, Sequence

from . import _lib
from .errors import check, error_for

if TYPE_CHECKING:
    from .safety import Redactor

_L = _lib.lib
_SLICE_MS = 100


def _abandon(op: int) -> None:
    """Cancel an operation (harmless when it has ended), wait for its end, free it."""
    _L.sbx_op_cancel(op)
    while _L.sbx_op_wait(op, _SLICE_MS) == _lib.E_AGAIN:
        pass
    _L.sbx_op_free(op)


#: A transfer's progress callback: ``progress(done, total)``, the bytes
#: moved so far and the total (None while it is not known).
Progress = Callable[[int, "int | None"], None]


def _report(op: int, progress: Progress, receiving: bool) -> None:
    """Tell progress how far op's body has gone out (or come in)."""
    sent, stot, received, rtot = c_uint64(), c_int64(), c_uint64(), c_int64()
    _L.sbx_op_get_progress(op, byref(sent), byref(stot), byref(received), byref(rtot))
    done, total = (received.value, rtot.value) if receiving else (sent.value, stot.value)
    progress(done, total if total >= 0 else None)


def _wait(op: int, progress: Progress | None = None, receiving: bool = False) -> str | None:
    """Wait for an operation, free it, raise for its failure; returns its
    JSON result (text) where it has one. With progress, report its transfer
    every slice and once at its end. Ctrl-C cancels it (and waits for its
    end) before the KeyboardInterrupt goes on; so does an exception raised
    by progress."""
    try:
        while _L.sbx_op_wait(op, _SLICE_MS) == _lib.E_AGAIN:
            if progress is not None:
                _report(op, progress, receiving)
        if progress is not None and _L.sbx_op_status(op) == _lib.OK:
            _report(op, progress, receiving)
    except BaseException:
        _abandon(op)
        raise
    return finish_op(op)


def finish_op(op: int) -> str | None:
    """Free an operation that has ended; raise for its failure, else
    return its JSON result (text) where it has one."""
    st = _L.sbx_op_status(op)
    err = None
    result = None
    if st != _lib.OK:
        err = error_for(st, _lib.text(_L.sbx_op_last_error(op)), _lib.text(_L.sbx_op_error_code(op)),
                        _L.sbx_op_http_status(op))
    else:
        result = _lib.text(_L.sbx_op_result_json(op))
    _L.sbx_op_free(op)
    if err is not None:
        raise err
    return result


_live = 0  # handles made and not yet freed (live_handles())


def live_handles() -> int:
    """How many handles this package holds now: a leak check for tests."""
    return _live


class _Handle:
    """A libsbxrun handle, freed once."""

    _free: Callable[[int], None]
    _last_error: Callable[[int], bytes | None]
    _set_option_fn: Callable[[int, bytes | None, bytes | None], int]

    def __init__(self, h: int | None):
        global _live
        if not h:
            raise MemoryError("libsbxrun: out of memory")
        self._h: int | None = h
        _live += 1

    @property
    def _handle(self) -> int:
        if self._h is None:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._h

    def _check(self, status: int) -> None:
        check(status, self._last_error(self._handle))

    def set_option(self, key: str, value: str) -> None:
        """Set an option by name (the C library's *_set_option)."""
        self._check(self._set_option_fn(self._handle, _lib.arg(key), _lib.arg(str(value))))

    def _configure(self, steps: Callable[[], None], options: Mapping[str, str] | None) -> None:
        """Run a constructor's set-up, then options by name; on failure the
        handle is freed before the exception goes on."""
        try:
            steps()
            for k, v in (options or {}).items():
                self.set_option(k, v)
        except BaseException:
            self.close()
            raise

    def _start(self, start: Callable[..., int], *args: Any, progress: Progress | None = None,
               receiving: bool = False) -> str | None:
        """Start an operation with start(handle, *args, &op) and wait for
        it (reporting its transfer to progress); returns its JSON result
        (text) where it has one."""
        op = c_void_p()
        self._check(start(self._handle, *args, byref(op)))
        return _wait(op.value, progress, receiving)

    async def _astart(self, client: "Client", start: Callable[..., int], *args: Any,
                      progress: Progress | None = None, receiving: bool = False) -> str | None:
        """The same, awaited on the running event loop (sbxrun.aio)."""
        from . import aio
        op = c_void_p()
        self._check(start(self._handle, *args, byref(op)))
        h = op.value
        every = None if progress is None else (lambda: _report(h, progress, receiving))
        return await aio.wait(client, h, every)

    def close(self) -> None:
        """Free the handle (what the server holds is not touched)."""
        global _live
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._free(h)
            _live -= 1

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class Client(_Handle):
    """A connection to a sandbox service: sbxd or Vercel.

    Args:
        endpoint: the service's URL ("http://127.0.0.1:8080", "unix:/path");
            None for the default (doc/client.md: SBXRUN_ENDPOINT, or Vercel).
        token, team, project: explicit credentials; None to find them in the
            environment when the first request is made.
        options: client options by name (``{"protocol": "v1"}``).
        redact: the output of the client's commands is redacted before
            :meth:`Command.output` (or anything else) yields it: True (the
            default) with a default :class:`~sbxrun.Redactor` (the built-in
            credential shapes: GitHub, AWS, npm... tokens, private keys,
            URL user information), a Redactor of your own (its rules are
            copied), or False for the output exactly as the program wrote
            it. :meth:`set_redactor` changes it later.
    """

    _free = _L.sbx_client_free
    _last_error = _L.sbx_client_last_error
    _set_option_fn = _L.sbx_client_set_option

    def __init__(self, endpoint: str | None = None, *, token: str | None = None, team: str | None = None,
                 project: str | None = None, options: Mapping[str, str] | None = None,
                 redact: "bool | Redactor" = True):
        from .safety import Redactor
        if not isinstance(redact, (bool, Redactor)):
            raise TypeError(f"redact: True, False or a Redactor, not {type(redact).__name__}")
        super().__init__(_L.sbx_client_new())

        def steps() -> None:
            if redact is True:
                self._set_default_redactor()
            elif redact is not False:
                self.set_redactor(redact)
            if endpoint is not None:
                self._check(_L.sbx_client_set_endpoint(self._handle, _lib.arg(endpoint)))
            if token is not None:
                self._check(_L.sbx_client_set_credentials(self._handle, _lib.arg(token), _lib.arg(team),
                                                          _lib.arg(project)))

        self._configure(steps, options)

    @property
    def endpoint(self) -> str | None:
        return _lib.text(_L.sbx_client_endpoint(self._handle))

    def close(self) -> None:
        d = getattr(self, "_aio", None)
        if d is not None:
            self._aio = None
            try:
                d.close()
            except Exception:  # its loop is closed: nothing watches the fd
                pass
        super().close()

    def set_policy(self, policy: Any, job_type: str | None = None) -> None:
        """Check every plain command against a :class:`~sbxrun.Policy` (a copy
        is taken; None removes the check)."""
        self._check(_L.sbx_client_set_policy(self._handle, policy._handle if policy is not None else None,
                                             _lib.arg(job_type)))

    def set_redactor(self, redactor: Any) -> None:
        """Redact the output of commands started from now on with a
        :class:`~sbxrun.Redactor` (the rules are copied) in place of the
        client's; None stops redacting."""
        self._check(_L.sbx_client_set_redactor(self._handle, redactor._handle if redactor is not None else None))

    def _set_default_redactor(self) -> None:
        """The redactor a client has unless told otherwise: the built-in
        credential shapes, no values (``sbxrun.Redactor()``)."""
        r = _L.sbx_redactor_new()
        if not r:
            raise MemoryError("libsbxrun: out of memory")
        try:
            self._check(_L.sbx_client_set_redactor(self._handle, r))
        finally:
            _L.sbx_redactor_free(r)  # the client took a copy of its rules

    def sandbox(self, **config: Any) -> "Sandbox":
        """A new, not yet created sandbox handle (see :class:`Sandbox`)."""
        return Sandbox(self, **config)

    def create_sandbox(self, **config: Any) -> "Sandbox":
        """Create a sandbox (keyword arguments as :class:`Sandbox` takes) and return it."""
        s = Sandbox(self, **config)
        try:
            s.create()
        except BaseException:
            s.close()
            raise
        return s

    def list_sandboxes(self, project: str | None = None, limit: int = 0, cursor: str | None = None) -> dict:
        """One page of the project's sandboxes, as the server answered it
        ({"sandboxes": [...], "pagination": ...}); pass the page's
        ``pagination["next"]`` as cursor for the next one."""
        return json.loads(self._start(_L.sbx_client_list_sandboxes_from_start, _lib.arg(project), limit,
                                      _lib.arg(cursor)) or "null")

    def list_snapshots(self, project: str | None = None, limit: int = 0, cursor: str | None = None) -> dict:
        """One page of the project's snapshots ({"snapshots": [...],
        "pagination": ...}), as :meth:`list_sandboxes`."""
        return json.loads(self._start(_L.sbx_client_list_snapshots_from_start, _lib.arg(project), limit,
                                      _lib.arg(cursor)) or "null")

    def list_sessions(self, name: str | None = None, project: str | None = None, limit: int = 0,
                      cursor: str | None = None) -> dict:
        """One page of the sessions (the runs) of the named sandbox ``name``,
        or of every sandbox ({"sessions": [...], "pagination": ...}), newest
        first, as :meth:`list_sandboxes`; the 2.x protocol's
        (UnsupportedError in v1)."""
        return json.loads(self._start(_L.sbx_client_list_sessions_from_start, _lib.arg(project), _lib.arg(name),
                                      limit, _lib.arg(cursor)) or "null")

    def snapshot(self, snapshot_id: str) -> "Snapshot":
        """An existing snapshot, read from the server."""
        sn = Snapshot(self)
        try:
            sn._start(_L.sbx_snapshot_fetch_start, _lib.arg(snapshot_id))
        except BaseException:
            sn.close()
            raise
        return sn


@dataclass(frozen=True)
class CompletedCommand:
    """A command that ran to its end: its exit code and output (redacted
    as the client's redactor says)."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: bytes
    stderr: bytes
    id: str | None

    def check(self) -> "CompletedCommand":
        """Raise :class:`CommandFailed` unless it exited 0."""
        if self.exit_code != 0:
            raise CommandFailed(self)
        return self


class CommandFailed(Exception):
    """A command exited with a status other than 0 (see ``.result``)."""

    def __init__(self, result: CompletedCommand):
        self.result = result
        super().__init__(f"{' '.join(result.argv)!r} exited {result.exit_code}")


class Sandbox(_Handle):
    """A sandbox: configure, then :meth:`create`, or attach with :meth:`fetch`
    / :meth:`fetch_named`.

    Keyword configuration (before create): ``name``, ``persistent``,
    ``runtime``, ``timeout_ms``, ``vcpus``, ``ports`` (a list), ``env`` (a
    mapping), ``network_policy`` (a dict or JSON text), ``source_git``,
    ``source_tarball``, ``source_snapshot``; and ``options``, sandbox options
    by name (``{"auto_resume": "never"}``).
    """

    _free = _L.sbx_sandbox_free
    _last_error = _L.sbx_sandbox_last_error
    _set_option_fn = _L.sbx_sandbox_set_option

    def __init__(self, client: Client, *, name: str | None = None, persistent: bool | None = None,
                 runtime: str | None = None, timeout_ms: int | None = None, vcpus: int | None = None,
                 ports: Sequence[int] = (), env: Mapping[str, str] | None = None,
                 network_policy: Mapping[str, Any] | str | None = None, source_git: str | None = None,
                 source_tarball: str | None = None, source_snapshot: str | None = None,
                 options: Mapping[str, str] | None = None):
        super().__init__(_L.sbx_sandbox_new(client._handle))
        self.client = client

        def steps() -> None:
            if name is not None:
                self._check(_L.sbx_sandbox_set_name(self._handle, _lib.arg(name)))
            if persistent is not None:
                self._check(_L.sbx_sandbox_set_persistent(self._handle, 1 if persistent else 0))
            for key, value in (("runtime", runtime), ("timeout_ms", timeout_ms), ("vcpus", vcpus),
                               ("source.git", source_git), ("source.tarball", source_tarball),
                               ("source.snapshot", source_snapshot)):
                if value is not None:
                    self.set_option(key, str(value))
            for p in ports:
                self.set_option("port", str(p))
            for k, v in (env or {}).items():
                self._check(_L.sbx_sandbox_set_env(self._handle, _lib.arg(k), _lib.arg(v)))
            if network_policy is not None:
                text = network_policy if isinstance(network_policy, str) else json.dumps(network_policy)
                self._check(_L.sbx_sandbox_set_network_policy_json(self._handle, _lib.arg(text)))

        self._configure(steps, options)

    # ---- lifecycle ----

    def create(self) -> "Sandbox":
        """Create the sandbox as configured; returns self."""
        self._start(_L.sbx_sandbox_create_start)
        return self

    async def create_async(self) -> "Sandbox":
        """:meth:`create`, awaited on the running event loop."""
        await self._astart(self.client, _L.sbx_sandbox_create_start)
        return self

    async def stop_async(self) -> None:
        """:meth:`stop`, awaited."""
        await self._astart(self.client, _L.sbx_sandbox_stop_start)

    def fetch(self, sandbox_id: str) -> "Sandbox":
        """Point the handle at an existing sandbox (v2: a session) by id."""
        self._start(_L.sbx_sandbox_fetch_start, _lib.arg(sandbox_id))
        return self

    def fetch_named(self, name: str) -> "Sandbox":
        """Point the handle at a named sandbox (v2) without starting a session."""
        self._start(_L.sbx_sandbox_fetch_named_start, _lib.arg(name))
        return self

    def resume(self) -> None:
        """Make sure the named sandbox has a running session (v2)."""
        self._start(_L.sbx_sandbox_resume_start)

    def refresh(self) -> None:
        """Read the sandbox's state again."""
        self._start(_L.sbx_sandbox_refresh_start)

    def stop(self) -> None:
        """Stop the sandbox (v2: its current session)."""
        self._start(_L.sbx_sandbox_stop_start)

    def delete(self) -> None:
        """Delete a named sandbox (v2)."""
        self._start(_L.sbx_sandbox_delete_start)

    def update(self, **settings: Any) -> None:
        """Change a named sandbox's settings (v2): persistent, timeout_ms,
        vcpus, ports, network_policy, snapshot_expiration_ms, tags."""
        self._start(_L.sbx_sandbox_update_start, _lib.arg(json.dumps(settings)))

    def extend_timeout(self, ms: int) -> None:
        """Add ms milliseconds to the sandbox's lifetime."""
        self._start(_L.sbx_sandbox_extend_timeout_start, ms)

    def snapshot(self, expiration_ms: int = -1) -> "Snapshot":
        """Snapshot the sandbox's filesystem (this stops the sandbox) and
        return the snapshot; expiration_ms its lifetime (0: none, -1: the
        server's default). Start a sandbox from it with
        ``source_snapshot=snap.id``."""
        sn = Snapshot(self.client)
        try:
            self._start(_L.sbx_sandbox_snapshot_start, expiration_ms, sn._handle)
        except BaseException:
            sn.close()
            raise
        return sn

    # ---- files ----

    def mkdir(self, path: str) -> None:
        self._start(_L.sbx_sandbox_mkdir_start, _lib.arg(path))

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write data to path in the sandbox (parents made as needed)."""
        buf = (c_uint8 * len(data)).from_buffer_copy(data) if data else None
        self._start(_L.sbx_sandbox_write_file_start, _lib.arg(path), buf, len(data), mode)

    def read_file(self, path: str) -> bytes:
        """The whole file (streamed; memory is the caller's to mind)."""
        chunks: list[bytes] = []
        for chunk in self.read_stream(path):
            chunks.append(chunk)
        return b"".join(chunks)

    def read_stream(self, path: str) -> Iterator[bytes]:
        """The file's bytes as they arrive."""
        chunks: list[bytes] = []
        failure: list[BaseException] = []

        def on_data(data, n, user):
            try:
                chunks.append(ctypes.string_at(data, n))
                return 0
            except BaseException as e:  # never let an exception cross into C
                failure.append(e)
                return 1

        # cb lives in this frame as long as the library may call it: until
        # the op is freed below.
        cb = _lib.DATA_CB(on_data)
        op = c_void_p()
        self._check(_L.sbx_sandbox_read_stream_start(self._handle, _lib.arg(path), cb, None, byref(op)))
        try:
            while True:
                st = _L.sbx_op_wait(op.value, _SLICE_MS)
                while chunks:
                    yield chunks.pop(0)
                if st != _lib.E_AGAIN:
                    break
        except BaseException:  # stopped early (GeneratorExit), Ctrl-C
            _abandon(op.value)
            raise
        if failure:
            _L.sbx_op_free(op.value)
            raise failure[0]
        _wait(op.value)

    def upload(self, local: str | os.PathLike, path: str, *, progress: Progress | None = None) -> None:
        """Copy a local file or directory into the sandbox. progress, if
        given, is called about ten times a second and at the end with the
        bytes of the upload's body (the files as a gzip tar) sent and its
        size."""
        self._start(_L.sbx_sandbox_upload_start, _lib.arg(os.fspath(local)), _lib.arg(path), progress=progress)

    def download(self, path: str, local: str | os.PathLike, *, progress: Progress | None = None) -> None:
        """Copy a file out of the sandbox (written whole, or not at all).
        progress, if given, is called about ten times a second and at the
        end with the bytes received and the file's size (None while not
        known). An exception progress raises cancels a transfer still under
        way and goes on to the caller."""
        self._start(_L.sbx_sandbox_download_start, _lib.arg(path), _lib.arg(os.fspath(local)), progress=progress,
                    receiving=True)

    async def upload_async(self, local: str | os.PathLike, path: str, *, progress: Progress | None = None) -> None:
        """:meth:`upload`, awaited on the running event loop."""
        await self._astart(self.client, _L.sbx_sandbox_upload_start, _lib.arg(os.fspath(local)), _lib.arg(path),
                           progress=progress)

    async def download_async(self, path: str, local: str | os.PathLike, *, progress: Progress | None = None) -> None:
        """:meth:`download`, awaited on the running event loop."""
        await self._astart(self.client, _L.sbx_sandbox_download_start, _lib.arg(path), _lib.arg(os.fspath(local)),
                           progress=progress, receiving=True)

    # ---- commands ----

    def command(self, argv: Sequence[str], **kw: Any) -> "Command":
        """A command handle (not started): see :class:`Command`."""
        return Command(self, argv, **kw)

    def run(self, argv: Sequence[str], *, check: bool = False, **kw: Any) -> CompletedCommand:
        """Run argv to its end and return its exit code and output; with
        check=True a non-zero exit raises :class:`CommandFailed`."""
        with Command(self, argv, **kw) as cmd:
            out: list[bytes] = []
            err: list[bytes] = []
            for stream, chunk in cmd.output():
                (out if stream == _lib.STDOUT else err).append(chunk)
            result = CompletedCommand(tuple(argv), cmd.exit_code, b"".join(out), b"".join(err), cmd.id)
        return result.check() if check else result

    async def run_async(self, argv: Sequence[str], *, check: bool = False, **kw: Any) -> CompletedCommand:
        """:meth:`run`, awaited: other tasks go on while the command runs."""
        with Command(self, argv, **kw) as cmd:
            out: list[bytes] = []
            err: list[bytes] = []
            async for stream, chunk in cmd.output_async():
                (out if stream == _lib.STDOUT else err).append(chunk)
            result = CompletedCommand(tuple(argv), cmd.exit_code, b"".join(out), b"".join(err), cmd.id)
        return result.check() if check else result

    # ---- what the server says ----

    @property
    def id(self) -> str | None:
        return _lib.text(_L.sbx_sandbox_id(self._handle))

    @property
    def status(self) -> str | None:
        return _lib.text(_L.sbx_sandbox_status(self._handle))

    @property
    def name(self) -> str | None:
        return _lib.text(_L.sbx_sandbox_name(self._handle))

    @property
    def persistent(self) -> bool | None:
        v = _L.sbx_sandbox_persistent(self._handle)
        return None if v < 0 else bool(v)

    @property
    def runtime(self) -> str | None:
        return _lib.text(_L.sbx_sandbox_runtime(self._handle))

    @property
    def timeout_ms(self) -> int | None:
        v = _L.sbx_sandbox_timeout_ms(self._handle)
        return None if v < 0 else v

    @property
    def json(self) -> dict | None:
        """The server's last answer about the sandbox."""
        t = _lib.text(_L.sbx_sandbox_json(self._handle))
        return None if t is None else json.loads(t)


class Command(_Handle):
    """A command in a sandbox. ``output()`` starts it and yields
    ``(stream, bytes)`` as the output arrives (stream 1 stdout, 2 stderr),
    already redacted by the client's redactor (``Client(redact=...)``);
    ``exit_code`` is known once it has ended.

    Keyword arguments: ``cwd``, ``env`` (a mapping), ``sudo``,
    ``timeout_ms`` (the client kills it when it passes).
    """

    _free = _L.sbx_command_free
    _last_error = _L.sbx_command_last_error

    def __init__(self, sandbox: Sandbox, argv: Sequence[str] | None, *, cwd: str | None = None,
                 env: Mapping[str, str] | None = None, sudo: bool = False, timeout_ms: int | None = None):
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv: a sequence of strings (the program first), not one string")
        super().__init__(_L.sbx_command_new(sandbox._handle))
        self.sandbox = sandbox
        self.argv = tuple(argv or ())

        def steps() -> None:
            if argv is not None:
                arr = (c_char_p * len(self.argv))(*[_lib.arg(a) for a in self.argv])
                self._check(_L.sbx_command_set_argv(self._handle, len(self.argv), arr))
            if cwd is not None:
                self._check(_L.sbx_command_set_cwd(self._handle, _lib.arg(cwd)))
            for k, v in (env or {}).items():
                self._check(_L.sbx_command_set_env(self._handle, _lib.arg(k), _lib.arg(v)))
            if sudo:
                self._check(_L.sbx_command_set_sudo(self._handle, 1))
            if timeout_ms is not None:
                self._check(_L.sbx_command_set_timeout_ms(self._handle, timeout_ms))

        self._configure(steps, None)

    @classmethod
    def attach(cls, sandbox: Sandbox, command_id: str, *, timeout_ms: int | None = None) -> "Command":
        """A handle on a command already started in the sandbox (by id):
        :meth:`output` then follows it from the beginning of its output,
        :meth:`wait` waits for its exit, :meth:`kill` signals it."""
        cmd = cls(sandbox, None, timeout_ms=timeout_ms)
        try:
            cmd._start(_L.sbx_command_fetch_start, _lib.arg(command_id))
        except BaseException:
            cmd.close()
            raise
        return cmd

    def start(self) -> str:
        """Start the command without following it (detached) and return
        its id; it keeps running after this handle is closed. Follow it
        with :meth:`output`, :meth:`wait`, or :meth:`attach` from anywhere."""
        self._check(_L.sbx_command_set_detached(self._handle, 1))
        self._start(_L.sbx_command_run_start)
        return self.id or ""

    def wait(self) -> int:
        """Wait for a started command to exit, without reading its output;
        returns its exit code (the handle's timeout_ms bounds the wait)."""
        self._start(_L.sbx_command_wait_exit_start)
        return self.exit_code

    def kill(self, signal: int = 15) -> None:
        """Send a signal (default SIGTERM) to the command's process group."""
        self._start(_L.sbx_command_kill_start, signal)

    def _drain(self, buf, n) -> Iterator[tuple[int, bytes]]:
        for stream in (_lib.STDOUT, _lib.STDERR):
            while _L.sbx_command_read_output(self._handle, stream, buf, len(buf), byref(n)) == _lib.OK:
                yield stream, bytes(buf[: n.value])

    def _follow(self, op: c_void_p) -> None:
        """Start following: the command's start, or (once it has an id) its output."""
        cid = self.id
        if cid is None:
            self._check(_L.sbx_command_run_start(self._handle, byref(op)))
        else:
            self._check(_L.sbx_command_attach_start(self._handle, _lib.arg(cid), byref(op)))

    def output(self) -> "Output":
        """The command's output as it arrives, to its end, as ``(stream,
        chunk)`` pairs: ``for`` reads it blocking, ``async for`` awaits it
        on the running event loop (see :class:`Output`). Iterating starts
        the command (or follows it, when started or attached). Stopping
        early (or Ctrl-C, or cancelling the task) cancels the wait; the
        command keeps running in the sandbox (:meth:`kill` stops it)."""
        return Output(self)

    def _output_sync(self) -> Iterator[tuple[int, bytes]]:
        op = c_void_p()
        self._follow(op)
        buf = (c_uint8 * 65536)()
        n = c_size_t()
        try:
            while True:
                st = _L.sbx_op_wait(op.value, _SLICE_MS)
                yield from self._drain(buf, n)
                if st != _lib.E_AGAIN:
                    break
        except BaseException:  # stopped early (GeneratorExit), Ctrl-C
            _abandon(op.value)
            raise
        _wait(op.value)

    def output_async(self) -> AsyncIterator[tuple[int, bytes]]:
        """:meth:`output` as an async iterator on the running event loop:
        ``async for stream, chunk in cmd.output_async()`` (the same as
        ``async for ... in cmd.output()``)."""
        return self._output_async()

    async def _output_async(self) -> AsyncIterator[tuple[int, bytes]]:
        import asyncio

        from . import aio
        d = aio.driver(self.sandbox.client)
        op = c_void_p()
        self._follow(op)
        buf = (c_uint8 * 65536)()
        n = c_size_t()
        fut = d.watch(op.value)
        woken = asyncio.Event()
        d.wakers.add(woken)
        try:
            while True:
                for item in self._drain(buf, n):
                    yield item
                if fut.done():
                    break
                woken.clear()
                await woken.wait()  # every round of the driver sets it, the last one too
            for item in self._drain(buf, n):
                yield item
        except BaseException:  # the task was cancelled, or the caller stopped iterating
            d.wakers.discard(woken)
            if not fut.done():
                d.abandon(op.value)
            else:
                _L.sbx_op_free(op.value)
            raise
        d.wakers.discard(woken)
        finish_op(op.value)

    @property
    def id(self) -> str | None:
        return _lib.text(_L.sbx_command_id(self._handle))

    @property
    def exit_code(self) -> int:
        """The exit code, or -1 while unknown."""
        return _L.sbx_command_exit_code(self._handle)


class Output:
    """What :meth:`Command.output` returns: the command's output, read with
    ``for`` (blocking, in slices that let Ctrl-C through) or with ``async
    for`` (on the running event loop, which goes on meanwhile)::

        for stream, chunk in cmd.output(): ...
        async for stream, chunk in cmd.output(): ...

    Each item is ``(stream, chunk)``: stream 1 (stdout) or 2 (stderr), and
    the bytes as they arrived, already redacted by the client's redactor.
    Nothing starts until the first item is asked for. One Output is read
    one way, once; ask the command for another to follow it again (from the
    beginning of its output). ``close()`` / ``aclose()`` stop early, as
    leaving the loop does.
    """

    def __init__(self, command: Command):
        self._command = command
        self._sync: Iterator[tuple[int, bytes]] | None = None
        self._async: AsyncIterator[tuple[int, bytes]] | None = None

    def __iter__(self) -> "Output":
        if self._async is not None:
            raise RuntimeError("this output is being read with async for; read it there")
        if self._sync is None:
            self._sync = self._command._output_sync()
        return self

    def __next__(self) -> tuple[int, bytes]:
        return next(iter(self)._sync)  # type: ignore[arg-type]

    def close(self) -> None:
        """Stop reading: the wait is cancelled, the command goes on."""
        if self._sync is not None:
            self._sync.close()  # type: ignore[attr-defined]

    def __aiter__(self) -> "Output":
        if self._sync is not None:
            raise RuntimeError("this output is being read with for; read it there")
        if self._async is None:
            self._async = self._command._output_async()
        return self

    async def __anext__(self) -> tuple[int, bytes]:
        return await self.__aiter__()._async.__anext__()  # type: ignore[union-attr]

    async def aclose(self) -> None:
        """Stop reading (awaited): the wait is cancelled, the command goes on."""
        if self._async is not None:
            await self._async.aclose()  # type: ignore[attr-defined]


class Snapshot(_Handle):
    """A snapshot of a sandbox's filesystem: made by :meth:`Sandbox.snapshot`,
    read by :meth:`Client.snapshot`; new sandboxes start from it with
    ``source_snapshot=snapshot.id``."""

    _free = _L.sbx_snapshot_free
    _last_error = _L.sbx_snapshot_last_error

    def __init__(self, client: Client):
        super().__init__(_L.sbx_snapshot_new(client._handle))
        self.client = client

    def delete(self) -> None:
        """Delete the snapshot on the server."""
        self._start(_L.sbx_snapshot_delete_start)

    @property
    def id(self) -> str | None:
        return _lib.text(_L.sbx_snapshot_id(self._handle))

    @property
    def status(self) -> str | None:
        """"created", "deleted" or "failed" (as the server says)."""
        return _lib.text(_L.sbx_snapshot_status(self._handle))

    @property
    def source_sandbox_id(self) -> str | None:
        return _lib.text(_L.sbx_snapshot_source_sandbox_id(self._handle))

    @property
    def size_bytes(self) -> int | None:
        v = _L.sbx_snapshot_size_bytes(self._handle)
        return None if v < 0 else v

    @property
    def expires_at(self) -> int | None:
        """When it expires (ms since the epoch), None when it does not."""
        v = _L.sbx_snapshot_expires_at(self._handle)
        return None if v <= 0 else v

    @property
    def json(self) -> dict | None:
        """The server's last answer about the snapshot."""
        t = _lib.text(_L.sbx_snapshot_json(self._handle))
        return None if t is None else json.loads(t)
