"""The confined audit's sockets: a seccomp filter that lets it open none it does not need.

Landlock (:mod:`panoramia.sandbox`) mediates files and TCP ports, but not ``connect()`` to a
Unix socket named by a path: PostgreSQL's ``/var/run/postgresql/.s.PGSQL.5432`` or a Redis
socket answers any process that can name it. So, once the process is confined, this filter
(libseccomp, through :mod:`pyseccomp`) refuses ``socket()`` for every address family with
``EACCES`` (Python's ``PermissionError``), except, for an audit of an ``http`` target,
``AF_INET`` and ``AF_INET6`` (the target's TCP port is then the only one Landlock admits;
UDP stays open for name lookups). ``socketpair()`` stays allowed: its two ends reach nothing
but each other. ``io_uring`` is refused (``EPERM``) because its operations open and connect
sockets without passing through the filtered system call. System calls of another
architecture (a 32-bit ``int 0x80``, x32) kill the process: the filter rules on the native
one only.

The family is compared on the argument's low 32 bits only (the kernel reads an ``int``), so
high bits set in the register cannot slip a Unix socket past a rule. The filter holds for the
process and everything it starts, and cannot be lifted; it needs ``PR_SET_NO_NEW_PRIVS``,
which :func:`panoramia.sandbox.restrict` sets first.
"""

from __future__ import annotations

import errno
import socket
import sys

FAMILIES = range(64)
"""Address families the filter rules on: every one the kernel knows (``AF_MAX`` is 46 in
Linux 6.18) and room for later ones; past them ``socket()`` fails in the kernel anyway."""
NETWORK = frozenset({socket.AF_INET, socket.AF_INET6})
"""The families an ``http`` target's audit may open (its TCP port is Landlock's to admit)."""
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
LOW_WORD = 0xFFFF_FFFF


class FilterUnavailable(RuntimeError):
    """The kernel or the library refuses the filter (no seccomp, no libseccomp)."""


def available() -> str:
    """Why the filter cannot be installed here, or ``""`` where it can (libseccomp found,
    Linux)."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    try:
        import pyseccomp  # noqa: F401  (loads libseccomp.so.2)
    except (ImportError, RuntimeError, OSError) as error:
        return f"no libseccomp ({error})"
    return ""


def allowed_families(network: bool) -> frozenset[int]:
    """The address families ``socket()`` may open: :data:`NETWORK` with ``network``, none
    otherwise."""
    return NETWORK if network else frozenset()


def install(network: bool) -> None:
    """Load the filter into this process (see the module docstring); ``network``: the audit
    reaches an ``http`` target. FilterUnavailable when it cannot be loaded."""
    reason = available()
    if reason:
        raise FilterUnavailable(reason)
    import pyseccomp

    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        rules.set_attr(pyseccomp.Attr.ACT_BADARCH, pyseccomp.KILL_PROCESS)
        refused = pyseccomp.ERRNO(errno.EACCES)
        for family in FAMILIES:
            if family not in allowed_families(network):
                low = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, LOW_WORD, family)
                rules.add_rule(refused, "socket", low)
        for name in IO_URING:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        rules.load()
    except OSError as error:
        raise FilterUnavailable(f"seccomp: {error}") from None
