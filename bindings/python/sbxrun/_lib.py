# SPDX-License-Identifier: MIT
"""The C library, loaded with ctypes, and the prototypes of what the package calls.

Where the library is found, in order: the path in ``SBXRUN_LIBRARY``; a build
tree this package sits in (``<repo>/build/lib``); the system's search path
(``libsbxrun.so.1``, as installed). Every call made here releases the GIL
(ctypes.CDLL does), so other Python threads run while one waits.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p
from pathlib import Path

SONAME = "libsbxrun.so.1"
#: This package's version: the library's it was made with. The library
#: loaded must have its major version (its ABI: doc/abi.md) and be at least
#: as new, since the package may call what that version added.
PACKAGE_VERSION = "1.0.0"
ABI_MAJOR = int(PACKAGE_VERSION.split(".")[0])


def _candidates() -> list[str]:
    env = os.environ.get("SBXRUN_LIBRARY")
    if env:
        return [env]
    here = Path(__file__).resolve().parent
    out = []
    for build in ("build", "build-release"):
        p = here.parent.parent.parent / build / "lib" / SONAME
        if p.exists():
            out.append(str(p))
    out.append(SONAME)
    return out


def _load() -> ctypes.CDLL:
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError(
        "sbxrun: cannot load libsbxrun: " + "; ".join(errors)
        + " (install the library, or set SBXRUN_LIBRARY to its path)"
    )


def _num(version: str) -> int:
    """"1.2.3" as sbx_version_num() gives it: 0xMMmmpp."""
    major, minor, patch = (int(x) for x in version.split("."))
    return major << 16 | minor << 8 | patch


def _check_version(lib: ctypes.CDLL) -> None:
    """Refuse a library this package cannot use, before anything else is
    bound: an old or foreign one would otherwise fail on the first function
    it lacks, with a message that names neither version."""
    where = os.path.realpath(lib._name) if os.sep in lib._name else lib._name
    try:
        f = lib.sbx_version_num
    except AttributeError:
        raise ImportError(
            f"sbxrun {PACKAGE_VERSION}: {where} is not libsbxrun (it has no sbx_version_num); "
            f"this package needs libsbxrun {ABI_MAJOR}.x, {PACKAGE_VERSION} or newer"
        ) from None
    f.restype, f.argtypes = c_uint32, []
    n = f()
    found = f"{n >> 16}.{n >> 8 & 0xFF}.{n & 0xFF}"
    if n >> 16 != ABI_MAJOR or n < _num(PACKAGE_VERSION):
        raise ImportError(
            f"sbxrun {PACKAGE_VERSION} needs libsbxrun {ABI_MAJOR}.x, {PACKAGE_VERSION} or newer; "
            f"{where} is libsbxrun {found} (install a matching library, or set SBXRUN_LIBRARY to one)"
        )


lib = _load()
_check_version(lib)

#: STATUS codes the package names itself (the rest come from sbx_status_name).
OK = 0
E_AGAIN = 22
STDOUT = 1
STDERR = 2

# Callbacks: int (*)(sbx_stream, const uint8_t *, size_t, void *) and
# int (*)(const uint8_t *, size_t, void *).
OUTPUT_CB = ctypes.CFUNCTYPE(c_int, c_int, POINTER(c_uint8), c_size_t, c_void_p)
DATA_CB = ctypes.CFUNCTYPE(c_int, POINTER(c_uint8), c_size_t, c_void_p)
# void (*)(sbx_run *, sbx_run_event, size_t index, void *)
RUN_PROGRESS_CB = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_size_t, c_void_p)

_PROTOS = {
    # common
    "sbx_version": (c_char_p, []),
    "sbx_version_num": (c_uint32, []),
    "sbx_strerror": (c_char_p, [c_int]),
    "sbx_status_name": (c_char_p, [c_int]),
    "sbx_free": (None, [c_void_p]),
    # client
    "sbx_client_new": (c_void_p, []),
    "sbx_client_free": (None, [c_void_p]),
    "sbx_client_last_error": (c_char_p, [c_void_p]),
    "sbx_client_set_endpoint": (c_int, [c_void_p, c_char_p]),
    "sbx_client_set_credentials": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "sbx_client_set_option": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_client_endpoint": (c_char_p, [c_void_p]),
    "sbx_client_get_fd": (c_int, [c_void_p, POINTER(c_int)]),
    "sbx_client_get_timeout": (c_int, [c_void_p, POINTER(c_int64)]),
    "sbx_client_process": (c_int, [c_void_p, POINTER(c_size_t)]),
    "sbx_client_list_sandboxes_from_start": (c_int, [c_void_p, c_char_p, c_size_t, c_char_p, POINTER(c_void_p)]),
    "sbx_client_list_snapshots_from_start": (c_int, [c_void_p, c_char_p, c_size_t, c_char_p, POINTER(c_void_p)]),
    "sbx_client_list_sessions_from_start": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t, c_char_p,
                                                    POINTER(c_void_p)]),
    # ops
    "sbx_op_done": (c_int, [c_void_p]),
    "sbx_op_status": (c_int, [c_void_p]),
    "sbx_op_last_error": (c_char_p, [c_void_p]),
    "sbx_op_error_code": (c_char_p, [c_void_p]),
    "sbx_op_http_status": (c_int, [c_void_p]),
    "sbx_op_get_progress": (c_int, [c_void_p, POINTER(c_uint64), POINTER(c_int64), POINTER(c_uint64),
                                    POINTER(c_int64)]),
    "sbx_op_cancel": (c_int, [c_void_p]),
    "sbx_op_wait": (c_int, [c_void_p, c_int64]),
    "sbx_op_free": (None, [c_void_p]),
    "sbx_op_result_json": (c_char_p, [c_void_p]),
    # sandbox
    "sbx_sandbox_new": (c_void_p, [c_void_p]),
    "sbx_sandbox_free": (None, [c_void_p]),
    "sbx_sandbox_last_error": (c_char_p, [c_void_p]),
    "sbx_sandbox_set_option": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_sandbox_set_name": (c_int, [c_void_p, c_char_p]),
    "sbx_sandbox_set_persistent": (c_int, [c_void_p, c_int]),
    "sbx_sandbox_set_env": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_sandbox_set_network_policy_json": (c_int, [c_void_p, c_char_p]),
    "sbx_sandbox_create_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_sandbox_fetch_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_sandbox_fetch_named_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_sandbox_resume_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_sandbox_delete_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_sandbox_update_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_sandbox_refresh_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_sandbox_stop_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_sandbox_extend_timeout_start": (c_int, [c_void_p, c_int64, POINTER(c_void_p)]),
    "sbx_sandbox_mkdir_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_sandbox_write_file_start": (c_int, [c_void_p, c_char_p, POINTER(c_uint8), c_size_t, c_uint32,
                                             POINTER(c_void_p)]),
    "sbx_sandbox_read_stream_start": (c_int, [c_void_p, c_char_p, DATA_CB, c_void_p, POINTER(c_void_p)]),
    "sbx_sandbox_upload_start": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_void_p)]),
    "sbx_sandbox_download_start": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_void_p)]),
    "sbx_sandbox_id": (c_char_p, [c_void_p]),
    "sbx_sandbox_status": (c_char_p, [c_void_p]),
    "sbx_sandbox_name": (c_char_p, [c_void_p]),
    "sbx_sandbox_persistent": (c_int, [c_void_p]),
    "sbx_sandbox_runtime": (c_char_p, [c_void_p]),
    "sbx_sandbox_timeout_ms": (c_int64, [c_void_p]),
    "sbx_sandbox_json": (c_char_p, [c_void_p]),
    # snapshots
    "sbx_snapshot_new": (c_void_p, [c_void_p]),
    "sbx_snapshot_free": (None, [c_void_p]),
    "sbx_snapshot_last_error": (c_char_p, [c_void_p]),
    "sbx_sandbox_snapshot_start": (c_int, [c_void_p, c_int64, c_void_p, POINTER(c_void_p)]),
    "sbx_snapshot_fetch_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_snapshot_delete_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_snapshot_id": (c_char_p, [c_void_p]),
    "sbx_snapshot_status": (c_char_p, [c_void_p]),
    "sbx_snapshot_source_sandbox_id": (c_char_p, [c_void_p]),
    "sbx_snapshot_size_bytes": (c_int64, [c_void_p]),
    "sbx_snapshot_expires_at": (c_int64, [c_void_p]),
    "sbx_snapshot_json": (c_char_p, [c_void_p]),
    # jobs and runs
    "sbx_job_new": (c_void_p, [c_void_p]),
    "sbx_job_free": (None, [c_void_p]),
    "sbx_job_last_error": (c_char_p, [c_void_p]),
    "sbx_job_set_type": (c_int, [c_void_p, c_char_p]),
    "sbx_job_load_json": (c_int, [c_void_p, c_char_p]),
    "sbx_job_set_policy": (c_int, [c_void_p, c_void_p]),
    "sbx_job_set_transcript": (c_int, [c_void_p, c_void_p]),
    "sbx_job_set_output_cb": (c_int, [c_void_p, OUTPUT_CB, c_void_p]),
    "sbx_job_run_start": (c_int, [c_void_p, c_void_p, POINTER(c_void_p)]),
    "sbx_job_set_input": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_job_set_argv": (c_int, [c_void_p, c_size_t, POINTER(c_char_p)]),
    "sbx_job_set_timeout_ms": (c_int, [c_void_p, c_int64]),
    "sbx_job_set_env": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_job_add_secret": (c_int, [c_void_p, POINTER(c_uint8), c_size_t]),
    "sbx_job_add_artifact": (c_int, [c_void_p, c_char_p]),
    "sbx_job_set_option": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_job_verdict": (c_int, [c_void_p]),
    "sbx_job_verdict_name": (c_char_p, [c_int]),
    "sbx_job_exit_code": (c_int, [c_void_p]),
    "sbx_job_retryable": (c_int, [c_void_p]),
    "sbx_job_result_to_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_run_new": (c_void_p, [c_void_p]),
    "sbx_run_free": (None, [c_void_p]),
    "sbx_run_last_error": (c_char_p, [c_void_p]),
    "sbx_run_add_job": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_run_set_sandbox": (c_int, [c_void_p, c_void_p]),
    "sbx_run_add_upload": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_run_set_budget": (c_int, [c_void_p, c_int64, c_uint64, c_size_t]),
    "sbx_run_set_transcript": (c_int, [c_void_p, c_void_p]),
    "sbx_run_set_option": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_run_execute_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_run_set_progress_cb": (c_int, [c_void_p, RUN_PROGRESS_CB, c_void_p]),
    "sbx_run_verdict": (c_int, [c_void_p]),
    "sbx_run_job_count": (c_size_t, [c_void_p]),
    "sbx_run_job": (c_void_p, [c_void_p, c_size_t]),
    "sbx_run_result_to_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    # transcripts
    "sbx_transcript_new": (c_void_p, []),
    "sbx_transcript_free": (None, [c_void_p]),
    "sbx_transcript_last_error": (c_char_p, [c_void_p]),
    "sbx_transcript_set_file": (c_int, [c_void_p, c_char_p]),
    "sbx_transcript_load_file": (c_int, [c_void_p, c_char_p]),
    "sbx_transcript_verify": (c_int, [c_void_p, POINTER(c_size_t)]),
    "sbx_transcript_step_count": (c_size_t, [c_void_p]),
    "sbx_transcript_complete": (c_int, [c_void_p]),
    "sbx_transcript_head_hash": (c_char_p, [c_void_p]),
    "sbx_transcript_job_to_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_transcript_step_to_json": (c_int, [c_void_p, c_size_t, POINTER(c_void_p)]),
    "sbx_transcript_save_file": (c_int, [c_void_p, c_char_p]),
    "sbx_transcript_finish": (c_int, [c_void_p, c_int]),
    # safety
    "sbx_client_set_policy": (c_int, [c_void_p, c_void_p, c_char_p]),
    "sbx_client_set_redactor": (c_int, [c_void_p, c_void_p]),
    "sbx_policy_new": (c_void_p, []),
    "sbx_policy_free": (None, [c_void_p]),
    "sbx_policy_last_error": (c_char_p, [c_void_p]),
    "sbx_policy_allow_program": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_policy_deny_program": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_policy_allow_package": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_policy_load_json": (c_int, [c_void_p, c_char_p]),
    "sbx_policy_load_file": (c_int, [c_void_p, c_char_p]),
    "sbx_policy_check": (c_int, [c_void_p, c_char_p, c_size_t, POINTER(c_char_p), c_char_p, POINTER(c_int),
                                 c_char_p, c_size_t]),
    "sbx_policy_reason_name": (c_char_p, [c_int]),
    "sbx_redactor_new": (c_void_p, []),
    "sbx_redactor_free": (None, [c_void_p]),
    "sbx_redactor_last_error": (c_char_p, [c_void_p]),
    "sbx_redactor_add_secret": (c_int, [c_void_p, POINTER(c_uint8), c_size_t]),
    "sbx_redactor_add_secret_env": (c_int, [c_void_p, c_char_p]),
    "sbx_redactor_set_shapes": (c_int, [c_void_p, c_int]),
    "sbx_redactor_redact": (c_int, [c_void_p, POINTER(c_uint8), c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    "sbx_redact_stream_new": (c_void_p, [c_void_p]),
    "sbx_redact_stream_free": (None, [c_void_p]),
    "sbx_redact_stream_feed": (c_int, [c_void_p, POINTER(c_uint8), c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    "sbx_redact_stream_finish": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "sbx_redact_stream_counts_to_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_netpolicy_new": (c_void_p, []),
    "sbx_netpolicy_free": (None, [c_void_p]),
    "sbx_netpolicy_last_error": (c_char_p, [c_void_p]),
    "sbx_netpolicy_set_mode": (c_int, [c_void_p, c_int]),
    "sbx_netpolicy_mode": (c_int, [c_void_p]),
    "sbx_netpolicy_allow_domain": (c_int, [c_void_p, c_char_p]),
    "sbx_netpolicy_allow_cidr": (c_int, [c_void_p, c_char_p]),
    "sbx_netpolicy_deny_cidr": (c_int, [c_void_p, c_char_p]),
    "sbx_netpolicy_inject_header": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "sbx_netpolicy_load_preset": (c_int, [c_void_p, c_char_p, c_size_t, POINTER(c_char_p), POINTER(c_char_p)]),
    "sbx_netpolicy_load_json": (c_int, [c_void_p, c_char_p]),
    "sbx_netpolicy_to_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    # command
    "sbx_command_new": (c_void_p, [c_void_p]),
    "sbx_command_free": (None, [c_void_p]),
    "sbx_command_last_error": (c_char_p, [c_void_p]),
    "sbx_command_set_argv": (c_int, [c_void_p, c_size_t, POINTER(c_char_p)]),
    "sbx_command_set_cwd": (c_int, [c_void_p, c_char_p]),
    "sbx_command_set_env": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sbx_command_set_sudo": (c_int, [c_void_p, c_int]),
    "sbx_command_set_timeout_ms": (c_int, [c_void_p, c_int64]),
    "sbx_command_set_output_limit": (c_int, [c_void_p, c_size_t]),
    "sbx_command_run_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_command_set_detached": (c_int, [c_void_p, c_int]),
    "sbx_command_attach_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_command_fetch_start": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "sbx_command_wait_exit_start": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sbx_command_kill_start": (c_int, [c_void_p, c_int, POINTER(c_void_p)]),
    "sbx_command_read_output": (c_int, [c_void_p, c_int, POINTER(c_uint8), c_size_t, POINTER(c_size_t)]),
    "sbx_command_id": (c_char_p, [c_void_p]),
    "sbx_command_exit_code": (c_int, [c_void_p]),
    "sbx_command_output_bytes": (c_uint64, [c_void_p, c_int]),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def text(p: bytes | None) -> str | None:
    """A C string from the library as str (None stays None)."""
    return None if p is None else p.decode("utf-8", "replace")


def arg(s: str | None) -> bytes | None:
    """A str for the library (UTF-8; None stays NULL). A NUL inside is refused."""
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
    if "\0" in s:
        raise ValueError("a string for libsbxrun must not contain NUL")
    return s.encode("utf-8")


def take_json(ptr: int | None):
    """Parse a JSON text the library handed out (char *) and free it."""
    import json
    try:
        return json.loads(ctypes.string_at(ptr).decode("utf-8"))
    finally:
        lib.sbx_free(ptr)


def version() -> str:
    return text(lib.sbx_version()) or ""

