"""Several processes on one PoCL: what keeps their program builds and loads apart.

PoCL keeps every program in a directory of its cache, ``<topdir>/<name>``, and a
program made from a binary (``clCreateProgramWithBinary``) is unpacked into the
directory the *binary* names, not one of its own. Two things follow, each of which
aborted processes sharing one of our stores (``pocl_binary.c``, ``pocl_cache.c``,
``pocl_file_util.c`` of PoCL 3.1):

* With PoCL's kernel cache off (``POCL_KERNEL_CACHE=0``) the name is the build's
  scratch directory (``_UNCACHED_XXXXXX``, made with ``mkdtemp``), so every process
  that loads the binary unpacks into that one directory, and each one deletes it
  (``pocl_rm_rf``) when it releases its program. One process's delete pulls the
  files from under another's kernel compile ("Final linking of kernel ... failed",
  "Generic WG function binary does not exist") or from under its own concurrent
  delete ("Can't get stat() on ..."). Nothing of that mode outlives a process, so
  :func:`initializing` gives each process a private topdir: the race is gone, and
  nothing is lost.
* With the cache on the name is a hash of the source, shared on purpose (that is
  what makes a kernel compiled once per machine). But PoCL rewrites a file it finds
  already there by deleting it first and renaming its new copy in
  (``pocl_write_file``), both when two processes build the same source at once and
  when two unpack the same binary at once. A third process that serializes the
  program in between (``clGetProgramInfo(CL_PROGRAM_BINARIES)``) finds no
  ``program.bc`` and hands back a binary without it, which makes every process that
  loads it abort (``pocl_binary_get_kernels_metadata: Assertion 'len > 0'``).
  :func:`program_lock` takes a lock per program, across processes, around exactly
  those steps (build-and-serialize, and unpack-and-build), so only processes working
  on the same program ever wait for each other; the second builder then finds the
  first one's ``program.bc`` in PoCL's cache, so waiting costs it nothing it would
  not have spent building.

:func:`binary_problem` checks a PoCL binary's structure, so that a broken one (made
by a process that is not ours, or before this was fixed) is rejected instead of
aborting the process that loads it.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: no POSIX record locks; in-process locking only
    fcntl = None  # type: ignore[assignment]

__all__ = ["PLATFORM_NAME", "kernel_cache_on", "cache_topdir", "initializing",
           "is_pocl", "program_lock", "binary_problem", "private_topdir"]

log = logging.getLogger(__name__)

PLATFORM_NAME = "Portable Computing Language"
"""PoCL's ``CL_PLATFORM_NAME``."""

_PRIVATE_PREFIX = "cubecl-"
_OWNER_LOCK = ".cubecl-owner.lock"
_PROGRAM_LOCKS = "cubecl-opencl-programs.lock"
_STRIPES = 4093
"""Byte ranges of the program lock file: programs share one only by hash collision,
which just makes two unrelated builds wait for each other once in a while."""
_ORPHAN_AGE_S = 600.0
"""How old a private topdir without an owner lock must be before it is removed (a
live process locks its own within moments of PoCL creating it)."""


def kernel_cache_on(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether PoCL's kernel cache is on: PoCL reads ``POCL_KERNEL_CACHE`` as on only
    when it starts with "1" (so "true" is off), and is built with it on by default."""
    value = environ.get("POCL_KERNEL_CACHE")
    return value is None or value.startswith("1")


def cache_topdir(environ: Mapping[str, str] = os.environ) -> Path:
    """The directory PoCL keeps programs in, by the rule PoCL follows: ``POCL_CACHE_DIR``,
    else ``pocl/kcache`` (cache on) or ``pocl/uncached`` (off) under the XDG cache
    directory."""
    given = environ.get("POCL_CACHE_DIR")
    if given:
        return Path(given)
    leaf = Path("pocl", "kcache" if kernel_cache_on(environ) else "uncached")
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]) / leaf
    if environ.get("HOME"):
        return Path(environ["HOME"]) / ".cache" / leaf
    return Path("/tmp") / leaf


def is_pocl(platform_name: str) -> bool:
    """Whether a platform is PoCL (whose cache the locks here are about)."""
    return platform_name.strip() == PLATFORM_NAME


# ------------------------------------------------------------ private topdir (cache off)

_init_lock = threading.Lock()
_initialized = False
_shared: Path | None = None
"""PoCL's topdir when its cache is on, as it was when PoCL read its settings."""
_private: Path | None = None
_owner: IO[bytes] | None = None  # held open (and locked) for the process's lifetime


def private_topdir() -> Path | None:
    """This process's own PoCL topdir, when PoCL's cache is off and PoCL took it."""
    return _private


@contextmanager
def initializing() -> Iterator[None]:
    """Wrap the process's first ``clGetPlatformIDs``/``clGetDeviceIDs`` (where PoCL
    reads its settings): with PoCL's kernel cache off, PoCL gets a topdir of this
    process's own, inside the one it would have used.

    ``POCL_CACHE_DIR`` is set only for the duration (PoCL reads it once, at device
    initialisation), so processes started later still get their own. Leftovers of
    processes that are gone are removed here; not at exit, where PoCL may still be
    deleting program directories of its own in there.
    """
    global _initialized, _private, _shared
    with _init_lock:
        if _initialized:
            yield
            return
        _initialized = True
        if kernel_cache_on():
            _shared = cache_topdir()
            yield
            return
        base = cache_topdir()
        mine = base / f"{_PRIVATE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        before = os.environ.get("POCL_CACHE_DIR")
        os.environ["POCL_CACHE_DIR"] = str(mine)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("POCL_CACHE_DIR", None)
            else:
                os.environ["POCL_CACHE_DIR"] = before
        # PoCL creates its topdir when it initialises; no directory means no PoCL
        # here, or one that was initialised before (then it shares a directory with
        # other processes, and see warn_if_shared).
        if mine.is_dir():
            _private = mine
            _own(mine)
            _sweep(base, mine)


_warned = False


def warn_if_shared(platform_names: list[str]) -> None:
    """Say so (once) when PoCL is here, its cache is off and it did not take a
    private topdir (it was initialised in this process before the opencl runtime)."""
    global _warned
    if _warned or _private is not None or _shared is not None:
        return
    if any(map(is_pocl, platform_names)):
        _warned = True
        log.warning("PoCL was initialised in this process before cubecl_opencl could give "
                    "it a private cache directory: with POCL_KERNEL_CACHE=0, processes "
                    "that load the same program binaries at once can abort in PoCL")


def _own(topdir: Path) -> None:
    """Hold an exclusive lock on ``topdir``'s owner file until the process ends: what
    tells :func:`_sweep` in later processes that the directory is still in use."""
    global _owner
    if fcntl is None:
        return
    # Locked under another name, then renamed into place (the lock is the inode's):
    # a sweeper never sees the owner file unlocked.
    staging = topdir / f"{_OWNER_LOCK}.{secrets.token_hex(4)}"
    try:
        f = open(staging, "wb")  # held open on purpose
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(staging, topdir / _OWNER_LOCK)
    except OSError as e:
        log.debug("cannot lock %s: %s", topdir, e)
        return
    _owner = f


def _sweep(base: Path, mine: Path) -> None:
    """Remove the private topdirs of processes that have ended."""
    if fcntl is None:
        return
    try:
        others = [p for p in base.iterdir()
                  if p.name.startswith(_PRIVATE_PREFIX) and p != mine and p.is_dir()]
    except OSError:
        return
    for d in others:
        try:
            f = open(d / _OWNER_LOCK, "rb+")
        except FileNotFoundError:
            # Never locked (its process died at once, or has no lock support): gone
            # only if old and no process of its id runs here.
            try:
                stale = time.time() - d.stat().st_mtime > _ORPHAN_AGE_S
            except OSError:
                continue
            if stale and not _pid_alive(d.name):
                shutil.rmtree(d, ignore_errors=True)
            continue
        except OSError:
            continue
        with f:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its process is alive
            shutil.rmtree(d, ignore_errors=True)


def _pid_alive(name: str) -> bool:
    """Whether the process a private topdir's name ("cubecl-<pid>-<hex>") names runs."""
    try:
        pid = int(name[len(_PRIVATE_PREFIX):].split("-")[0])
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (ValueError, OSError):
        return True  # not ours to judge, or alive under another user
    return True


# ------------------------------------------------------------------ per-program lock

_stripe_locks = [threading.Lock() for _ in range(_STRIPES)]
_file_lock = threading.Lock()
_lock_file: IO[bytes] | None = None
_lock_file_pid = -1


def _program_lock_file() -> IO[bytes] | None:
    """The file whose byte ranges are the cross-process program locks: in PoCL's
    shared topdir, so exactly the processes that share PoCL's directories share it.

    One descriptor per process, never closed: POSIX drops all of a process's locks on
    a file when any descriptor of it is closed.
    """
    global _lock_file, _lock_file_pid
    if fcntl is None or _shared is None:
        return None  # nothing of PoCL's is shared with other processes
    with _file_lock:
        if _lock_file_pid == os.getpid():
            return _lock_file
        path = _shared / _PROGRAM_LOCKS
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _lock_file = open(path, "ab")  # held open on purpose
        except OSError as e:
            log.debug("no cross-process program lock (%s): %s", path, e)
            _lock_file = None
        _lock_file_pid = os.getpid()
        return _lock_file


@contextmanager
def program_lock(key: str) -> Iterator[None]:
    """Exclusive use of one program's PoCL directory while it is built and
    serialized, or unpacked from a binary and built: by this thread among the
    process's threads, and by this process among those sharing PoCL's cache.

    ``key`` names the program (a hex digest of its source and build options); both
    the build and the load of one program must pass the same one.
    """
    stripe = int(key[:12], 16) % _STRIPES
    with _stripe_locks[stripe]:
        f = _program_lock_file()
        if f is None or not _lock_range(f, stripe):
            yield
            return
        try:
            yield
        finally:
            fcntl.lockf(f, fcntl.LOCK_UN, 1, stripe)


def _lock_range(f: IO[bytes], stripe: int) -> bool:
    """Wait for byte ``stripe`` of ``f``; False (after logging why) when the file
    system has no such locks, so that the build goes ahead unprotected rather than
    not at all."""
    while True:
        try:
            fcntl.lockf(f, fcntl.LOCK_EX, 1, stripe)
            return True
        except OSError as e:
            if e.errno == errno.EDEADLK:
                # The kernel sees locks per process: this process holding another
                # stripe (in another thread) while waiting for one that a process
                # waiting for ours holds looks like a deadlock, though each holder
                # finishes without any further lock. Ask again.
                time.sleep(0.005)
                continue
            log.warning("no cross-process PoCL program lock (%s): %s", f.name, e)
            return False


# ------------------------------------------------------------------ binary structure

_MAGIC = b"poclbin\0"
_HEADER = struct.Struct("<8sQIIQI41s")
"""PoCL binary format 9's header: magic, device id, version, kernel count, flags,
root entry count, program build hash (``pocl_binary.c``)."""
_KNOWN_VERSION = 9


def binary_problem(payload: bytes) -> str | None:
    """What is wrong with a PoCL program binary's layout, or None.

    Checks the parts PoCL asserts on instead of returning an error: every root entry
    (``program.bc``) present, every kernel record inside the binary, nothing left
    over. A binary that is not PoCL's, or of a format version this does not know, is
    not judged (None).
    """
    if not payload.startswith(_MAGIC) or len(payload) < _HEADER.size:
        return None
    _, _, version, kernels, _, roots, _ = _HEADER.unpack_from(payload)
    if version != _KNOWN_VERSION:
        return None
    at = _HEADER.size
    for i in range(roots):
        if at + 8 > len(payload):
            return f"the binary ends inside its root entry {i}"
        (size,) = struct.unpack_from("<Q", payload, at)
        if size == 0:
            return (f"root entry {i} (program.bc) is empty: the program's directory "
                    "had no program.bc when the binary was taken")
        at += 8 + size
    if kernels == 0:
        return "the binary holds no kernel"
    for k in range(kernels):
        if at + 8 > len(payload):
            return f"the binary ends before kernel record {k}"
        (size,) = struct.unpack_from("<Q", payload, at)
        if size == 0:
            return f"kernel record {k} is empty"
        at += size
    if at > len(payload):
        return f"the kernel records run {at - len(payload)} bytes past the binary's end"
    if at < len(payload):
        return f"{len(payload) - at} bytes follow the last kernel record"
    return None
