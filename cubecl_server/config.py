"""Configuration: a ``cubecl.toml`` file, overridden by ``CUBECL_*`` variables.

The file is the first ``cubecl.toml`` found in the working directory or one of its
parents. Every setting and its variable:

| file                        | variable                     | default              |
|-----------------------------|------------------------------|----------------------|
| ``backend``                 | ``CUBECL_BACKEND``           | ``"cpu"``            |
| ``[execution] mode``        | ``CUBECL_EXECUTION_MODE``    | ``"checked"``        |
| ``[execution] policy``      | ``CUBECL_EXECUTION_POLICY``  | ``"immediate"``      |
| ``[compilation] cache``     | ``CUBECL_COMPILATION_CACHE`` | ``true``             |
| ``[compilation] record``    | ``CUBECL_COMPILATION_RECORD``| ``false``            |
| ``[cache] dir``             | ``CUBECL_CACHE_DIR``         | the user cache dir   |
| ``[environment] name``      | ``CUBECL_ENVIRONMENT``       | ``"default"``        |
| ``[autotune] mode``         | ``CUBECL_AUTOTUNE``          | ``"on"``             |
| ``[cache] url``             | ``CUBECL_STORE_URL``         | none (no shared tier)|
| ``[cache] prefix``          | ``CUBECL_STORE_PREFIX``      | ``"cubecl:"``        |
| ``[cache] secret_file``     | ``CUBECL_STORE_SECRET`` (the | none                 |
|                             | secret itself)               |                      |

A relative ``secret_file`` is read from the config file's directory.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from cubecl_server.execution import ExecutionMode, ExecutionPolicy

__all__ = ["AUTOTUNE_MODES", "Config", "config", "reload_config", "find_config_file"]

AUTOTUNE_MODES = ("on", "off", "force")
"""``on``: tune on a miss, reuse stored results; ``off``: every tunable set runs its first
candidate; ``force``: tune every key again once per process and overwrite what is stored."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Config:
    """The settings in force for this process.

    ``cache_dir`` and ``environment`` are the file's values only: their variables
    are read where the cache is found (``compiler.store.environment_database``), so
    that ``switch_environment`` takes precedence over both.
    """

    backend: str = "cpu"
    execution_mode: ExecutionMode = ExecutionMode.CHECKED
    execution_policy: ExecutionPolicy = ExecutionPolicy.IMMEDIATE
    compilation_cache: bool = True
    compilation_record: bool = False
    cache_dir: str | None = None
    environment: str | None = None
    autotune: str = "on"
    store_url: str | None = None
    """The shared tier's Redis URL (``redis://``, ``rediss://``; ``+cluster`` for a
    Redis Cluster), or None for none."""
    store_prefix: str = "cubecl:"
    """What every key the shared tier writes starts with."""
    store_secret_file: Path | None = None
    """The file holding the fleet's signing secret (``CUBECL_STORE_SECRET`` overrides
    it; the variable is read where the secret is, never kept here)."""
    file: Path | None = None


def find_config_file(start: Path | None = None) -> Path | None:
    """The nearest ``cubecl.toml`` in ``start`` (default: the working directory) or above."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        candidate = d / "cubecl.toml"
        if candidate.is_file():
            return candidate
    return None


def _flag(name: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off")


def _table(data: dict[str, Any], name: str, path: Path | None) -> dict[str, Any]:
    t = data.get(name, {})
    if not isinstance(t, dict):
        raise ValueError(f"{path}: [{name}] must be a table")
    return t


def _setting(table: dict[str, Any], key: str, variable: str, default: bool,
             where: str) -> bool:
    """A boolean setting: its variable if set, else the file's value, else ``default``."""
    if variable in os.environ:
        return _flag(variable, os.environ[variable])
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{where}: {key} must be true or false, got {value!r}")
    return value


@lru_cache(maxsize=1)
def config() -> Config:
    """The process's configuration, read once (see :func:`reload_config`)."""
    path = find_config_file()
    data: dict[str, Any] = {}
    if path is not None:
        # Imported only when there is a file to read: most processes have none.
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - exercised on 3.10 only
            import tomli as tomllib
        with path.open("rb") as f:
            try:
                data = tomllib.load(f)
            except tomllib.TOMLDecodeError as e:
                raise ValueError(f"{path}: {e}") from None
    env = os.environ
    mode = env.get("CUBECL_EXECUTION_MODE") or _table(data, "execution", path).get(
        "mode", "checked")
    try:
        execution_mode = ExecutionMode(mode)
    except ValueError:
        raise ValueError(f"execution mode {mode!r}: expected 'checked' or 'unchecked'") from None
    policy = env.get("CUBECL_EXECUTION_POLICY") or _table(data, "execution", path).get(
        "policy", "immediate")
    try:
        execution_policy = ExecutionPolicy(policy)
    except ValueError:
        raise ValueError(f"execution policy {policy!r} (CUBECL_EXECUTION_POLICY or "
                         "[execution] policy): expected 'immediate' or 'deferred'") from None
    compilation = _table(data, "compilation", path)
    where = f"{path}: [compilation]"
    autotune = env.get("CUBECL_AUTOTUNE") or _table(data, "autotune", path).get("mode", "on")
    if autotune not in AUTOTUNE_MODES:
        raise ValueError(f"autotune mode {autotune!r} (CUBECL_AUTOTUNE or [autotune] mode): "
                         f"expected one of {', '.join(AUTOTUNE_MODES)}")
    cache = _table(data, "cache", path)
    for name in ("url", "prefix", "secret_file", "dir"):
        if not isinstance(cache.get(name, ""), str):
            raise ValueError(f"{path}: [cache] {name} must be a string")
    secret_file = cache.get("secret_file")
    if secret_file is not None and path is not None:
        secret_file = path.parent / Path(secret_file).expanduser()
    return Config(
        backend=env.get("CUBECL_BACKEND") or data.get("backend", "cpu"),
        execution_mode=execution_mode,
        execution_policy=execution_policy,
        compilation_cache=_setting(compilation, "cache", "CUBECL_COMPILATION_CACHE", True,
                                   where),
        compilation_record=_setting(compilation, "record", "CUBECL_COMPILATION_RECORD",
                                    False, where),
        cache_dir=cache.get("dir"),
        environment=_table(data, "environment", path).get("name"),
        autotune=autotune,
        store_url=env.get("CUBECL_STORE_URL") or cache.get("url") or None,
        store_prefix=env.get("CUBECL_STORE_PREFIX") or cache.get("prefix", "cubecl:"),
        store_secret_file=None if secret_file is None else Path(secret_file),
        file=path,
    )


def reload_config() -> Config:
    """Read the configuration again (after changing variables or the file)."""
    config.cache_clear()
    return config()
