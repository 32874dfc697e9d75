# SPDX-License-Identifier: MIT
"""Runs, jobs and transcripts: the safe path (doc/job.md).

A :class:`Run` is the jobs of one piece of work in one sandbox (one it
creates, or one given), in the library's order (clone, apply, install,
migrate, lint, typecheck, test, build), each under its type's command
policy and network preset, its output redacted, recorded in a
:class:`Transcript` when one is given.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
from ctypes import byref, c_char_p, c_size_t, c_uint8, c_void_p
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from . import _lib
from .client import _Handle
from .errors import IntegrityError, SbxError, check, error_for

if TYPE_CHECKING:
    from .client import Client, Sandbox

_L = _lib.lib


def _json_out(fn: Callable[..., int], handle: int, last_error: Callable[[int], bytes | None], *args: Any) -> Any:
    """Call fn(handle, *args, &char*) and parse the JSON it hands out (freed)."""
    out = c_void_p()
    check(fn(handle, *args, byref(out)), last_error(handle))
    return _lib.take_json(out.value)


def _verdict_name(v: int) -> str:
    return _lib.text(_L.sbx_job_verdict_name(v)) or str(v)


#: What ``on_progress`` of :meth:`Run.execute` is told, by sbx_run_event.
RUN_EVENTS = ("sandbox-creating", "uploading", "job-started", "job-ended", "job-skipped", "stopping")

#: on_progress(event, job): job is {"index", "type", "verdict"} for the job
#: events (verdict only at "job-ended"), None for the others.
Progress = Callable[[str, "dict[str, Any] | None"], Any]


@contextlib.contextmanager
def _calling_back(h: _Handle, setter: Callable[..., int], c_cb: Any, none: Any, failure: list[BaseException]):
    """c_cb set on h with setter for one operation, removed after it (it is
    about to go). An exception the callback raised (put in failure; it
    cancelled the operation) is raised in place of the cancellation."""
    h._check(setter(h._handle, c_cb, None))
    try:
        yield
    except SbxError:
        if not failure:
            raise
    finally:
        setter(h._handle, none, None)
    if failure:
        raise failure[0]


class Job(_Handle):
    """One job: a type (repo.clone, repo.applyPatch, deps.install,
    verify.lint, verify.typecheck, verify.test, verify.build, db.migrate),
    its inputs, and after it has run, its verdict and result.

    ``Job(client, "verify.test", inputs=..., ...)`` makes a job of its own,
    run with :meth:`run` in a sandbox you created; a :class:`Run` makes its
    jobs with :meth:`Run.add_job` (freed with the run). Keyword set-up:
    ``inputs``, ``argv``, ``timeout_ms``, ``env``, ``secrets``,
    ``artifacts``, ``options``; for a job of its own also ``policy`` (a
    :class:`~sbxrun.Policy`, copied), ``transcript`` (a :class:`Transcript`
    that records it) and ``json_text`` (a job description, doc/job.md).
    """

    _free = _L.sbx_job_free
    _last_error = _L.sbx_job_last_error
    _set_option_fn = _L.sbx_job_set_option

    def __init__(self, client: "Client", job_type: str | None = None, *, json_text: str | Mapping[str, Any] | None = None,
                 inputs: Mapping[str, str] | None = None, argv: Sequence[str] | None = None,
                 timeout_ms: int | None = None, env: Mapping[str, str] | None = None,
                 secrets: Sequence[bytes | str] = (), artifacts: Sequence[str] = (), policy: Any = None,
                 transcript: "Transcript | None" = None, options: Mapping[str, str] | None = None):
        super().__init__(_L.sbx_job_new(client._handle))
        self._owned = True
        self.client = client
        self.transcript = transcript  # must outlive the job

        def steps() -> None:
            if json_text is not None:
                text = json_text if isinstance(json_text, str) else json.dumps(json_text)
                self._check(_L.sbx_job_load_json(self._handle, _lib.arg(text)))
            if job_type is not None:
                self._check(_L.sbx_job_set_type(self._handle, _lib.arg(job_type)))
            if policy is not None:
                self._check(_L.sbx_job_set_policy(self._handle, policy._handle))
            if transcript is not None:
                self._check(_L.sbx_job_set_transcript(self._handle, transcript._handle))
            self._setup(inputs, argv, timeout_ms, env, secrets, artifacts)

        self._configure(steps, options)

    @classmethod
    def _of_run(cls, run: "Run", handle: int) -> "Job":
        """A job the run owns (not counted, not freed here)."""
        job = cls.__new__(cls)
        job._h = handle
        job._owned = False
        job._run = run  # keeps the run (and so this job) alive
        job.client = run.client
        job.transcript = None
        return job

    def close(self) -> None:
        """Free a job of its own; a run's job is freed with its run."""
        if getattr(self, "_owned", False):
            super().close()
        else:
            self._h = None

    def _setup(self, inputs: Mapping[str, str] | None, argv: Sequence[str] | None, timeout_ms: int | None,
               env: Mapping[str, str] | None, secrets: Sequence[bytes | str], artifacts: Sequence[str]) -> None:
        for k, v in (inputs or {}).items():
            self.set_input(k, v)
        if argv is not None:
            self.set_argv(argv)
        if timeout_ms is not None:
            self.set_timeout_ms(timeout_ms)
        for k, v in (env or {}).items():
            self.set_env(k, v)
        for s in secrets:
            self.add_secret(s)
        for a in artifacts:
            self.add_artifact(a)

    def set_input(self, key: str, value: str | None) -> None:
        """Set (None: remove) an input of the job's type (doc/job.md)."""
        self._check(_L.sbx_job_set_input(self._handle, _lib.arg(key), _lib.arg(value)))

    def set_argv(self, argv: Sequence[str]) -> None:
        """The program to run, for the types that take one."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv: a sequence of strings (the program first), not one string")
        arr = (c_char_p * len(argv))(*[_lib.arg(a) for a in argv])
        self._check(_L.sbx_job_set_argv(self._handle, len(argv), arr))

    def set_timeout_ms(self, ms: int) -> None:
        self._check(_L.sbx_job_set_timeout_ms(self._handle, ms))

    def set_env(self, name: str, value: str | None) -> None:
        """An environment variable the job's commands see (its value is a secret: redacted)."""
        self._check(_L.sbx_job_set_env(self._handle, _lib.arg(name), _lib.arg(value)))

    def add_secret(self, value: bytes | str) -> None:
        """A value to redact from everything the job reports."""
        data = value.encode() if isinstance(value, str) else bytes(value)
        buf = (c_uint8 * len(data)).from_buffer_copy(data) if data else None
        self._check(_L.sbx_job_add_secret(self._handle, buf, len(data)))

    def add_artifact(self, path: str) -> None:
        self._check(_L.sbx_job_add_artifact(self._handle, _lib.arg(path)))

    def _output_cb(self, on_output: Callable[[int, bytes], Any] | None, failure: list[BaseException]):
        """The C callback for on_output (NULL when there is none); an
        exception it raises cancels the job and is raised after."""
        if on_output is None:
            return _lib.OUTPUT_CB()  # NULL: no callback

        def cb(stream, data, n, user):
            try:
                on_output(stream, ctypes.string_at(data, n))
                return 0
            except BaseException as e:  # never let an exception cross into C
                failure.append(e)
                return 1

        return _lib.OUTPUT_CB(cb)

    def run(self, sandbox: "Sandbox", *, on_output: Callable[[int, bytes], Any] | None = None) -> dict:
        """Run the job in a created sandbox (blocking; Ctrl-C cancels it)
        and return its result (sbxrun.job.result/1). ``on_output(stream,
        chunk)`` receives its output as it comes, redacted (stream 1
        stdout, 2 stderr). A job that ran and failed is not an error: see
        ``verdict``."""
        failure: list[BaseException] = []
        with _calling_back(self, _L.sbx_job_set_output_cb, self._output_cb(on_output, failure), _lib.OUTPUT_CB(),
                           failure):
            self._start(_L.sbx_job_run_start, sandbox._handle)
        return self.result

    async def run_async(self, sandbox: "Sandbox", *, on_output: Callable[[int, bytes], Any] | None = None) -> dict:
        """:meth:`run`, awaited on the running event loop (cancelling the
        task cancels the job)."""
        failure: list[BaseException] = []
        with _calling_back(self, _L.sbx_job_set_output_cb, self._output_cb(on_output, failure), _lib.OUTPUT_CB(),
                           failure):
            await self._astart(sandbox.client, _L.sbx_job_run_start, sandbox._handle)
        return self.result

    @property
    def verdict(self) -> str:
        """"passed", "failed", "timed-out", "denied", "cancelled", "error" or "unavailable"."""
        return _verdict_name(_L.sbx_job_verdict(self._handle))

    @property
    def exit_code(self) -> int:
        return _L.sbx_job_exit_code(self._handle)

    @property
    def retryable(self) -> bool:
        return bool(_L.sbx_job_retryable(self._handle))

    @property
    def result(self) -> dict:
        """The job's result (schema sbxrun.job.result/1; redacted)."""
        return _json_out(_L.sbx_job_result_to_json, self._handle, _L.sbx_job_last_error)


class Run(_Handle):
    """The jobs of one piece of work in one sandbox.

    Args:
        client: the client to run on.
        sandbox: a sandbox to run in (created or fetched; not stopped at
            the end); None: the run creates one and stops it.
        wall_ms, output_bytes, max_jobs: the budget (0: none).
        transcript: a :class:`Transcript` that records the run.
        options: run options by name ("runtime", "vcpus",
            "sandbox_timeout_ms", "keep_going").
    """

    _free = _L.sbx_run_free
    _last_error = _L.sbx_run_last_error
    _set_option_fn = _L.sbx_run_set_option

    def __init__(self, client: "Client", *, sandbox: "Sandbox | None" = None, wall_ms: int = 0,
                 output_bytes: int = 0, max_jobs: int = 0, transcript: "Transcript | None" = None,
                 options: Mapping[str, str] | None = None):
        super().__init__(_L.sbx_run_new(client._handle))
        self.client = client
        self.sandbox = sandbox  # must outlive the run
        self.transcript = transcript
        self._types: dict[int, str] = {}  # job handle -> type, for progress reports

        def steps() -> None:
            if sandbox is not None:
                self._check(_L.sbx_run_set_sandbox(self._handle, sandbox._handle))
            if wall_ms or output_bytes or max_jobs:
                self._check(_L.sbx_run_set_budget(self._handle, wall_ms, output_bytes, max_jobs))
            if transcript is not None:
                self._check(_L.sbx_run_set_transcript(self._handle, transcript._handle))

        self._configure(steps, options)

    def add_job(self, job_type: str, *, inputs: Mapping[str, str] | None = None, argv: Sequence[str] | None = None,
                timeout_ms: int | None = None, env: Mapping[str, str] | None = None,
                secrets: Sequence[bytes | str] = (), artifacts: Sequence[str] = (),
                options: Mapping[str, str] | None = None) -> Job:
        """Add a job of this type (repo.clone, repo.applyPatch, deps.install,
        verify.lint, verify.typecheck, verify.test, verify.build,
        db.migrate) with its inputs; returns it."""
        out = c_void_p()
        self._check(_L.sbx_run_add_job(self._handle, _lib.arg(job_type), byref(out)))
        h = out.value
        self._types[h] = job_type
        job = Job._of_run(self, h)
        job._setup(inputs, argv, timeout_ms, env, secrets, artifacts)
        for k, v in (options or {}).items():
            job.set_option(k, v)
        return job

    def add_upload(self, local: str | os.PathLike, sandbox_path: str = "/vercel/sandbox") -> None:
        """Send a local file or directory into the sandbox before the first job."""
        self._check(_L.sbx_run_add_upload(self._handle, _lib.arg(os.fspath(local)), _lib.arg(sandbox_path)))

    @contextlib.contextmanager
    def _progress(self, on_progress: Progress | None):
        """on_progress registered for one execution; yields the start
        function to run it with. An exception the callback raises cancels
        the run and is raised in place of the cancellation."""
        failure: list[BaseException] = []
        ops: list[int] = []

        def start(h: int, op_ref: Any) -> int:
            st = _L.sbx_run_execute_start(h, op_ref)
            if st == _lib.OK:
                ops.append(op_ref._obj.value)
            return st

        def cb(run, event, index, user):
            if failure:
                return
            try:
                job = None
                if 2 <= event <= 4:
                    h = _L.sbx_run_job(self._handle, index)
                    job = {"index": index, "type": self._types.get(h),
                           "verdict": _verdict_name(_L.sbx_job_verdict(h)) if event == 3 else None}
                on_progress(RUN_EVENTS[event] if event < len(RUN_EVENTS) else str(event), job)
            except BaseException as e:  # never let an exception cross into C
                failure.append(e)
                for op in ops:
                    _L.sbx_op_cancel(op)

        c_cb = _lib.RUN_PROGRESS_CB(cb) if on_progress is not None else _lib.RUN_PROGRESS_CB()
        with _calling_back(self, _L.sbx_run_set_progress_cb, c_cb, _lib.RUN_PROGRESS_CB(), failure):
            yield start

    def execute(self, *, on_progress: Progress | None = None) -> dict:
        """Carry the run out (blocking; Ctrl-C cancels it and stops the
        sandbox it made) and return its result (sbxrun.run.result/1). A
        run whose jobs ran and failed is not an error: see ``verdict``.
        ``on_progress(event, job)`` is told each stage as it comes
        (:data:`RUN_EVENTS`); an exception it raises cancels the run and
        is raised here."""
        with self._progress(on_progress) as start:
            self._start(start)
        return self.result

    async def execute_async(self, *, on_progress: Progress | None = None) -> dict:
        """:meth:`execute`, awaited on the running event loop (cancelling
        the task cancels the run and stops the sandbox it made)."""
        with self._progress(on_progress) as start:
            await self._astart(self.client, start)
        return self.result

    @property
    def verdict(self) -> str:
        return _verdict_name(_L.sbx_run_verdict(self._handle))

    @property
    def jobs(self) -> list[Job]:
        """The jobs in run order."""
        return [Job._of_run(self, _L.sbx_run_job(self._handle, i)) for i in range(_L.sbx_run_job_count(self._handle))]

    @property
    def result(self) -> dict:
        return _json_out(_L.sbx_run_result_to_json, self._handle, _L.sbx_run_last_error)


class Transcript(_Handle):
    """A tamper-evident record of a job or run (doc/transcript.md).

    ``Transcript(path)`` records into a file as the run goes;
    ``Transcript.load(path)`` reads one back, and :meth:`verify` checks
    its hash chain.
    """

    _free = _L.sbx_transcript_free
    _last_error = _L.sbx_transcript_last_error

    def __init__(self, path: str | os.PathLike | None = None):
        super().__init__(_L.sbx_transcript_new())

        def steps() -> None:
            if path is not None:
                self._check(_L.sbx_transcript_set_file(self._handle, _lib.arg(os.fspath(path))))

        self._configure(steps, None)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Transcript":
        """Read a transcript file (a torn last line, as a crash leaves, is tolerated)."""
        t = cls()
        try:
            t._check(_L.sbx_transcript_load_file(t._handle, _lib.arg(os.fspath(path))))
        except BaseException:
            t.close()
            raise
        return t

    def verify(self) -> None:
        """Check the hash chain: :class:`IntegrityError` when it does not
        hold, its ``broken_entry`` the index (0-based) of the first entry
        that does not match."""
        broken = c_size_t(0)
        st = _L.sbx_transcript_verify(self._handle, byref(broken))
        try:
            self._check(st)
        except IntegrityError as e:
            e.broken_entry = broken.value
            raise

    @property
    def step_count(self) -> int:
        return _L.sbx_transcript_step_count(self._handle)

    @property
    def complete(self) -> bool:
        return bool(_L.sbx_transcript_complete(self._handle))

    @property
    def head_hash(self) -> str | None:
        return _lib.text(_L.sbx_transcript_head_hash(self._handle))

    @property
    def job(self) -> dict:
        """The header entry: its "job" holds the job (or run) type, inputs and policies."""
        return _json_out(_L.sbx_transcript_job_to_json, self._handle, _L.sbx_transcript_last_error)

    def step(self, n: int) -> dict:
        """Step n (1-based) as recorded."""
        return _json_out(_L.sbx_transcript_step_to_json, self._handle, _L.sbx_transcript_last_error, n)

    def finish(self, verdict: "str | Job | Run") -> None:
        """End the transcript with a verdict ("passed", ..., or the job or
        run whose verdict it is): the file is then replaced atomically with
        the complete transcript. A :class:`Run` ends its own; a job of its
        own leaves it to the caller, who may record several jobs in one."""
        name = verdict if isinstance(verdict, str) else verdict.verdict
        for v in range(16):
            if _lib.text(_L.sbx_job_verdict_name(v)) == name:
                self._check(_L.sbx_transcript_finish(self._handle, v))
                return
        raise ValueError(f"verdict: {name!r} is not one (passed, failed, timed-out, denied, cancelled, error, "
                         "unavailable)")

    def save(self, path: str | os.PathLike) -> None:
        self._check(_L.sbx_transcript_save_file(self._handle, _lib.arg(os.fspath(path))))
