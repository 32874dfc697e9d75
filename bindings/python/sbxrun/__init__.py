# SPDX-License-Identifier: MIT
"""libsbxrun for Python: run untrusted commands in sandboxes (sbxd, or Vercel
Sandbox) through the C library, loaded with ctypes.

    import sbxrun
    with sbxrun.Client("unix:/run/sbxd.sock", token="...") as c:
        with c.create_sandbox() as s:
            print(s.run(["echo", "hi"]).stdout)
"""
from . import _lib
from .client import Client, Command, CommandFailed, CompletedCommand, Output, Sandbox, Snapshot
from .errors import *  # noqa: F401,F403 (the exception classes)
from .errors import SbxError
from .jobs import Job, Run, Transcript
from .patch import Patch, PatchFile, verify, verify_async
from .safety import Decision, NetworkPolicy, Policy, RedactStream, Redactor

__all__ = ["Client", "Sandbox", "Snapshot", "Command", "Output", "CompletedCommand", "CommandFailed", "Run", "Job", "Transcript",
           "Policy", "Decision", "Redactor", "RedactStream", "NetworkPolicy", "Patch", "PatchFile", "verify",
           "verify_async",
           "SbxError", "library_version", "__version__"]

#: This package's version: the library's it was made with (the library
#: loaded must be this version or newer, of the same major version).
__version__ = _lib.PACKAGE_VERSION


def library_version() -> str:
    """The version of the libsbxrun loaded."""
    return _lib.version()
