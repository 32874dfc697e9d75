# SPDX-License-Identifier: MIT
"""One exception class per libsbxrun status, named from ``sbx_status_name``:
``SBX_E_NOT_FOUND`` is :class:`NotFoundError`. All derive from
:class:`SbxError`, which carries the status, its name and the library's
message; a status this package does not know (a newer library) raises
:class:`SbxError` itself. Some also derive from the built-in exception a
Python programmer would catch: ``InvalidArgError`` is a ``ValueError``,
``NomemError`` a ``MemoryError``, ``TimeoutError_`` a ``TimeoutError``.
"""
from __future__ import annotations

from . import _lib


class SbxError(Exception):
    """A libsbxrun call failed.

    Attributes:
        status: the ``sbx_status`` code (an int).
        name: its constant's name, such as ``"SBX_E_NOT_FOUND"``.
        message: what the library said about this failure.
        error_code: the server's ``error.code`` when an answer carried one.
        http_status: the HTTP status of the answer that failed it (0: none).
    """

    def __init__(self, status: int, message: str, error_code: str | None = None, http_status: int = 0):
        self.status = status
        self.name = _lib.text(_lib.lib.sbx_status_name(status)) or f"SBX_E_{status}"
        self.message = message or (_lib.text(_lib.lib.sbx_strerror(status)) or "")
        self.error_code = error_code
        self.http_status = http_status
        super().__init__(f"{self.message} ({self.name})")


class InvalidArgError(SbxError, ValueError):
    """SBX_E_INVALID_ARG: an argument was not acceptable."""


class NomemError(SbxError, MemoryError):
    """SBX_E_NOMEM: out of memory."""


class IoError(SbxError, OSError):
    """SBX_E_IO: a local file or system call failed."""


class ParseError(SbxError, ValueError):
    """SBX_E_PARSE: input (JSON, a patch...) could not be parsed."""


class UnknownOptionError(SbxError, KeyError):
    """SBX_E_UNKNOWN_OPTION: no option of that name."""

    def __str__(self) -> str:  # KeyError quotes its argument
        return Exception.__str__(self)


class MisuseError(SbxError):
    """SBX_E_MISUSE: the call is not allowed in this state."""


class NotFoundError(SbxError, LookupError):
    """SBX_E_NOT_FOUND: no such sandbox, command, file..."""


class AuthError(SbxError, PermissionError):
    """SBX_E_AUTH: credentials missing, wrong or expired."""


class TransportError(SbxError, ConnectionError):
    """SBX_E_TRANSPORT: the endpoint could not be reached or the connection broke."""


class ProtocolError(SbxError):
    """SBX_E_PROTOCOL: the server's answer does not follow the protocol."""


class HttpError(SbxError):
    """SBX_E_HTTP: an error status not mapped to another code."""


class TimeoutError_(SbxError, TimeoutError):
    """SBX_E_TIMEOUT: a deadline passed."""


class CancelledError(SbxError):
    """SBX_E_CANCELLED: the operation was cancelled (Ctrl-C, or cancel())."""


class BudgetExceededError(SbxError):
    """SBX_E_BUDGET_EXCEEDED: a size, count or time budget was exceeded."""


class PolicyDeniedError(SbxError, PermissionError):
    """SBX_E_POLICY_DENIED: the command or network policy refused it."""


class UnsupportedError(SbxError, NotImplementedError):
    """SBX_E_UNSUPPORTED: not available in this build or on this endpoint."""


class ConflictError(SbxError):
    """SBX_E_CONFLICT: not in this state (stopped, exists...)."""


class RateLimitedError(SbxError):
    """SBX_E_RATE_LIMITED: the server kept answering "too many requests"."""


class IntegrityError(SbxError):
    """SBX_E_INTEGRITY: a hash chain or checksum does not match."""


class PatchError(SbxError):
    """SBX_E_PATCH: a patch does not apply, or touches paths it may not."""


class InternalError(SbxError):
    """SBX_E_INTERNAL: a bug in libsbxrun; please report it."""


class AgainError(SbxError):
    """SBX_E_AGAIN: not finished yet, or nothing available now."""


def class_name(status_name: str) -> str:
    """The class for a status constant's name: SBX_E_NOT_FOUND -> NotFoundError
    (TimeoutError_ keeps clear of the built-in's name)."""
    base = "".join(w.capitalize() for w in status_name.removeprefix("SBX_E_").split("_")) + "Error"
    return "TimeoutError_" if base == "TimeoutError" else base


_BY_NAME = {
    cls.__name__: cls
    for cls in (InvalidArgError, NomemError, IoError, ParseError, UnknownOptionError, MisuseError, NotFoundError,
                AuthError, TransportError, ProtocolError, HttpError, TimeoutError_, CancelledError,
                BudgetExceededError, PolicyDeniedError, UnsupportedError, ConflictError, RateLimitedError,
                IntegrityError, PatchError, InternalError, AgainError)
}


def error_for(status: int, message: str | None, error_code: str | None = None, http_status: int = 0) -> SbxError:
    """The exception for a status, by its name in this library."""
    name = _lib.text(_lib.lib.sbx_status_name(status))
    cls = _BY_NAME.get(class_name(name), SbxError) if name else SbxError
    return cls(status, message or "", error_code, http_status)


def check(status: int, last_error: bytes | None) -> None:
    """Raise for a failed status (the handle's last error is the message)."""
    if status != _lib.OK:
        raise error_for(status, _lib.text(last_error))
