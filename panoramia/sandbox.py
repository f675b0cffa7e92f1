"""Kernel confinement of an audit child with Linux Landlock (no privilege needed).

``python -m panoramia.sandbox --read DIR … --write DIR … --protect DIR … -- COMMAND …``
restricts itself, then replaces itself with ``COMMAND``; the restriction holds for that
command and everything it starts, and cannot be lifted. Afterwards the process may:

- read (and execute) only beneath the ``--read`` paths, except beneath any ``--protect``
  path (a read path that holds a protected one is opened up entry by entry around it);
- read and write only beneath the ``--write`` paths (they may lie inside protected ones:
  the audit's own run directory and artifact store inside the service's home).

Every file-system access right the running kernel's Landlock ABI knows is handled, so what is
not allowed is refused with ``EACCES``, whatever the file's permissions say. ``/dev/shm`` is
out of reach; GPU device files are allowed where they exist. Memory and CPU are not limited
here. Sockets: where libseccomp is found, :mod:`panoramia.socket_filter` refuses every
``socket()`` but an ``http`` target's (Landlock does not mediate a Unix socket named by a
path). Of ``/proc`` the process reads its own ``/proc/<pid>`` and the machine's figures
(:data:`PROC_READ`), never another process's command line or environment; processes it starts
read none of theirs (an audit starts none but a CatBoost target's
probe, :mod:`panoramia.modalities.tabular.catboost_probe`).

The system calls are made directly (``ctypes``; their numbers are the same on every Linux
architecture). :func:`landlock_abi` tells whether the kernel offers Landlock (0: it does not).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from panoramia import socket_filter

SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
HANDLED_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
"""The file-system rights each Landlock ABI version knows (5 and later: all 16)."""
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a folder) may hold."""
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SYM
WRITE |= MAKE_FIFO | MAKE_SOCK | REFER | TRUNCATE
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/sys",
               "/dev", "/run/systemd/resolve")  # fmt: skip
"""Read everywhere a Python, torch and their libraries look (the sandbox adds the Python
prefixes and ``sys.path`` itself)."""
PROC_READ = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime",
             "/proc/version", "/proc/filesystems", "/proc/sys", "/proc/driver",
             "/proc/pressure")  # fmt: skip
"""What the confined process reads of ``/proc`` beside its own ``/proc/<pid>`` (``/proc/self``):
the machine's figures, never another process's command line, environment or files."""
PROJECT_PACKAGES = ("panoramia", "hydra_plugins")
"""This project's packages, read where they are installed: the code, and the Hydra plug-ins'
namespace, whose ``panoramia_configs`` puts each modality's config folder on Hydra's search
path (an editable install keeps it beside the checkout, where Hydra must list it)."""
SYSTEM_WRITE = ("/dev/null",)
"""Written by libraries (discarded output)."""
DEVICES = ("/dev/nvidia*", "/dev/dri")
"""GPU devices an audit may open, write and control (``ioctl``), where they exist."""
SHARED = ("/dev/shm",)
"""Shared between processes: never reachable (another audit's shared memory lives there)."""
SECRETS = ("/etc/postgresql", "/etc/postgresql-common", "/etc/redis", "/etc/panoramia",
           "/etc/ssl/private", "/etc/celery", "/etc/default/panoramia")  # fmt: skip
"""Where database and broker servers and a packaged service keep their settings, trust rules
and keys, inside the readable ``/etc``: never readable (an operator names more with
``PANORAMIA_SANDBOX_PROTECT``)."""
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
LANDLOCK_RULE_NET_PORT = 2


class SandboxError(RuntimeError):
    """The kernel refused a Landlock call (or offers none)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


class _NetPortAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: object) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        error = ctypes.get_errno()
        raise SandboxError(f"Landlock system call {number}: {os.strerror(error)}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it offers none (old kernel, disabled, or not
    Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))  # fmt: skip
    except SandboxError:
        return 0


def describe() -> str:
    """One line for the service's start and each audit's record: Landlock's ABI and whether
    the socket filter (:mod:`panoramia.socket_filter`) holds."""
    abi = landlock_abi()
    if not abi:
        return "none: this kernel offers no Landlock (audits run unconfined)"
    missing = socket_filter.available()
    if missing:
        return f"landlock ABI {abi}; sockets open: {missing}"
    return f"landlock ABI {abi}; sockets: seccomp (socketpair only)"


def fully_confined() -> bool:
    """Whether both layers hold here: Landlock and the socket filter."""
    return bool(landlock_abi()) and not socket_filter.available()


@dataclass
class Confinement:
    """What a confined process may reach (module docstring)."""

    read: list[Path] = field(default_factory=list)
    write: list[Path] = field(default_factory=list)
    protect: list[Path] = field(default_factory=list)
    connect: list[int] = field(default_factory=list)
    """TCP ports the process may connect to (ABI ≥ 4; every other bind and connect is
    refused): an ``http`` target's, nothing else."""

    def with_defaults(self) -> Confinement:
        """Adds the system folders, the Python prefixes and ``sys.path``."""
        python = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent}
        paths = [Path(p) for p in sys.path if p]
        return Confinement(
            read=[*map(Path, SYSTEM_READ), *python, *paths, *_project_packages(), *self.read],
            write=[*map(Path, SYSTEM_WRITE), *self.write],
            protect=[*map(Path, SHARED), *map(Path, SECRETS), *self.protect],
            connect=list(self.connect),
        )


def _project_packages() -> list[Path]:
    """The folders of this project's packages (an editable install puts them on no
    ``sys.path`` entry); a namespace package's every folder."""
    import importlib.util

    folders = []
    for name in PROJECT_PACKAGES:
        spec = importlib.util.find_spec(name)
        found = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
        # an editable install's path hook is a name, not a folder: never read from where we are
        folders += [path for path in found if path.is_absolute() and path.is_dir()]
    return folders


def _is_under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _add(ruleset: int, path: Path, access: int, handled: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist grants nothing
    try:
        if not os.path.isdir(f"/proc/self/fd/{descriptor}"):
            access &= FILE_RIGHTS
        rule = _PathBeneathAttr(access & handled, descriptor)
        _syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
                 ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule),
                 ctypes.c_uint32(0))  # fmt: skip
    finally:
        os.close(descriptor)


def _add_around(
    ruleset: int, path: Path, access: int, handled: int, protect: list[Path], budget: list[int]
) -> None:
    """Allow ``path`` except beneath the protected paths that lie inside it: a folder that
    holds one is opened up entry by entry (links are not followed into it). ``path`` itself
    is allowed even inside a protected path: it was named."""
    inside = [p for p in protect if p != path and _is_under(p, path)]
    if not inside:
        _add(ruleset, path, access, handled)
        return
    budget[0] -= 1
    if budget[0] < 0:
        raise SandboxError(f"{path}: too many entries around the protected folders")
    for entry in sorted(os.listdir(path)):
        inner = path / entry
        if inner.is_symlink() or any(_is_under(inner, p) for p in inside):
            continue
        _add_around(ruleset, inner, access, handled, inside, budget)


def restrict(confinement: Confinement) -> int:
    """Confine this process (and what it execs) to ``confinement``; returns the ABI used.
    SandboxError when the kernel offers no Landlock or refuses a call."""
    abi = landlock_abi()
    if not abi:
        raise SandboxError("this kernel offers no Landlock")
    handled = HANDLED_BY_ABI.get(abi, (1 << 16) - 1)
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = _RulesetAttr(handled, net, scoped)
    size = 8 * (1 + (abi >= 4) + (abi >= 6))  # the fields this ABI knows
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr),
                       ctypes.c_size_t(size), ctypes.c_uint32(0))  # fmt: skip
    try:
        protect = [p.resolve() for p in confinement.protect]
        budget = [10_000]
        for path in [*map(Path, PROC_READ), Path(f"/proc/{os.getpid()}")]:
            _add(ruleset, path, READ, handled)  # its own process, never another's
        for path in confinement.read:
            resolved = path.resolve()
            _add_around(ruleset, resolved, READ, handled, protect, budget)
        for path in confinement.write:
            _add(ruleset, path.resolve(), WRITE, handled)
        for pattern in DEVICES:  # a GPU: open, write and ioctl its device files
            for device in Path("/").glob(pattern.lstrip("/")):
                _add(ruleset, device, READ | WRITE_FILE | IOCTL_DEV, handled)
        for port in confinement.connect if net else ():
            rule = _NetPortAttr(NET_CONNECT_TCP, port)
            _syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
                     ctypes.c_int(LANDLOCK_RULE_NET_PORT), ctypes.byref(rule),
                     ctypes.c_uint32(0))  # fmt: skip
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise SandboxError(f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
        _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    if not socket_filter.available():
        try:
            socket_filter.install(network=bool(confinement.connect))
        except socket_filter.FilterUnavailable as error:
            raise SandboxError(str(error)) from None
    return abi


def launcher(
    confinement: Confinement, command: list[str], *, chdir: Path | None = None
) -> list[str]:
    """The command line that runs ``command`` confined (read by :func:`main`), in ``chdir``
    once confined. Start it from a directory the audit cannot write (``/``)."""
    flags: list[str] = []
    for option, paths in (("--read", confinement.read), ("--write", confinement.write),
                          ("--protect", confinement.protect)):  # fmt: skip
        for path in paths:
            flags += [option, str(path)]
    for port in confinement.connect:
        flags += ["--connect", str(port)]
    if chdir is not None:
        flags += ["--chdir", str(chdir)]
    # -I: no current directory, script directory or PYTHON* variable on the path, so that
    # nothing an earlier (confined) attempt wrote can run here before the restriction.
    return [sys.executable, "-I", "-m", "panoramia.sandbox", *flags, "--", *command]


def main(argv: list[str] | None = None) -> None:
    """Confine, then exec the command after ``--`` (exit 3 when confinement fails)."""
    parser = argparse.ArgumentParser(prog="python -m panoramia.sandbox")
    for option in ("--read", "--write", "--protect"):
        parser.add_argument(option, action="append", type=Path, default=[])
    parser.add_argument("--connect", action="append", type=int, default=[])
    parser.add_argument("--chdir", type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    confinement = Confinement(args.read, args.write, args.protect, args.connect)
    try:
        restrict(confinement.with_defaults())
        if args.chdir is not None:
            os.chdir(args.chdir)
    except (SandboxError, OSError) as error:
        print(f"panoramia-sandbox: error: {error}", file=sys.stderr)
        sys.exit(3)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
