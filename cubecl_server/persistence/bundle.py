"""Bundles: the store entries one workload needs, in one SQLite file that travels.

A bundle holds entries of one backend, variant and build id - kernels' artifacts and
tune cache results - each as the envelope the store keeps, signed with the fleet's
secret (:mod:`.signing`), and a manifest: format, backend, variant, build id, the
cubecl-server version, when it was made, and each entry's namespace, key, kind, name,
SHA-256 and size. The manifest is signed too, so it vouches for every checksum in it.

Importing checks, in this order: the manifest's signature (unless the user passed
``trust``); that the bundle is for this machine's backend, variant and build id (a
bundle that is not changes nothing); then each entry: present, of the size and
checksum the manifest says, signed with the secret (unless ``trust``), stored in
the namespace of the manifest's backend and variant, and bound to its place. A bad
entry is reported and skipped, never stored. Good entries are stored as
``imported``: never over a local entry, and replaced by the next local write.

Tables: ``manifest(id = 1, body, signature)`` (the body is the manifest's JSON text,
signed as its UTF-8 bytes) and ``entries(namespace, key, value)``.

A bundle is read before anything in it is checked, so reading it is bounded first:
the file must be an SQLite database whose schema is exactly these two tables, as
:func:`export_bundle` writes them (no view, trigger, index or column of anyone
else's, each of which SQLite would run or compute while reading); every statement
stops after :data:`MAX_STEPS` steps of SQLite's machine; the manifest is at most
:data:`MAX_MANIFEST` bytes and decoded by :func:`cubecl_server.bounded.loads`; and
each entry's size is checked against the manifest's (and the file's) before its
bytes are read.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from cubecl_server import __version__, bounded
from cubecl_server.errors import StoreError
from cubecl_server.persistence import tune_cache
from cubecl_server.persistence.codec import (
    CorruptEntry,
    checksum,
    decode_artifact,
    split_signature,
    with_signature,
)
from cubecl_server.persistence.namespaces import artifact_prefix
from cubecl_server.persistence.signing import BadSignature, Secret
from cubecl_server.persistence.sqlite import PutResult, SqliteStore

__all__ = [
    "FORMAT", "MAX_MANIFEST", "MAX_STEPS", "Bundle", "BundleEntry", "BundleError",
    "EntryProblem", "ImportReport", "Manifest", "Place", "Target", "artifact_prefix",
    "export_bundle", "import_bundle", "read_bundle", "verify_entries",
]

FORMAT = "cubecl-bundle/1"
"""The ``format`` field of a bundle's manifest."""

MAX_MANIFEST = 64 << 20
"""The longest manifest text a bundle may hold (a few hundred bytes an entry)."""
MAX_STEPS = 10_000_000
"""Steps of SQLite's virtual machine one statement on a bundle may take: each of ours
reads one row by its key, a few thousand steps."""
_PROGRESS_EVERY = 1000
"""Steps between two calls of the progress handler that counts them."""

_TABLES = {
    "manifest": "CREATE TABLE manifest (id INTEGER PRIMARY KEY CHECK (id = 1),"
                " body TEXT NOT NULL, signature TEXT NOT NULL)",
    "entries": "CREATE TABLE entries (namespace TEXT NOT NULL, key TEXT NOT NULL,"
               " value BLOB NOT NULL, PRIMARY KEY (namespace, key))",
}
"""The tables of a bundle, as :func:`export_bundle` creates them and a reader expects
them (SQLite keeps each statement's text)."""
_SCHEMA = {("table", "manifest", "manifest", _TABLES["manifest"]),
           ("table", "entries", "entries", _TABLES["entries"]),
           ("index", "sqlite_autoindex_entries_1", "entries", None)}
"""Every row a bundle's ``sqlite_master`` holds: the tables and the index of the
entries' primary key."""
_SQLITE_MAGIC = b"SQLite format 3\0"

EntryKind = Literal["artifact", "tuning"]
_KINDS: dict[str, str | None] = {"artifact": None, "tuning": tune_cache.KIND}
"""Each entry kind and the envelope kind it must hold (None: any but a tuning's)."""


class BundleError(StoreError):
    """A bundle that cannot be read, written or imported at all, with why."""


@dataclass(frozen=True)
class Target:
    """What a bundle is for: a backend, a variant of it and a build id."""

    backend: str
    variant: str
    build_id: str


@dataclass(frozen=True)
class Place:
    """An entry to export: its kind, its kernel's or tuner's name, and where the store
    keeps it."""

    kind: EntryKind
    name: str
    namespace: str
    key: str


@dataclass(frozen=True)
class BundleEntry:
    """One entry as the manifest describes it."""

    kind: EntryKind
    name: str
    namespace: str
    key: str
    checksum: str
    size: int


@dataclass(frozen=True)
class Manifest:
    """What a bundle holds and what for."""

    target: Target
    version: str
    created: float
    entries: tuple[BundleEntry, ...]

    def to_text(self) -> str:
        """The manifest's JSON text, as stored and signed."""
        return json.dumps({"format": FORMAT, "backend": self.target.backend,
                           "variant": self.target.variant, "build_id": self.target.build_id,
                           "cubecl_server": self.version, "created": self.created,
                           "entries": [asdict(e) for e in self.entries]},
                          sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str, where: str) -> Manifest:
        """The manifest ``text`` holds; BundleError naming ``where`` if it is not one."""
        try:
            d = bounded.loads(text, max_bytes=MAX_MANIFEST, max_depth=4)
            if not isinstance(d, dict) or not isinstance(d.get("entries"), list):
                raise TypeError("not an object with a list of entries")
            if d["format"] != FORMAT:
                raise BundleError(f"{where}: bundle format {d['format']!r}, expected {FORMAT}")
            strings = [d[k] for k in ("backend", "variant", "build_id", "cubecl_server")]
            entries = tuple(BundleEntry(**e) for e in d["entries"])
            created = d["created"]
        except BundleError:
            raise
        except (ValueError, KeyError, TypeError) as e:
            raise BundleError(f"{where}: the bundle's manifest is malformed ({e})") from e
        ok = all(isinstance(s, str) for s in strings) and isinstance(created, (int, float)) \
            and all(e.kind in _KINDS and isinstance(e.size, int)
                    and all(isinstance(v, str) for v in (e.name, e.namespace, e.key,
                                                         e.checksum))
                    for e in entries)
        places = {(e.namespace, e.key) for e in entries}
        if not ok or len(places) != len(entries):
            raise BundleError(f"{where}: the bundle's manifest is malformed")
        return cls(Target(*strings[:3]), strings[3], float(created), entries)


@dataclass(frozen=True)
class Bundle:
    """A bundle as read: its manifest, and whether its signature holds (None: not
    checked, no secret given)."""

    path: Path
    manifest: Manifest
    signed: bool | None


@dataclass(frozen=True)
class EntryProblem:
    """An entry that was not (or would not be) imported, and why."""

    entry: BundleEntry
    reason: str


@dataclass
class ImportReport:
    """What one import did: ``applicable`` false means nothing was looked at further."""

    bundle: Bundle
    applicable: bool
    imported: list[BundleEntry] = field(default_factory=list)
    already: list[BundleEntry] = field(default_factory=list)
    """Entries this store held already, the same or a local one (kept)."""
    problems: list[EntryProblem] = field(default_factory=list)


class _Steps:
    """The progress handler of a bundle's connection: it stops a statement that has
    taken :data:`MAX_STEPS` steps, counting from :meth:`reset`."""

    def __init__(self) -> None:
        self.calls = 0

    def reset(self) -> None:
        """Start counting for the next statement."""
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return int(self.calls * _PROGRESS_EVERY > MAX_STEPS)


class _BundleFile:
    """An open bundle whose schema has been checked, every statement on it bounded."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn
        self._steps = _Steps()
        conn.set_progress_handler(self._steps, _PROGRESS_EVERY)

    def row(self, sql: str, params: tuple[object, ...] = ()) -> tuple[object, ...] | None:
        """The first row ``sql`` gives, within :data:`MAX_STEPS` steps."""
        self._steps.reset()
        try:
            row: tuple[object, ...] | None = self._conn.execute(sql, params).fetchone()
        except sqlite3.OperationalError as e:
            if self._steps.calls * _PROGRESS_EVERY > MAX_STEPS:
                raise BundleError(f"bundle {self.path}: a query took more than {MAX_STEPS} "
                                  "steps; not a bundle this program wrote") from e
            raise
        return row

    def check_schema(self) -> None:
        """BundleError unless the schema is exactly a bundle's (:data:`_SCHEMA`)."""
        self._steps.reset()
        rows = self._conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                  "LIMIT ?", (len(_SCHEMA) + 1,)).fetchall()
        if set(rows) != _SCHEMA or len(rows) != len(_SCHEMA):
            extra = sorted(f"{r[0]} {r[1]}" for r in rows if r not in _SCHEMA)
            raise BundleError(f"bundle {self.path}: its schema is not a bundle's"
                              + (f" (it holds {', '.join(extra)})" if extra else "")
                              + "; nothing in it is read")


@contextmanager
def _reading(path: Path) -> Iterator[_BundleFile]:
    if not path.is_file():
        raise BundleError(f"bundle {path}: no such file")
    try:
        with path.open("rb") as f:
            magic = f.read(len(_SQLITE_MAGIC))
    except OSError as e:
        raise BundleError(f"bundle {path}: cannot be read: {e}") from e
    if magic != _SQLITE_MAGIC:
        raise BundleError(f"bundle {path}: not an SQLite database, so not a bundle")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as e:
        raise BundleError(f"bundle {path}: cannot be opened: {e}") from e
    try:
        # A bundle comes from elsewhere: its schema must not run anything, and is
        # checked to hold nothing that could (the setting alone lets views run).
        conn.execute("PRAGMA trusted_schema = OFF")
        bundle = _BundleFile(path, conn)
        bundle.check_schema()
        yield bundle
    except sqlite3.Error as e:
        raise BundleError(f"bundle {path}: not a bundle, or damaged ({e})") from e
    finally:
        conn.close()


def read_bundle(path: str | os.PathLike[str], secret: Secret | None = None) -> Bundle:
    """The bundle in ``path``, its manifest's signature checked with ``secret`` when
    given. BundleError if the file is not a readable bundle."""
    path = Path(path)
    with _reading(path) as f:
        sizes = f.row("SELECT typeof(body), length(body), typeof(signature), "
                      "length(signature) FROM manifest WHERE id = 1")
        if sizes is None or sizes[0] != "text" or sizes[2] != "text":
            raise BundleError(f"bundle {path}: it has no manifest")
        if not isinstance(sizes[1], int) or not isinstance(sizes[3], int) \
                or sizes[1] > MAX_MANIFEST or sizes[3] > 1024:
            raise BundleError(f"bundle {path}: its manifest is larger than {MAX_MANIFEST} "
                              "characters, or its signature than 1 KiB")
        row = f.row("SELECT body, signature FROM manifest WHERE id = 1")
    if row is None or not isinstance(row[0], str) or not isinstance(row[1], str):
        raise BundleError(f"bundle {path}: it has no manifest")
    manifest = Manifest.from_text(row[0], f"bundle {path}")
    signed = None if secret is None else secret.check_text(row[0].encode(), row[1])
    return Bundle(path, manifest, signed)


def _check(entry: BundleEntry, value: object, manifest: Manifest,
           secret: Secret | None) -> bytes:
    """The unsigned envelope of one entry once every check holds; CorruptEntry saying
    which did not (``secret`` None: signatures not checked)."""
    if not isinstance(value, bytes):
        raise CorruptEntry("missing from the bundle")
    if len(value) != entry.size or checksum(value) != entry.checksum:
        raise CorruptEntry("its bytes do not match the manifest's checksum and size")
    if secret is not None:
        envelope = secret.verify(value)
    else:
        envelope = with_signature(split_signature(value)[0], b"")
    target = manifest.target
    prefix = artifact_prefix(target.backend, manifest.version, target.variant) \
        if entry.kind == "artifact" else tune_cache.namespace(target.backend, target.variant, "")
    if not entry.namespace.startswith(prefix):
        raise CorruptEntry(f"its namespace {entry.namespace} is not the bundle's backend "
                           "and variant")
    decoded = decode_artifact(envelope, namespace=entry.namespace, key=entry.key)
    wanted = _KINDS[entry.kind]
    if (decoded.kind == tune_cache.KIND) != (wanted is not None):
        raise CorruptEntry(f"it holds a {decoded.kind!r} entry, not a {entry.kind}")
    return envelope


def _entries(bundle: Bundle, secret: Secret | None,
             ) -> Iterator[tuple[BundleEntry, bytes | None, str | None]]:
    """Each manifest entry with its checked envelope, or None and why it fails."""
    with _reading(bundle.path) as f:
        for entry in bundle.manifest.entries:
            where = (entry.namespace, entry.key)
            # Its size first: only bytes the manifest accounts for are read.
            size = f.row("SELECT typeof(value), length(value) FROM entries "
                         "WHERE namespace = ? AND key = ?", where)
            if size is None or size[0] != "blob":
                row = None
            elif size[1] != entry.size:
                yield entry, None, f"it is {size[1]} bytes, the manifest says {entry.size}"
                continue
            else:
                row = f.row("SELECT value FROM entries WHERE namespace = ? AND key = ?",
                            where)
            try:
                yield entry, _check(entry, None if row is None else row[0], bundle.manifest,
                                    secret), None
            except BadSignature as e:
                yield entry, None, f"signature fails: {e}"
            except CorruptEntry as e:
                yield entry, None, str(e)


def verify_entries(bundle: Bundle, secret: Secret | None) -> list[EntryProblem]:
    """Every entry of ``bundle`` that fails a check (``secret`` None: all but the
    signatures), without importing anything."""
    return [EntryProblem(e, why) for e, _, why in _entries(bundle, secret) if why is not None]


def import_bundle(path: str | os.PathLike[str], db: SqliteStore, target: Target,
                  secret: Secret | None, *, trust: bool = False,
                  step: Callable[[str], None] | None = None) -> ImportReport:
    """Import the bundle in ``path`` into ``db`` for a machine of ``target``.

    Without ``trust``, ``secret`` is required and the manifest and each entry must be
    signed with it (BundleError otherwise: nothing is imported). A bundle for another
    target is not applicable and changes nothing. May raise StoreError from ``db``.
    ``step`` is told each entry's kind and name as its turn comes (a progress bar).
    """
    if not trust and secret is None:
        raise BundleError(f"bundle {path}: no secret to check its signature with (set "
                          "CUBECL_STORE_SECRET or [cache] secret_file, or pass --trust)")
    bundle = read_bundle(path, None if trust else secret)
    if bundle.signed is False:
        raise BundleError(f"bundle {path}: its manifest's signature was not made with this "
                          "fleet's secret; nothing imported (--trust imports it anyway)")
    report = ImportReport(bundle, bundle.manifest.target == target)
    if not report.applicable:
        return report
    for entry, envelope, why in _entries(bundle, None if trust else secret):
        if step is not None:
            step(_label(entry.kind, entry.name))
        if envelope is None:
            report.problems.append(EntryProblem(entry, why or ""))
            continue
        result = db.put(entry.namespace, entry.key, envelope, origin="imported")
        if result is PutResult.INSERTED:
            report.imported.append(entry)
        elif result is PutResult.READ_ONLY:
            raise BundleError(f"cache database {db.path} can only be read: nothing imported")
        else:
            report.already.append(entry)
    return report


def export_bundle(path: str | os.PathLike[str], db: SqliteStore, target: Target,
                  places: Iterable[Place], secret: Secret, *,
                  step: Callable[[str], None] | None = None) -> tuple[Manifest, list[Place]]:
    """Write the entries of ``places`` that ``db`` holds into a new bundle at ``path``
    (replaced whole, never half-written), signed with ``secret``; its manifest, and
    the places not found (or found corrupt) in ``db``. ``step`` is told each place's
    kind and name as its turn comes (a progress bar).

    BundleError when none is found, or the file cannot be written.
    """
    path = Path(path)
    rows: list[tuple[BundleEntry, bytes]] = []
    missing: list[Place] = []
    for place in dict.fromkeys(places):
        if step is not None:
            step(_label(place.kind, place.name))
        found = db.get(place.namespace, place.key)
        try:
            if found is None:
                raise CorruptEntry("absent")
            decode_artifact(found.value, namespace=place.namespace, key=place.key)
        except CorruptEntry:
            missing.append(place)
            continue
        value = secret.sign(found.value)
        rows.append((BundleEntry(place.kind, place.name, place.namespace, place.key,
                                 checksum(value), len(value)), value))
    if not rows:
        raise BundleError(f"bundle {path}: none of the {len(missing)} entries named is in "
                          f"the store {db.path}; nothing to export")
    manifest = Manifest(target, __version__, time.time(), tuple(e for e, _ in rows))
    body = manifest.to_text()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        with closing(sqlite3.connect(tmp)) as conn, conn:
            for create in _TABLES.values():
                conn.execute(create)
            conn.execute("INSERT INTO manifest VALUES (1, ?, ?)",
                         (body, secret.sign_text(body.encode())))
            conn.executemany("INSERT INTO entries VALUES (?, ?, ?)",
                             [(e.namespace, e.key, v) for e, v in rows])
        os.replace(tmp, path)
    except (OSError, sqlite3.Error) as e:
        Path(tmp).unlink(missing_ok=True)
        raise BundleError(f"bundle {path}: cannot be written: {e}") from e
    return manifest, missing


def _label(kind: str, name: str) -> str:
    """An entry as a progress bar names it: ``artifact saxpy``, or its kind alone."""
    return f"{kind} {name}" if name else kind
