"""Tie an audit process's life to the worker that started it (Linux ``PR_SET_PDEATHSIG``).

A worker runs each audit as a child process and sets ``PANORAMIA_PARENT_PID``. When the worker
dies (even by SIGKILL) the kernel sends the child SIGKILL, so no orphaned audit keeps writing
artifacts while the service re-queues it. Elsewhere (not Linux) this is a no-op.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_ENV = "PANORAMIA_PARENT_PID"


def die_with_parent() -> None:
    """If started by a worker (``PANORAMIA_PARENT_PID`` set), exit when that worker exits."""
    expected = os.environ.get(PARENT_ENV)
    if not expected or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != int(expected):  # the worker died before prctl took effect
        os._exit(1)
