# SPDX-License-Identifier: MIT
"""The safety layers as objects: the command :class:`Policy`, the
:class:`Redactor` of secrets, the :class:`NetworkPolicy` (doc/policy.md,
doc/redact.md, doc/netpolicy.md)."""
from __future__ import annotations

import ctypes
import json
import os
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint8, c_void_p
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from . import _lib
from .client import _Handle

_L = _lib.lib


def _bytes_arg(data: bytes | bytearray | memoryview | str):
    """(buffer, length) for a const uint8_t * argument."""
    b = data.encode() if isinstance(data, str) else bytes(data)
    return ((c_uint8 * len(b)).from_buffer_copy(b) if b else None), len(b)


def _take_json(out: c_void_p) -> Any:
    return _lib.take_json(out.value)


@dataclass(frozen=True)
class Decision:
    """What :meth:`Policy.check` decided: allowed, or the reason (a stable
    name such as "program_not_allowed") and a message."""

    allowed: bool
    reason: str
    message: str

    def __bool__(self) -> bool:
        return self.allowed


class Policy(_Handle):
    """The default-deny command policy, with the changes a caller makes
    (JSON or a file in the format of doc/policy.md, or one rule at a time)."""

    _free = _L.sbx_policy_free
    _last_error = _L.sbx_policy_last_error

    def __init__(self, json_text: str | Mapping[str, Any] | None = None, *, file: str | os.PathLike | None = None):
        super().__init__(_L.sbx_policy_new())

        def steps() -> None:
            if json_text is not None:
                t = json_text if isinstance(json_text, str) else json.dumps(json_text)
                self._check(_L.sbx_policy_load_json(self._handle, _lib.arg(t)))
            if file is not None:
                self._check(_L.sbx_policy_load_file(self._handle, _lib.arg(os.fspath(file))))

        self._configure(steps, None)

    def allow_program(self, program: str, job_type: str | None = None) -> None:
        self._check(_L.sbx_policy_allow_program(self._handle, _lib.arg(job_type), _lib.arg(program)))

    def deny_program(self, program: str, job_type: str | None = None) -> None:
        self._check(_L.sbx_policy_deny_program(self._handle, _lib.arg(job_type), _lib.arg(program)))

    def allow_package(self, spec: str, job_type: str | None = None) -> None:
        self._check(_L.sbx_policy_allow_package(self._handle, _lib.arg(job_type), _lib.arg(spec)))

    def check(self, argv: Sequence[str], job_type: str | None = None, cwd: str | None = None) -> Decision:
        """Whether argv may run (in cwd, as job_type's rules say). A denial
        is a Decision, not an exception; a bad argument raises."""
        arr = (c_char_p * len(argv))(*[_lib.arg(a) for a in argv])
        reason = c_int(0)
        msg = ctypes.create_string_buffer(1024)
        st = _L.sbx_policy_check(self._handle, _lib.arg(job_type), len(argv), arr, _lib.arg(cwd), byref(reason), msg,
                                 len(msg))
        if st not in (_lib.OK, 15):  # 15: SBX_E_POLICY_DENIED
            self._check(st)
        return Decision(st == _lib.OK, _lib.text(_L.sbx_policy_reason_name(reason.value)) or "",
                        msg.value.decode("utf-8", "replace"))


class Redactor(_Handle):
    """Secrets and credential shapes to replace in output."""

    _free = _L.sbx_redactor_free
    _last_error = _L.sbx_redactor_last_error

    def __init__(self, secrets: Sequence[bytes | str] = (), *, env: Sequence[str] = (), shapes: bool = True):
        super().__init__(_L.sbx_redactor_new())

        def steps() -> None:
            for s in secrets:
                self.add_secret(s)
            for name in env:
                self._check(_L.sbx_redactor_add_secret_env(self._handle, _lib.arg(name)))
            if not shapes:
                self._check(_L.sbx_redactor_set_shapes(self._handle, 0))

        self._configure(steps, None)

    def add_secret(self, value: bytes | str) -> None:
        buf, n = _bytes_arg(value)
        self._check(_L.sbx_redactor_add_secret(self._handle, buf, n))

    def redact(self, data: bytes | str) -> bytes:
        """The whole buffer redacted."""
        buf, n = _bytes_arg(data)
        out, out_len = c_void_p(), c_size_t()
        self._check(_L.sbx_redactor_redact(self._handle, buf, n, byref(out), byref(out_len)))
        try:
            return ctypes.string_at(out.value, out_len.value)
        finally:
            _L.sbx_free(out.value)

    def stream(self) -> "RedactStream":
        """A stream over the rules as they are now, for output in chunks."""
        return RedactStream(self)


class RedactStream(_Handle):
    """Chunks in, redacted bytes out; a match split across chunks is still found."""

    _free = _L.sbx_redact_stream_free
    _last_error = staticmethod(lambda h: b"")  # a stream has no message of its own

    def __init__(self, redactor: Redactor):
        super().__init__(_L.sbx_redact_stream_new(redactor._handle))

    def feed(self, data: bytes) -> bytes:
        buf, n = _bytes_arg(data)
        out, out_len = c_void_p(), c_size_t()
        self._check(_L.sbx_redact_stream_feed(self._handle, buf, n, byref(out), byref(out_len)))
        return ctypes.string_at(out.value, out_len.value) if out_len.value else b""

    def finish(self) -> bytes:
        out, out_len = c_void_p(), c_size_t()
        self._check(_L.sbx_redact_stream_finish(self._handle, byref(out), byref(out_len)))
        return ctypes.string_at(out.value, out_len.value) if out_len.value else b""

    @property
    def counts(self) -> dict[str, int]:
        """Replacements so far, by kind ("secret", "github"...)."""
        out = c_void_p()
        self._check(_L.sbx_redact_stream_counts_to_json(self._handle, byref(out)))
        return _take_json(out)


_MODES = {"allow-all": 0, "deny-all": 1, "custom": 2}


class NetworkPolicy(_Handle):
    """Where a sandbox may connect: "allow-all", "deny-all", or "custom"
    (domains, CIDRs, headers injected by the egress proxy)."""

    _free = _L.sbx_netpolicy_free
    _last_error = _L.sbx_netpolicy_last_error

    def __init__(self, mode: str | None = None, *, json_text: str | Mapping[str, Any] | None = None):
        super().__init__(_L.sbx_netpolicy_new())

        def steps() -> None:
            if json_text is not None:
                t = json_text if isinstance(json_text, str) else json.dumps(json_text)
                self._check(_L.sbx_netpolicy_load_json(self._handle, _lib.arg(t)))
            if mode is not None:
                self.mode = mode

        self._configure(steps, None)

    @classmethod
    def preset(cls, job_type: str, inputs: Mapping[str, str] | None = None) -> "NetworkPolicy":
        """The preset of a job type for its inputs (doc/netpolicy.md)."""
        n = cls()
        items = list((inputs or {}).items())
        keys = (c_char_p * len(items))(*[_lib.arg(k) for k, _ in items])
        values = (c_char_p * len(items))(*[_lib.arg(v) for _, v in items])
        try:
            n._check(_L.sbx_netpolicy_load_preset(n._handle, _lib.arg(job_type), len(items), keys, values))
        except BaseException:
            n.close()
            raise
        return n

    @property
    def mode(self) -> str:
        v = _L.sbx_netpolicy_mode(self._handle)
        return next((k for k, m in _MODES.items() if m == v), str(v))

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode: one of {', '.join(_MODES)}, not {mode!r}")
        self._check(_L.sbx_netpolicy_set_mode(self._handle, _MODES[mode]))

    def allow_domain(self, domain: str) -> None:
        self._check(_L.sbx_netpolicy_allow_domain(self._handle, _lib.arg(domain)))

    def allow_cidr(self, cidr: str) -> None:
        self._check(_L.sbx_netpolicy_allow_cidr(self._handle, _lib.arg(cidr)))

    def deny_cidr(self, cidr: str) -> None:
        self._check(_L.sbx_netpolicy_deny_cidr(self._handle, _lib.arg(cidr)))

    def inject_header(self, domain: str, name: str, value: str) -> None:
        """A header the egress proxy adds to requests to domain (its value
        never enters the sandbox)."""
        self._check(_L.sbx_netpolicy_inject_header(self._handle, _lib.arg(domain), _lib.arg(name), _lib.arg(value)))

    def to_json(self) -> dict:
        """The policy in the API form a sandbox takes (network_policy=...)."""
        out = c_void_p()
        self._check(_L.sbx_netpolicy_to_json(self._handle, byref(out)))
        return _take_json(out)
