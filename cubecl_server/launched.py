"""The kernels a workload launches, collected while it runs: what a bundle shipped for
that workload has to keep, and all it has to.

A collection is open while a :func:`collect` block runs, or for a whole process when
``CUBECL_LAUNCHED`` names a file (the collection is added to that file at exit). While
one is open, every kernel loader notes each artifact it hands out - its backend,
variant, build id, and the store namespace and key it lives under - and every tuner
notes the tune cache entry of each key it resolves. ``cubecl-server bundle export``
(:mod:`cubecl_server.persistence.bundle`) turns a collection into a bundle.

Collections are process-wide: a launch on any thread lands in every open one.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from cubecl_server.errors import StoreError
from cubecl_server.logging import logger

__all__ = [
    "ACTIVE", "ENV_LAUNCHED", "FORMAT", "Launched", "LaunchedEntry", "collect",
    "collect_process", "note",
]

log = logger("launched")

ENV_LAUNCHED = "CUBECL_LAUNCHED"
"""A file: the whole process is collected and added to it at exit."""
FORMAT = "cubecl-launched/1"
"""The ``format`` field of a saved collection."""

EntryKind = Literal["artifact", "tuning"]


@dataclass(frozen=True)
class LaunchedEntry:
    """One store entry a workload used: a kernel's artifact or a tuner's result, with
    the backend, variant and build id it is for and where the store keeps it."""

    kind: EntryKind
    name: str
    """The kernel's name, or the tuner's."""
    backend: str
    variant: str
    build_id: str
    namespace: str
    key: str


class Launched:
    """One collection: every entry noted while it was open, each once, in the order
    first met."""

    def __init__(self, entries: Iterable[LaunchedEntry] = ()) -> None:
        self._entries: dict[tuple[str, str], LaunchedEntry] = {}
        self._lock = threading.Lock()
        for entry in entries:
            self.add(entry)

    def add(self, entry: LaunchedEntry) -> None:
        """Note ``entry`` (again: no change)."""
        place = (entry.namespace, entry.key)
        if place not in self._entries:
            with self._lock:
                self._entries.setdefault(place, entry)

    @property
    def entries(self) -> list[LaunchedEntry]:
        """Every entry noted, in the order first met."""
        with self._lock:
            return list(self._entries.values())

    def targets(self) -> list[tuple[str, str, str]]:
        """The (backend, variant, build id) triples the entries are for, in the order met;
        a bundle holds one."""
        return list(dict.fromkeys((e.backend, e.variant, e.build_id) for e in self.entries))

    def to_json(self) -> dict[str, Any]:
        """The collection as a JSON object (what :meth:`save` writes)."""
        return {"format": FORMAT, "entries": [asdict(e) for e in self.entries]}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Launched:
        """The collection ``data`` describes; StoreError naming ``where`` if it is not one."""
        if not isinstance(data, dict) or data.get("format") != FORMAT \
                or not isinstance(data.get("entries"), list):
            raise StoreError(f"{where}: not a collection of launched kernels ({FORMAT})")
        fields = set(LaunchedEntry.__dataclass_fields__)
        out = cls()
        for i, item in enumerate(data["entries"]):
            if not isinstance(item, dict) or set(item) != fields \
                    or not all(isinstance(v, str) for v in item.values()) \
                    or item["kind"] not in ("artifact", "tuning"):
                raise StoreError(f"{where}: entry {i} is not a launched entry")
            out.add(LaunchedEntry(**item))
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Launched:
        """The collection saved in ``path``; StoreError if it cannot be read or is not one."""
        try:
            text = Path(path).read_text(encoding="utf-8")
            data = json.loads(text)
        except (OSError, ValueError) as e:
            raise StoreError(f"launched collection {path}: cannot be read: {e}") from e
        return cls.from_json(data, str(path))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Add this collection to the file ``path`` (made if missing), under a lock, so
        processes sharing one file each add what they launched."""
        target = Path(path)
        try:
            with open(f"{target}.lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                merged = Launched.load(target).entries if target.exists() else []
                whole = Launched([*merged, *self.entries])
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(whole.to_json(), f, indent=1)
                os.replace(tmp, target)
        except OSError as e:
            raise StoreError(f"launched collection {path}: cannot be written: {e}") from e


ACTIVE: list[Launched] = []
"""The collections open now. Loaders and tuners hold this very list and note entries
only while it is not empty: their hit path pays one truthiness check."""
_lock = threading.Lock()


def note(entry: LaunchedEntry) -> None:
    """Add ``entry`` to every open collection."""
    for collection in list(ACTIVE):
        collection.add(entry)


@contextmanager
def collect() -> Iterator[Launched]:
    """Collect what is launched, on any thread, while the block runs."""
    collection = Launched()
    with _lock:
        ACTIVE.append(collection)
    try:
        yield collection
    finally:
        with _lock:
            ACTIVE.remove(collection)


_process: list[str] = []


def collect_process() -> None:
    """Start collecting the whole process when ``CUBECL_LAUNCHED`` names a file (once
    per process; the collection is added to the file at exit)."""
    path = os.environ.get(ENV_LAUNCHED)
    if not path:
        return
    with _lock:
        if _process:
            return
        _process.append(path)
        collection = Launched()
        ACTIVE.append(collection)

    def save() -> None:
        try:
            collection.save(path)
        except StoreError as e:
            log.warning("%s: %s", ENV_LAUNCHED, e)

    atexit.register(save)
