"""The tune cache: which candidate won each autotuning, kept in the environment's store.

Each tuning is one entry of the store (:class:`~.sqlite.SqliteStore`), under the
namespace ``tune/<backend>/<variant>/<tuner>`` and a key made of the device, a digest
of the candidates' names and the autotune key, so a changed candidate set is a
different key and is tuned again. The value is an envelope (:mod:`.codec`, kind
``autotune``) whose JSON header is the whole record of the tuning - the winner and
every candidate's timing or error - and whose payload is empty: no pickle, checked
against its SHA-256 on every read, and bound to its place like an artifact, so an
entry copied under another key is purged rather than believed.

Between processes the first writer wins (:meth:`TuneCache.put`); ``force`` mode
overwrites (:meth:`TuneCache.replace`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cubecl_server.logging import logger
from cubecl_server.persistence.codec import CorruptEntry, decode_artifact, encode_artifact
from cubecl_server.persistence.sqlite import PutResult, SqliteStore

__all__ = ["KIND", "PREFIX", "TuneCache", "TuneEntry", "entry_key", "entry_problem",
           "namespace"]

log = logger("tune")

PREFIX = "tune/"
"""Every tune cache namespace starts with this; no artifact namespace does."""
KIND = "autotune"
"""The envelope kind of a tune cache value."""


def _part(text: str) -> str:
    # A '/' inside a part would make namespaces of different tuners share prefixes.
    return text.replace("/", "_")


def namespace(backend: str, variant: str, tuner: str) -> str:
    """The namespace of one tuner's entries for one backend and variant."""
    return f"{PREFIX}{_part(backend)}/{_part(variant)}/{_part(tuner)}"


def entry_key(device: str, digest: str, key: str) -> str:
    """The store key of one tuning: the device, the candidates' digest, the key's text."""
    return f"{device}|{digest}|{key}"


@dataclass(frozen=True)
class TuneEntry:
    """The record of one tuning, as stored: who was timed, how fast, and who won.

    ``timings`` holds each timed candidate's median seconds per run; ``errors`` why a
    candidate was excluded (it failed to compile or run, or its output disagreed with
    the first candidate's).
    """

    tuner: str
    backend: str
    variant: str
    device: str
    key: str
    digest: str
    candidates: tuple[str, ...]
    winner: str
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    samples: int = 0
    method: str = ""
    created: float = 0.0

    @property
    def namespace(self) -> str:
        """The namespace this entry is stored under."""
        return namespace(self.backend, self.variant, self.tuner)

    @property
    def store_key(self) -> str:
        """The key this entry is stored under."""
        return entry_key(self.device, self.digest, self.key)

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON object."""
        return {"tuner": self.tuner, "backend": self.backend, "variant": self.variant,
                "device": self.device, "key": self.key, "digest": self.digest,
                "candidates": list(self.candidates), "winner": self.winner,
                "timings": dict(self.timings), "errors": dict(self.errors),
                "samples": self.samples, "method": self.method, "created": self.created}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuneEntry:
        """The entry a JSON object describes; CorruptEntry if it is not one."""
        try:
            strings = {k: data[k] for k in ("tuner", "backend", "variant", "device", "key",
                                            "digest", "winner", "method")}
            candidates, timings, errors = data["candidates"], data["timings"], data["errors"]
            samples, created = data["samples"], data["created"]
        except (KeyError, TypeError) as exc:
            raise CorruptEntry(f"tune entry lacks a field: {exc}") from None
        ok = (all(isinstance(v, str) for v in strings.values())
              and isinstance(candidates, list) and all(isinstance(c, str) for c in candidates)
              and isinstance(timings, dict)
              and all(isinstance(v, (int, float)) and math.isfinite(v)
                      for v in timings.values())
              and isinstance(errors, dict) and all(isinstance(v, str) for v in errors.values())
              and isinstance(samples, int) and isinstance(created, (int, float))
              and strings["winner"] in candidates)
        if not ok:
            raise CorruptEntry("tune entry has the wrong shape")
        return cls(candidates=tuple(candidates), timings={k: float(v) for k, v in timings.items()},
                   errors=dict(errors), samples=samples, created=float(created), **strings)


class TuneCache:
    """The tune cache entries of one store. Every method may raise StoreError."""

    def __init__(self, db: SqliteStore) -> None:
        self.db = db

    @property
    def read_only(self) -> bool:
        """Whether nothing can be stored (a read-only database)."""
        return self.db.read_only

    def get(self, backend: str, variant: str, tuner: str, device: str, digest: str,
            key: str) -> TuneEntry | None:
        """The stored tuning of ``key`` for this candidate set; None if there is none or
        it is corrupt (then it is purged, with a warning)."""
        ns = namespace(backend, variant, tuner)
        k = entry_key(device, digest, key)
        found = self.db.get(ns, k)
        return None if found is None else self._decode(ns, k, found.value)

    def put(self, entry: TuneEntry) -> TuneEntry:
        """Store ``entry`` unless another is already there; the entry now in force: the
        first writer's, when another process stored its tuning first."""
        ns, k = entry.namespace, entry.store_key
        result = self.db.put(ns, k, self._encode(entry))
        if result is PutResult.CONFLICT:
            found = self.db.get(ns, k)
            stored = None if found is None else self._decode(ns, k, found.value)
            if stored is not None:
                return stored
            # Purged as corrupt between the two reads: ours takes its place.
            self.db.replace(ns, k, self._encode(entry))
        return entry

    def replace(self, entry: TuneEntry) -> None:
        """Store ``entry`` over whatever is there (``force`` mode)."""
        self.db.replace(entry.namespace, entry.store_key, self._encode(entry))

    def entries(self, backend: str | None = None) -> list[TuneEntry]:
        """Every stored tuning (of ``backend`` only, when given), by namespace and key;
        corrupt ones are purged and left out."""
        prefix = PREFIX if backend is None else f"{PREFIX}{_part(backend)}/"
        out = []
        for info in self.db.keys(prefix):
            found = self.db.get(info.namespace, info.key)
            entry = None if found is None else self._decode(info.namespace, info.key,
                                                            found.value)
            if entry is not None:
                out.append(entry)
        return out

    def clear(self, backend: str | None = None, tuner: str | None = None) -> int:
        """Delete the stored tunings (of ``backend`` and/or ``tuner`` only, when given);
        how many were deleted."""
        prefix = PREFIX if backend is None else f"{PREFIX}{_part(backend)}/"
        if tuner is None:
            return self.db.clear(prefix)
        removed = 0
        for info in self.db.keys(prefix):
            if info.namespace.rsplit("/", 1)[-1] == _part(tuner):
                removed += self.db.delete(info.namespace, info.key)
        return removed

    @staticmethod
    def _encode(entry: TuneEntry) -> bytes:
        return encode_artifact(KIND, entry.to_dict(), b"", namespace=entry.namespace,
                               key=entry.store_key)

    def _decode(self, ns: str, key: str, value: bytes) -> TuneEntry | None:
        try:
            return _decode(ns, key, value)
        except CorruptEntry as exc:
            log.warning("tune cache entry %s / %s rejected (%s): purged, it will be tuned "
                        "again", ns, key, exc)
            self.db.delete(ns, key)
            return None


def _decode(ns: str, key: str, value: bytes) -> TuneEntry:
    """The tuning stored as ``value`` under (``ns``, ``key``); CorruptEntry if it is not
    one written there."""
    decoded = decode_artifact(value, namespace=ns, key=key)
    if decoded.kind != KIND:
        raise CorruptEntry(f"a {decoded.kind!r} entry, not an autotune result")
    entry = TuneEntry.from_dict(decoded.header)
    if (entry.namespace, entry.store_key) != (ns, key):
        raise CorruptEntry("its fields name another tuning")
    return entry


def entry_problem(ns: str, key: str, value: bytes) -> str | None:
    """Why ``value``, stored under (``ns``, ``key``), is not a tuning written there, or
    None."""
    try:
        _decode(ns, key, value)
    except CorruptEntry as e:
        return str(e)
    return None
