"""Where the cache lives: the cache root, the named environments under it, and their stores.

An environment is a subdirectory of the cache root holding one SQLite file. Switching
environments bumps a process-wide generation counter; stores and tune caches compare
:func:`generation` on access and reset themselves when it moved, and what cannot afford
even that comparison (a kernel loader's hit) registers a reset with :func:`on_switch`. The store
creates the cache root and environment directories 0700 and the file 0600, and reads
none that another user could have written (see :mod:`.files`).
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

from cubecl_server.errors import StoreError
from cubecl_server.logging import logger
from cubecl_server.persistence.sqlite import SqliteStore

__all__ = [
    "APP_NAME", "DATABASE_FILENAME", "DEFAULT_ENVIRONMENT", "ENV_CACHE_DIR", "ENV_ENVIRONMENT",
    "cache_root", "database_path", "environment_name", "environment_path", "generation",
    "on_switch", "open_store", "switch_environment", "validate_environment_name",
]

log = logger("persistence")

APP_NAME = "cubecl-server"
ENV_CACHE_DIR = "CUBECL_CACHE_DIR"
ENV_ENVIRONMENT = "CUBECL_ENVIRONMENT"
DEFAULT_ENVIRONMENT = "default"
DATABASE_FILENAME = "cubecl.sqlite3"

# ASCII only, so a name means the same directory on every filesystem; no leading dot,
# so neither ".." nor a hidden directory can be named.
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")

_switch_lock = threading.Lock()
_switched_to: str | None = None
_generation = 0
_on_switch: list[weakref.WeakMethod[Callable[[], None]]] = []

_stores_lock = threading.Lock()
_stores: dict[Path, SqliteStore | None] = {}


def cache_root(override: str | os.PathLike[str] | None = None) -> Path:
    """The cache root, absolute and resolved: ``override``, else ``$CUBECL_CACHE_DIR``,
    else the user cache directory of ``cubecl-server`` (platformdirs)."""
    chosen = override if override is not None else os.environ.get(ENV_CACHE_DIR) or None
    if chosen is None:
        # Imported only here: it costs a fresh process milliseconds (tempfile, shutil)
        # that a process told where its cache is need not pay.
        import platformdirs

        chosen = platformdirs.user_cache_dir(APP_NAME)
    return Path(chosen).expanduser().resolve()


def validate_environment_name(name: str) -> str:
    """``name`` if it can name an environment, else ValueError naming it.

    Allowed: ASCII letters, digits, ``.``, ``_`` and ``-``, 1 to 64 characters, not
    starting with ``.``; so a name can never leave the cache root.
    """
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ValueError(
            f"invalid environment name {name!r}: use 1-64 ASCII letters, digits, '.', '_' "
            "or '-', not starting with '.'"
        )
    return name


def environment_name(configured: str | None = None) -> str:
    """The current environment: the last :func:`switch_environment`, else
    ``$CUBECL_ENVIRONMENT``, else ``configured`` (a config file's name), else
    ``default``. ValueError if the name is invalid."""
    if _switched_to is not None:
        return _switched_to
    value = os.environ.get(ENV_ENVIRONMENT) or configured or DEFAULT_ENVIRONMENT
    try:
        return validate_environment_name(value)
    except ValueError as exc:
        raise ValueError(f"{ENV_ENVIRONMENT}: {exc}") from None


def switch_environment(name: str | None) -> None:
    """Make ``name`` the current environment for this process (None: back to
    ``$CUBECL_ENVIRONMENT`` or the default) and bump :func:`generation`."""
    global _switched_to, _generation
    if name is not None:
        validate_environment_name(name)
    with _switch_lock:
        _switched_to = name
        _generation += 1
        callbacks = [m for m in (ref() for ref in _on_switch) if m is not None]
        _on_switch[:] = [weakref.WeakMethod(m) for m in callbacks]
    for callback in callbacks:
        callback()


def generation() -> int:
    """How many times the environment was switched in this process (a plain int read)."""
    return _generation


def on_switch(callback: Callable[[], None]) -> None:
    """Call ``callback``, a bound method, after every later :func:`switch_environment`
    (on the switching thread), for as long as its object lives: it is held weakly, so
    registering does not keep a loader alive."""
    with _switch_lock:
        _on_switch.append(weakref.WeakMethod(callback))


def environment_path(
    name: str | None = None, root: str | os.PathLike[str] | None = None,
) -> Path:
    """The resolved directory of environment ``name`` (None: the current one) under
    the cache root (``root`` overrides it, as in :func:`cache_root`).

    ValueError if the name is invalid or the directory resolves outside the root
    (say, through a symbolic link).
    """
    env = environment_name() if name is None else validate_environment_name(name)
    base = cache_root(root)
    path = (base / env).resolve()
    if path == base or not path.is_relative_to(base):
        raise ValueError(f"environment {env!r} resolves to {path}, outside the cache root {base}")
    return path


def database_path(
    name: str | None = None, root: str | os.PathLike[str] | None = None,
) -> Path:
    """The SQLite file of environment ``name``: ``<root>/<env>/cubecl.sqlite3``."""
    return environment_path(name, root) / DATABASE_FILENAME


def open_store(path: str | os.PathLike[str] | None = None) -> SqliteStore | None:
    """The store on the SQLite file ``path`` (None: the current environment's
    :func:`database_path`), opened once per resolved path per process; None when the
    file cannot be used (not private to this user, missing or unwritable directory,
    full disk, locked past the busy timeout), with one warning per path per process.

    A damaged file is moved aside for a fresh one; a file that can only be read
    (read-only file system) is opened read-only and still serves loads.

    The answer, None included, is kept for the life of the process: caching then
    stays in memory rather than retrying the disk on every store lookup.
    """
    resolved = database_path() if path is None else Path(path).expanduser().resolve()
    with _stores_lock:
        if resolved in _stores:
            return _stores[resolved]
        try:
            store: SqliteStore | None = SqliteStore.open(resolved)
        except StoreError as exc:
            log.warning(
                "persistent kernel cache unavailable, keeping compiled kernels in memory "
                "for this process: %s", exc,
            )
            store = None
        _stores[resolved] = store
        return store
