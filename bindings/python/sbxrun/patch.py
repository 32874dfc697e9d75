# SPDX-License-Identifier: MIT
"""A patch checked on this machine before anything is uploaded
(:class:`Patch`, doc/patch.md), and :func:`verify`: a project at a revision,
with a patch, through the job layer."""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import tempfile
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_uint8, c_uint32, c_void_p
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from . import _lib
from .client import _Handle
from .errors import error_for

if TYPE_CHECKING:
    from .client import Client
    from .jobs import Progress, Transcript

_L = _lib.lib

for _name, _res, _args in (
    ("sbx_patch_new", c_void_p, []),
    ("sbx_patch_free", None, [c_void_p]),
    ("sbx_patch_last_error", c_char_p, [c_void_p]),
    ("sbx_patch_set_limits", c_int, [c_void_p, c_size_t, c_size_t, c_size_t]),
    ("sbx_patch_set_threads", c_int, [c_void_p, c_size_t]),
    ("sbx_patch_set_base", c_int, [c_void_p, c_char_p, c_char_p]),
    ("sbx_patch_set_base_patch", c_int, [c_void_p, c_void_p]),
    ("sbx_patch_load_data", c_int, [c_void_p, ctypes.POINTER(c_uint8), c_size_t]),
    ("sbx_patch_load_file", c_int, [c_void_p, c_char_p]),
    ("sbx_patch_add_file", c_int, [c_void_p, c_int, c_char_p, ctypes.POINTER(c_uint8), c_size_t, c_uint32]),
    ("sbx_patch_check", c_int, [c_void_p]),
    ("sbx_patch_get_verdict", c_int, [c_void_p]),
    ("sbx_patch_broken_rule", c_int, [c_void_p]),
    ("sbx_patch_verdict_name", c_char_p, [c_int]),
    ("sbx_patch_rule_name", c_char_p, [c_int]),
    ("sbx_patch_file_count", c_size_t, [c_void_p]),
    ("sbx_patch_file_path", c_char_p, [c_void_p, c_size_t]),
    ("sbx_patch_file_old_path", c_char_p, [c_void_p, c_size_t]),
    ("sbx_patch_file_change", c_int, [c_void_p, c_size_t]),
    ("sbx_patch_file_old_mode", c_uint32, [c_void_p, c_size_t]),
    ("sbx_patch_file_new_mode", c_uint32, [c_void_p, c_size_t]),
    ("sbx_patch_file_additions", c_size_t, [c_void_p, c_size_t]),
    ("sbx_patch_file_deletions", c_size_t, [c_void_p, c_size_t]),
    ("sbx_patch_file_binary", c_int, [c_void_p, c_size_t]),
    ("sbx_patch_id", c_char_p, [c_void_p]),
    ("sbx_patch_save_data", c_int, [c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t)]),
    ("sbx_patch_to_json", c_int, [c_void_p, ctypes.POINTER(c_void_p)]),
    ("sbx_patch_save_tree_file", c_int, [c_void_p, c_char_p]),
    ("sbx_patch_save_tree_dir", c_int, [c_void_p, c_char_p]),
):
    _f = getattr(_L, _name)
    _f.restype, _f.argtypes = _res, _args

# The statuses that describe the patch rather than a fault: its verdict
# says the rest (SBX_E_PARSE, SBX_E_BUDGET_EXCEEDED, SBX_E_PATCH).
_VERDICT_STATUSES = (7, 14, 20)
_CHANGES = {"added": 1, "modified": 2, "deleted": 3, "renamed": 4, "copied": 5}
_CHANGE_NAMES = {v: k for k, v in _CHANGES.items()}
VERIFY_SCRIPTS = ("lint", "typecheck", "test", "build")


def _bytes(data: bytes | bytearray | memoryview | str):
    b = data.encode() if isinstance(data, str) else bytes(data)
    return ((c_uint8 * len(b)).from_buffer_copy(b) if b else None), len(b)


@dataclass(frozen=True)
class PatchFile:
    """One file a patch touches. Modes are git's (0o100644, 0o100755; 0
    for a side that does not exist)."""

    path: str
    old_path: str | None
    change: str
    old_mode: int
    new_mode: int
    additions: int
    deletions: int
    binary: bool


class Patch(_Handle):
    """A unified diff, or file operations, checked before anything is
    uploaded: is it safe (no absolute or ``..`` path, nothing in ``.git``,
    no symbolic link or submodule), does it apply to a base tree of a local
    repository (as ``git apply --check`` would say), and what does it do.

    A patch that is unsafe, malformed, too large or does not apply is not an
    exception: it is a :attr:`verdict`, with :attr:`message` saying why.
    What stops the check itself (no such repository or revision, a file
    that cannot be read) raises."""

    _free = _L.sbx_patch_free
    _last_error = _L.sbx_patch_last_error

    def __init__(self, diff: bytes | str | None = None, *, file: str | os.PathLike | None = None,
                 repo: str | os.PathLike | None = None, base: str | None = None, after: "Patch | None" = None,
                 max_bytes: int = 0, max_files: int = 0, max_file_bytes: int = 0, threads: int = 0):
        """``diff`` (bytes or text) or ``file`` (a path) is loaded at once;
        ``repo`` and ``base`` (a revision, default HEAD) set the tree it is
        checked against, or ``after``, a Patch checked before that applies:
        then the tree it leaves is the base (a series, as ``git apply``
        applies several patches in turn). Limits of 0 keep the library's
        defaults."""
        if diff is not None and file is not None:
            raise ValueError("Patch: give diff or file, not both")
        if after is not None and (repo is not None or base is not None):
            raise ValueError("Patch: after is the base; repo and base are not given with it")
        if after is not None and not isinstance(after, Patch):
            raise TypeError("Patch: after is a Patch")
        super().__init__(_L.sbx_patch_new())
        self._message = ""

        def steps() -> None:
            if max_bytes or max_files or max_file_bytes:
                self._check(_L.sbx_patch_set_limits(self._handle, max_bytes, max_files, max_file_bytes))
            if threads:
                self._check(_L.sbx_patch_set_threads(self._handle, threads))
            if after is not None:
                self._check(_L.sbx_patch_set_base_patch(self._handle, after._handle))
            elif repo is not None:
                self._check(_L.sbx_patch_set_base(self._handle, _lib.arg(os.fspath(repo)), _lib.arg(base)))
            elif base is not None:
                raise ValueError("Patch: base names a revision of repo; repo is not given")
            if diff is not None:
                self._answer(_L.sbx_patch_load_data(self._handle, *_bytes(diff)))
            elif file is not None:
                self._answer(_L.sbx_patch_load_file(self._handle, _lib.arg(os.fspath(file))))

        self._configure(steps, None)

    def _answer(self, status: int) -> None:
        """Raise unless the status is OK or one a verdict describes; keep
        the message (the library's is cleared by the next call)."""
        if status != _lib.OK and status not in _VERDICT_STATUSES:
            self._check(status)
        self._message = "" if status == _lib.OK else (_lib.text(_L.sbx_patch_last_error(self._handle)) or "")

    def add_file(self, change: str, path: str, data: bytes | str | None = None, mode: int = 0) -> None:
        """One file operation instead of a diff (a base must be set):
        ``"added"`` or ``"modified"`` with the file's whole new content
        (mode 0o644 or 0o755; 0 means 0o644), or ``"deleted"``. An unsafe
        path raises PatchError and one over the limits
        BudgetExceededError: that operation is refused, the others stay."""
        if change not in ("added", "modified", "deleted"):
            raise ValueError(f"change must be 'added', 'modified' or 'deleted', not {change!r}")
        buf, n = _bytes(data) if data is not None else (None, 0)
        self._check(_L.sbx_patch_add_file(self._handle, _CHANGES[change], _lib.arg(path), buf, n, mode))

    def check(self) -> str:
        """Check against the base (safety alone without one); returns the
        :attr:`verdict`: ``"applies"``, ``"safe"``, ``"does-not-apply"``,
        ``"unsafe"``, ``"malformed"`` or ``"too-large"``. A verdict the
        loading gave is final and returned as it is."""
        if self.verdict not in ("unchecked", "safe"):
            return self.verdict
        self._answer(_L.sbx_patch_check(self._handle))
        return self.verdict

    @property
    def verdict(self) -> str:
        """What is known: ``"unchecked"`` until loaded and checked."""
        return _lib.text(_L.sbx_patch_verdict_name(_L.sbx_patch_get_verdict(self._handle))) or "unknown"

    @property
    def ok(self) -> bool:
        """Whether the patch is safe and, with a base, applies."""
        return self.verdict in ("applies", "safe")

    @property
    def rule(self) -> str | None:
        """The rule an unsafe patch breaks (``"absolute"``, ``"dotdot"``,
        ``"git-dir"``, ``"symlink"``, ``"gitlink"``, ``"bad-path"``)."""
        r = _L.sbx_patch_broken_rule(self._handle)
        return _lib.text(_L.sbx_patch_rule_name(r)) if r else None

    @property
    def message(self) -> str:
        """Why the verdict is what it is ("" when the last load or check
        succeeded)."""
        self._handle  # a closed patch raises, as for the other properties
        return self._message

    @property
    def files(self) -> list[PatchFile]:
        h = self._handle
        return [PatchFile(path=_lib.text(_L.sbx_patch_file_path(h, i)) or "",
                          old_path=_lib.text(_L.sbx_patch_file_old_path(h, i)),
                          change=_CHANGE_NAMES.get(_L.sbx_patch_file_change(h, i), "unknown"),
                          old_mode=_L.sbx_patch_file_old_mode(h, i), new_mode=_L.sbx_patch_file_new_mode(h, i),
                          additions=_L.sbx_patch_file_additions(h, i), deletions=_L.sbx_patch_file_deletions(h, i),
                          binary=bool(_L.sbx_patch_file_binary(h, i)))
                for i in range(_L.sbx_patch_file_count(h))]

    @property
    def patch_id(self) -> str | None:
        """The id ``git patch-id --stable`` gives, once the patch is read."""
        return _lib.text(_L.sbx_patch_id(self._handle))

    @property
    def diff(self) -> bytes:
        """The patch as git's unified diff (the one built from file
        operations, after :meth:`check`)."""
        out, n = c_void_p(), c_size_t()
        self._check(_L.sbx_patch_save_data(self._handle, byref(out), byref(n)))
        try:
            return ctypes.string_at(out.value, n.value)
        finally:
            _L.sbx_free(out.value)

    def to_dict(self) -> dict[str, Any]:
        """verdict, rule, message, patchId, files and diffstat as one dict
        (the library's JSON, doc/patch.md)."""
        out = c_void_p()
        self._check(_L.sbx_patch_to_json(self._handle, byref(out)))
        return _lib.take_json(out.value)

    def save_tree(self, path: str | os.PathLike) -> None:
        """Write the base tree with the patch applied as a gzip tar."""
        self._check(_L.sbx_patch_save_tree_file(self._handle, _lib.arg(os.fspath(path))))

    def save_tree_dir(self, directory: str | os.PathLike) -> None:
        """Write that tree as files under ``directory`` (which must not
        exist, or be empty), ready for :meth:`Run.add_upload`."""
        self._check(_L.sbx_patch_save_tree_dir(self._handle, _lib.arg(os.fspath(directory))))


def _has_dependencies(package: dict[str, Any]) -> bool:
    return any(package.get(k) for k in ("dependencies", "devDependencies", "optionalDependencies",
                                        "peerDependencies"))


def _repo_of(project: str | os.PathLike) -> tuple[str, str]:
    """The repository around project (the directory holding .git) and
    project's path below it ("" at its top)."""
    real = d = os.path.realpath(project)
    while not os.path.lexists(os.path.join(d, ".git")):
        parent = os.path.dirname(d)
        if parent == d:
            raise error_for(5, f"{os.fspath(project)} is not inside a git repository "
                               "(verify sends the files tracked at a revision)")
        d = parent
    return d, os.path.relpath(real, d) if real != d else ""


@contextlib.contextmanager
def _checked_series(series: list, repo: str, spec: str | None):
    """The last Patch of the series checked in turn on the base (a Patch
    with no diff, the base itself, for none); PatchError names the first
    that is unsafe or does not apply."""
    held: list[Patch] = []
    try:
        for i, one in enumerate(series):
            where = {"after": held[-1]} if held else {"repo": repo, "base": spec}
            if isinstance(one, (bytes, bytearray, memoryview)):
                p = Patch(bytes(one), **where)
            elif isinstance(one, (str, os.PathLike)):
                p = Patch(file=one, **where)
            else:
                raise TypeError(f"patch: a path to a diff or its bytes, not {type(one).__name__}")
            held.append(p)
            if p.check() != "applies":
                which = f"patch {i + 1} of {len(series)}" if len(series) > 1 else "patch"
                raise error_for(20, f"{which}: {p.message}")
        if not held:
            held.append(Patch(repo=repo, base=spec))
        yield held[-1]
    finally:
        for p in held:
            p.close()


def _prepare(project: str | os.PathLike, patch: Any, base: str | None,
             scripts: Sequence[str], install: bool | None) -> tuple[str, list[str]]:
    """The project's tree at base with the patches applied, in a new
    temporary directory (returned; its ``tree`` is the workspace), and the
    jobs to run. Raises PatchError when a patch is not safe or does not
    apply."""
    for s in scripts:
        if s not in VERIFY_SCRIPTS:
            raise ValueError(f"scripts: {s!r} is not one of {', '.join(VERIFY_SCRIPTS)}")
    # A project below the repository's top is that directory's tree at the
    # revision, and the patch's paths are relative to it.
    repo, sub = _repo_of(project)
    spec = f"{base or 'HEAD'}:{sub}" if sub else base
    series = list(patch) if isinstance(patch, (list, tuple)) else [] if patch is None else [patch]
    tmp = tempfile.mkdtemp(prefix="sbxrun-verify-")
    try:
        with _checked_series(series, repo, spec) as last:
            last.save_tree_dir(os.path.join(tmp, "tree"))
        package: dict[str, Any] = {}
        pj = os.path.join(tmp, "tree", "package.json")
        if os.path.exists(pj):
            try:
                with open(pj, encoding="utf-8") as f:
                    package = json.load(f)
            except ValueError as e:
                raise ValueError(f"package.json of {os.fspath(project)}: {e}") from None
            if not isinstance(package, dict):
                raise ValueError(f"package.json of {os.fspath(project)}: not a JSON object")
        defined = package.get("scripts") or {}
        jobs = (["deps.install"] if install or (install is None and _has_dependencies(package)) else [])
        jobs += [f"verify.{s}" for s in scripts if s in defined]
        if not any(j.startswith("verify.") for j in jobs):
            raise ValueError(f"nothing to verify: package.json of {os.fspath(project)} has no "
                             f"{', '.join(scripts)} script")
        return tmp, jobs
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _plan_run(client: "Client", tmp: str, jobs: list[str], transcript: "Transcript | None", wall_ms: int):
    from .jobs import Run
    run = Run(client, transcript=transcript, wall_ms=wall_ms)
    try:
        run.add_upload(os.path.join(tmp, "tree"), "/vercel/sandbox")
        for j in jobs:
            run.add_job(j, inputs=None if j == "deps.install" else {"script": j.split(".", 1)[1]})
    except BaseException:
        run.close()
        raise
    return run


def verify(client: "Client", project: str | os.PathLike = ".", *,
           patch: bytes | str | os.PathLike | Sequence[bytes | str | os.PathLike] | None = None,
           base: str | None = None, scripts: Sequence[str] = VERIFY_SCRIPTS, install: bool | None = None,
           transcript: "Transcript | None" = None, wall_ms: int = 0, on_progress: "Progress | None" = None) -> dict:
    """Verify ``project`` (a directory of a git repository: its top, or a
    project below it, whose paths the patch's are relative to) at ``base``
    (default HEAD) with ``patch`` applied (a path to a diff, or its bytes; or
    a list of them, applied in turn, each on what the ones before it
    leave), as ``sbxrun verify`` does: the patches are checked here first
    (PatchError when one is unsafe or does not apply, and nothing is sent); the tree is
    uploaded into a new sandbox; ``deps.install`` runs when package.json
    declares dependencies (or ``install=True``), then ``verify.<name>``
    for each of ``scripts`` package.json defines. Returns the run's result
    (sbxrun.run.result/1); a failing script is its verdict, not an
    exception. ``on_progress`` is :meth:`Run.execute`'s."""
    tmp, jobs = _prepare(project, patch, base, scripts, install)
    try:
        with _plan_run(client, tmp, jobs, transcript, wall_ms) as run:
            return run.execute(on_progress=on_progress)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def verify_async(client: "Client", project: str | os.PathLike = ".", *,
                       patch: bytes | str | os.PathLike | Sequence[bytes | str | os.PathLike] | None = None,
                       base: str | None = None,
                       scripts: Sequence[str] = VERIFY_SCRIPTS, install: bool | None = None,
                       transcript: "Transcript | None" = None, wall_ms: int = 0,
                       on_progress: "Progress | None" = None) -> dict:
    """:func:`verify`, awaited on the running event loop (cancelling the
    task cancels the run and stops its sandbox)."""
    tmp, jobs = _prepare(project, patch, base, scripts, install)
    try:
        with _plan_run(client, tmp, jobs, transcript, wall_ms) as run:
            return await run.execute_async(on_progress=on_progress)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
