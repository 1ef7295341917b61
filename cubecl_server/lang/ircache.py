"""The IR cache: the frontend's result kept in the environment's store, so that a fresh
process launches a kernel without parsing it again.

An entry is keyed by everything the frontend read to build it. The first key hashes
what is known before parsing: the language version (:func:`language_version`), the
kernel's name, file, first line and source text, its signature and the comptime
values (line sizes included). What else the frontend read - globals, closure
variables, builtins, module attributes, helpers (:mod:`.reads`) - is known only
after it ran, so the store holds a chain: under a key, either the IR or the list of
further reads; the next key hashes this one with the fingerprints those reads have
now. A lookup follows the chain, resolving each read in this process; a miss parses
and stores the rest of the chain. Entries are insert-only (the first writer wins), so
a change to anything read leads to a new key, never to a changed value.

Every value is an envelope (:mod:`cubecl_server.persistence.codec`) bound to its
namespace and key and checksummed by the store; the IR is JSON decoded by
:func:`cubecl_server.ir.kernel_from_json`, never pickle or eval. A value that does not
decode, or holds a kernel other than the one asked for, is purged and the frontend
runs again. A store that fails turns the cache off for the process, with one warning.
"""

from __future__ import annotations

import enum
import gc
import hashlib
import json
import os
import sys
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path as FilePath
from typing import Any

from cubecl_server import __version__, bounded, ir
from cubecl_server.compiler.store import environment_database, read_entry
from cubecl_server.config import config
from cubecl_server.errors import CompilationError, StoreError
from cubecl_server.ir_check import check_kernel
from cubecl_server.logging import logger
from cubecl_server.persistence import environment
from cubecl_server.persistence.codec import CorruptEntry, decode_artifact, encode_artifact
from cubecl_server.persistence.sqlite import PutResult, SqliteStore

from .reads import Path, Reads, fingerprint, resolve
from .signature import KernelSignature, spelled
from .source import code_location, quick_text

__all__ = ["NAMESPACE", "cached_kernel", "entry_problem", "language_sources", "language_version",
           "not_compiled"]

log = logger("lang")

NAMESPACE = f"ir/{__version__}"
"""The store namespace of IR cache entries."""

_READS = "ir-reads"
"""The kind of a chain link: the reads whose fingerprints make the next key."""
_KERNEL = "ir-kernel"
"""The kind of a chain's end: the IR (payload) and its launch plan (header)."""
_MAX_LINKS = 16
"""Links a lookup follows at most (a parse adds one, so chains stay short)."""
_MAX_READS = 100_000
"""Reads one link may name (anything longer is not a link this module wrote)."""
_ELEMS = {e.value: e for e in ir.Elem}
"""Element types by name: an entry keeps the kernel's (:attr:`~cubecl_server.ir.Kernel.elems`),
which a launch checks against the device, so that a warm process need not walk the IR."""


def language_sources() -> list[FilePath]:
    """The source files :func:`language_version` hashes: every module of the kernel
    language and of the IR (:mod:`cubecl_server.ir`, a package), subpackages included."""
    lang = FilePath(__file__).parent
    return [path for root in (lang, FilePath(ir.__file__).parent)
            for path in sorted(root.rglob("*.py"))]


@cache
def language_version() -> str:
    """A hash of what decides how the frontend reads a kernel: the sources of the
    kernel language and of the IR (:func:`language_sources`), the package version and
    the Python version (its ``ast``)."""
    h = hashlib.sha256(f"{__version__}|{sys.version_info[:2]}".encode())
    package = FilePath(__file__).parent.parent
    for path in language_sources():
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, separators=(",", ":")).encode()).hexdigest()


def _value(v: object) -> list[str]:
    """A comptime value with its type, exactly (an int 2 is not a float 2.0; an enum
    member by its class's module and name, and its own)."""
    t = type(v)
    if isinstance(v, enum.Enum):
        return [f"{t.__module__}.{t.__qualname__}", v.name]
    return [t.__name__, v.hex() if isinstance(v, float) else repr(v)]


def _first_key(fn: Callable[..., Any], text: str, sig: KernelSignature,
               bound: tuple[tuple[str, Any], ...], sizes: dict[str, int]) -> str:
    file, first = code_location(fn)
    signature = [[p.name, p.elem.value, p.array, p.line] for p in sig.params]
    return _hash(["cubecl-ir", language_version(), os.environ.get("CUBECL_BUILD_ID", ""),
                  fn.__name__, file, first, text, signature,
                  sorted((n, k.__name__) for n, k in sig.comptime.items()),
                  sorted(sig.generic.items()), list(sig.lines),
                  [[n, *_value(v)] for n, v in bound], sorted(sizes.items())])


def _next_key(key: str, fingerprints: list[str]) -> str:
    return _hash([key, fingerprints])


class _IrStore:
    """The IR entries of one database; off for the process after its first failure."""

    def __init__(self, db: SqliteStore) -> None:
        self.db = db
        self.broken = False
        self.not_compiled: set[str] = set()
        """Keys purged because the kernel there did not compile (:func:`not_compiled`)."""

    def _fail(self, what: str, err: StoreError) -> None:
        if not self.broken:
            log.warning("IR cache off for this process (%s failed: %s); kernels are "
                        "parsed in every process", what, err)
        self.broken = True

    def get(self, key: str) -> tuple[str, dict[str, Any], bytes] | None:
        """The kind, header and payload stored under ``key``; None if absent, or
        corrupt (then purged)."""
        if self.broken:
            return None
        return read_entry(self.db, NAMESPACE, key, lambda d: (d.kind, d.header, d.payload),
                          fail=self._fail, reject=lambda why: self.purge(key, why))

    def put(self, key: str, kind: str, header: dict[str, Any], payload: bytes) -> bool:
        """Store a value (first writer wins); whether the chain may go on from it:
        taken, or the same value already there."""
        if self.broken:
            return False
        value = encode_artifact(kind, header, payload, namespace=NAMESPACE, key=key)
        try:
            result = self.db.put(NAMESPACE, key, value)
        except StoreError as e:
            self._fail("write", e)
            return False
        return result in (PutResult.INSERTED, PutResult.SAME, PutResult.REPLACED_IMPORTED)

    def purge(self, key: str, why: str) -> None:
        """Drop the entry under ``key``, which did not decode (``why``)."""
        log.warning("stored IR %s rejected (%s): purged, parsing the kernel again",
                    key[:16], why)
        try:
            self.db.delete(NAMESPACE, key)
        except StoreError as e:
            self._fail("purge", e)


_stores: dict[str, _IrStore | None] = {}
_stores_lock = threading.Lock()


def _store() -> _IrStore | None:
    """The IR store of the current environment; None when caching is off or there is
    nowhere durable."""
    if not config().compilation_cache:
        return None
    path = str(environment_database())
    with _stores_lock:
        if path not in _stores:
            db = environment.open_store(path)
            _stores[path] = None if db is None else _IrStore(db)
        return _stores[path]


@dataclass
class _Walk:
    """How far a lookup got: the key it stopped at (None: the chain cannot go on
    here) and the reads it resolved on the way, with their fingerprints."""

    key: str | None
    covered: dict[Path, str] = field(default_factory=dict)


def _reads_of(header: dict[str, Any]) -> list[Path]:
    """The reads a link names; CorruptEntry if the header is not one this module
    writes."""
    reads = header.get("reads")
    if not (isinstance(reads, list) and 0 < len(reads) <= _MAX_READS and all(
            isinstance(p, list) and p and all(isinstance(s, str) and s for s in p)
            for p in reads)):
        raise CorruptEntry("an IR chain link without a list of reads")
    return [tuple(p) for p in reads]


def _plan_of(header: dict[str, Any]) -> tuple[int, list[str], list[str], list[str]]:
    """The line, arrays read and written and element types a chain's end names;
    CorruptEntry if the header is not one this module writes."""
    line, read, written = header.get("line"), header.get("read"), header.get("written")
    elems = header.get("elems")
    if not (isinstance(line, int) and isinstance(read, list) and isinstance(written, list)
            and all(isinstance(n, str) for n in (*read, *written))
            and isinstance(elems, list) and all(e in _ELEMS for e in elems)):
        raise CorruptEntry("an IR entry without its line and launch plan")
    return line, read, written, elems


def _kernel_of(header: dict[str, Any], payload: bytes, fn: Callable[..., Any],
               params: tuple[ir.Param, ...], bound: tuple[tuple[str, Any], ...]) -> ir.Kernel:
    """The kernel a chain's end holds; CorruptEntry if it is not the one asked for."""
    line, read, written, elems = _plan_of(header)
    # Decoding makes thousands of acyclic nodes for a large kernel: a collection of
    # every generation in the middle of it (long, after a large import such as CuPy)
    # would find nothing to free.
    collecting = gc.isenabled()
    gc.disable()
    try:
        kernel = ir.kernel_from_json(
            payload.decode("utf-8"), ir.SourceLoc(code_location(fn)[0], line),
            (frozenset(read), frozenset(written)), frozenset(_ELEMS[e] for e in elems))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptEntry(str(e)) from None
    finally:
        if collecting:
            gc.enable()
    if kernel.name != fn.__name__ or kernel.params != params or kernel.comptime != spelled(bound):
        raise CorruptEntry(f"it holds kernel {kernel.name!r} with other parameters or "
                           "comptime values")
    _check(kernel)
    return kernel


def _check(kernel: ir.Kernel) -> None:
    """CorruptEntry unless ``kernel`` obeys every rule of the IR.

    The loader checks every kernel before lowering it, and a parsed kernel passes; a
    stored one that does not was forged or damaged, and kept it would fail every
    launch in every process. The verdict is cached: the loader's own check, when it
    compiles the kernel, costs nothing more.
    A value this module did not write may break the checker itself (a shape that no
    rule expects, nesting that exhausts the stack): that is a bad entry too.
    """
    try:
        check_kernel(kernel, "the IR cache")
    except CompilationError as e:
        raise CorruptEntry(f"it breaks a rule of the IR: {e}") from None
    except (RecursionError, MemoryError, ArithmeticError, LookupError, TypeError,
            ValueError, AttributeError) as e:
        raise CorruptEntry(f"it is not IR the checker can read ({type(e).__name__}: "
                           f"{e})") from None


def entry_problem(key: str, value: bytes) -> str | None:
    """Why the value stored under ``key`` in :data:`NAMESPACE` is not an entry this
    module wrote and would use, or None: the checks a lookup makes, short of those
    that need the kernel's function (its name, parameters and the reads now)."""
    try:
        d = decode_artifact(value, namespace=NAMESPACE, key=key)
        if d.kind == _READS:
            _reads_of(d.header)
            return None
        if d.kind != _KERNEL:
            raise CorruptEntry(f"a {d.kind!r} entry, not IR")
        _plan_of(d.header)
        try:
            kernel = ir.kernel_from_json(d.payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise CorruptEntry(str(e)) from None
        _check(kernel)
    except CorruptEntry as e:
        return str(e)
    return None


def _lookup(store: _IrStore, fn: Callable[..., Any], key: str,
            params: tuple[ir.Param, ...],
            bound: tuple[tuple[str, Any], ...]) -> tuple[ir.Kernel | None, _Walk]:
    """Follow the chain from ``key``: the kernel at its end, or where it stopped."""
    walk = _Walk(key)
    for _ in range(_MAX_LINKS):
        assert walk.key is not None
        found = store.get(walk.key)
        if found is None:
            return None, walk
        kind, header, payload = found
        try:
            if kind == _KERNEL:
                return _kernel_of(header, payload, fn, params, bound), walk
            if kind != _READS:
                raise CorruptEntry(f"a {kind!r} entry, not IR")
            paths = _reads_of(header)
        except CorruptEntry as e:
            store.purge(walk.key, str(e))
            return None, walk
        found_fps = [fingerprint(resolve(fn, p)) for p in paths]
        fps = [fp for fp in found_fps if fp is not None]
        if len(fps) != len(paths):
            # A read now leads to something that has no fingerprint: the parse will
            # say what is wrong with it, and nothing can be stored past this link.
            return None, _Walk(None)
        walk.covered.update(zip(paths, fps, strict=True))
        walk.key = _next_key(walk.key, fps)
    return None, _Walk(None)


def _store_chain(store: _IrStore, walk: _Walk, reads: Reads, kernel: ir.Kernel,
                 text: str) -> None:
    """Store the rest of the chain from where the lookup stopped, ending in ``kernel``
    (whose canonical JSON is ``text``)."""
    key = walk.key
    if key is None or not reads.keyable or store.db.read_only:
        return
    try:
        bounded.check_depth(text.encode(), ir.MAX_KERNEL_DEPTH)
    except bounded.Unbounded:
        return  # deeper than any stored kernel is read back: stored, it would be purged
    rest = {p: fp for p, fp in reads.found.items() if p not in walk.covered}
    if any(walk.covered[p] != fp for p, fp in reads.found.items() if p in walk.covered):
        return  # a value changed while the kernel was parsed: no key says which
    if rest:
        if not store.put(key, _READS, {"reads": [list(p) for p in rest]}, b""):
            return
        key = _next_key(key, list(rest.values()))
    read, written = kernel.array_access
    assert kernel.loc is not None
    store.put(key, _KERNEL, {"line": kernel.loc.line, "read": sorted(read),
                             "written": sorted(written),
                             "elems": sorted(e.value for e in kernel.elems)}, text.encode())


def cached_kernel(fn: Callable[..., Any], sig: KernelSignature,
                  bound: tuple[tuple[str, Any], ...], sizes: dict[str, int],
                  parse: Callable[[Reads], tuple[ir.Kernel, str]],
                  ) -> tuple[ir.Kernel, str | None]:
    """Kernel ``fn`` with the comptime values ``bound`` and line sizes ``sizes``, from
    the store when a parse of the same everything is there, else from ``parse`` (then
    stored); with the key it was found under (None: parsed here), for
    :func:`not_compiled`.

    ``parse`` runs the frontend, telling the :class:`~.reads.Reads` it is given what
    it read, and returns the kernel with the text the frontend parsed.
    """
    store = _store()
    text = quick_text(fn)
    if store is None or text is None:
        return parse(Reads())[0], None
    key = _first_key(fn, text, sig, bound, sizes)
    params = sig.specialise(dict(bound), sizes)
    found, walk = _lookup(store, fn, key, params, bound)
    if found is not None:
        return found, walk.key
    reads = Reads()
    kernel, parsed = parse(reads)
    # Stored only when the frontend parsed the very text in the first key (it reads
    # further lines when indentation alone cannot end the definition).
    if parsed == textwrap.dedent(text):
        _store_chain(store, walk, reads, kernel, ir.kernel_to_json(kernel))
    return kernel, None


def not_compiled(key: str, backend: str, error: Exception) -> bool:
    """Purge the stored kernel found under ``key``, which ``backend`` could not compile
    (``error``), so that it is parsed again; whether it was purged now (once per key
    and process: a kernel the frontend itself makes that does not compile is not
    purged again and again)."""
    store = _store()
    if store is None:
        return False
    with _stores_lock:
        if key in store.not_compiled:
            return False
        store.not_compiled.add(key)
    store.purge(key, f"{backend} cannot compile it: {type(error).__name__}: {error}")
    return True
