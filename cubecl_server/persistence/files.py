"""The database's files on disk: created private, judged before they are read, and
moved aside when damaged.

The store runs what it reads (artifacts are code), so it reads only files private to
the user: directories it creates are 0700 and the database file 0600 whatever the
umask (SQLite gives the -wal and -shm the database file's mode), and a directory or
file owned by another user, or writable by group or others, is refused.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cubecl_server.errors import StoreError

__all__ = [
    "DIR_MODE", "FILE_MODE", "SIDE_FILES", "UntrustedStore", "check_private",
    "create_private_file", "exclusive_lock", "filesystem_cause", "make_private_directory",
    "move_aside", "os_cause", "read_only_filesystem", "writable", "write_denied",
]

DIR_MODE = 0o700
"""The mode of every directory the store creates."""
FILE_MODE = 0o600
"""The mode of the database file (and so of its -wal and -shm) and the lock file."""
SIDE_FILES = ("-wal", "-shm")
"""The suffixes of the files SQLite keeps beside a WAL database."""

# An I/O error with less than this free is a full disk: SQLite reports a -shm it
# cannot grow as a plain "disk I/O error", not as SQLITE_FULL.
_NEARLY_FULL_BYTES = 1 << 20

_ERRNO_CAUSES = {
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.ENOTDIR: "a part of its path is not a directory",
}


class UntrustedStore(StoreError):
    """A store this user must not read: its file or directory is owned by another
    user, or writable by group or others, so someone else could choose what it holds."""


def make_private_directory(directory: Path) -> None:
    """Create ``directory`` and any missing parents, each 0700; raises OSError."""
    missing: list[Path] = []
    probe = directory
    while not os.path.lexists(probe):
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile; check_private judges it
        # The umask can only remove bits from mkdir's mode; put back the owner's.
        os.chmod(path, DIR_MODE)
    if not directory.is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a directory", str(directory))


def create_private_file(path: Path) -> None:
    """Create ``path`` empty and 0600 unless it exists (SQLite makes a database of an
    empty file); raises OSError."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW,
                     FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def check_private(database: Path) -> None:
    """Raise UntrustedStore unless the directory of ``database`` and each of its files
    that exists are owned by this user and writable by nobody else."""
    me = os.geteuid()
    parts = [(database.parent, "directory", DIR_MODE), (database, "file", FILE_MODE)]
    parts += [(database.with_name(database.name + suffix), "file", FILE_MODE)
              for suffix in SIDE_FILES]
    for path, what, private in parts:
        try:
            st = os.stat(path)
        except OSError:
            continue  # absent (made private when created) or unreachable (fails later)
        if st.st_uid != me:
            raise UntrustedStore(
                f"cache database {database}: not read, because its {what} {path} is owned "
                f"by uid {st.st_uid}, not by you (uid {me}), so someone else chooses the "
                f"code it holds; remove it, or point CUBECL_CACHE_DIR at a directory of "
                f"your own"
            )
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            # A shared directory such as /tmp must stay shared: keep the cache elsewhere.
            elsewhere = ", or keep the database in a directory of your own" \
                if what == "directory" else ""
            raise UntrustedStore(
                f"cache database {database}: not read, because its {what} {path} is "
                f"writable by group or others (mode {stat.S_IMODE(st.st_mode):03o}), so "
                f"they could choose the code it holds; make it private (chmod "
                f"{private:o} {path}){elsewhere}"
            )


def read_only_filesystem(directory: Path) -> bool:
    """Whether ``directory`` is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def filesystem_cause(directory: Path) -> str | None:
    """"read-only file system" or "the disk is full" when ``directory``'s file system
    is one of those; None when it is neither or cannot be asked."""
    try:
        fs = os.statvfs(directory)
    except OSError:
        return None
    if fs.f_flag & os.ST_RDONLY:
        return "read-only file system"
    free = fs.f_bavail * fs.f_frsize
    if free < _NEARLY_FULL_BYTES:
        return f"the disk is full ({free} bytes free)"
    return None


def os_cause(exc: OSError) -> str:
    """A person's reading of an OSError met creating a directory or file."""
    if isinstance(exc, FileExistsError):
        return "it exists and is not a directory"
    return _ERRNO_CAUSES.get(exc.errno or 0) or exc.strerror or str(exc)


def writable(path: Path) -> bool:
    """Whether this process may write ``path`` (by its effective ids)."""
    return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)


def write_denied(path: Path) -> bool:
    """Whether the file ``path`` exists and this process may not open it for writing
    (permissions, or a read-only file system)."""
    # Opening, not os.access: a file renamed away meanwhile must read as absent, not
    # as one we may not write.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        return isinstance(exc, PermissionError) or exc.errno == errno.EROFS
    os.close(fd)
    return False


@contextmanager
def exclusive_lock(path: Path, timeout_s: float) -> Iterator[bool]:
    """Hold an exclusive flock on the file ``path`` (created 0600) while the block
    runs; yields whether it was taken within ``timeout_s``. Raises OSError when the
    file cannot be opened."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.01)
        yield True
    finally:
        os.close(fd)  # releases the lock


def move_aside(database: Path) -> Path:
    """Rename ``database`` and its -wal and -shm to ``<name>.corrupt-<UTC time>`` in the
    same directory; the new path of the database. Raises OSError."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
    aside = database.with_name(f"{database.name}.corrupt-{stamp}")
    os.rename(database, aside)
    for suffix in SIDE_FILES:
        try:
            os.rename(f"{database}{suffix}", f"{aside}{suffix}")
        except FileNotFoundError:
            pass
    return aside
