"""``cubecl-server cache``: look at and tidy the current environment's artifact store."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import TextIO

from cubecl_server.allocator import format_bytes
from cubecl_server.cli.options import backend_name
from cubecl_server.cli.table import WIDTH, Subparsers, print_table
from cubecl_server.compiler.store import environment_database
from cubecl_server.config import config
from cubecl_server.errors import StoreError
from cubecl_server.persistence import SqliteStore, environment, tune_cache
from cubecl_server.persistence.codec import EnvelopeHead, peek_envelope
from cubecl_server.persistence.entries import EntryInfo

__all__ = ["add_cache_command", "named_entries", "parse_age", "parse_size"]

_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
               "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_IR_NAME = re.compile(rb'\{"node":"Kernel","name":("(?:[^"\\]|\\.)*")')


def parse_size(text: str) -> int:
    """``"500M"``, ``"2GiB"``, ``"1024"`` as a number of bytes (units are binary)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 500M or 2G)")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def parse_age(text: str) -> float:
    """``"30d"``, ``"12h"``, ``"90s"`` as seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"not an age: {text!r} (try 30d, 12h or 45m)")
    return float(m.group(1)) * _AGE_UNITS[m.group(2)]


def add_cache_command(subparsers: Subparsers) -> None:
    """Register ``cache`` and its subcommands."""
    parser = subparsers.add_parser("cache", help="inspect and tidy the artifact store")
    sub = parser.add_subparsers(title="cache commands", metavar="ACTION", required=True)
    info = sub.add_parser("info", help="root, environment, size, entries per namespace")
    _add_listing_options(info)
    info.set_defaults(func=_info)
    ls = sub.add_parser("ls", help="list entries, each with the kernel (or tuner) it is for",
                        description="List the entries of the artifact store: namespace, "
                                    "NAME (the kernel an artifact, a stored IR or a "
                                    "sources-map pointer is for; the tuner of a tune "
                                    "result; - for what names none), key, size, origin.")
    ls.add_argument("--backend", type=backend_name,
                    help="only this backend's entries")
    _add_listing_options(ls)
    ls.set_defaults(func=_ls)
    clear = sub.add_parser("clear", help="delete entries")
    clear.add_argument("--backend", type=backend_name,
                    help="only this backend's entries")
    clear.set_defaults(func=_clear)
    prune = sub.add_parser("prune", help="delete least recently used entries")
    prune.add_argument("--max-size", type=parse_size, help="shrink to at most this size")
    prune.add_argument("--older-than", type=parse_age, help="drop entries unused this long")
    prune.set_defaults(func=_prune)
    sub.add_parser("verify", help="check the database, every checksum, every entry's "
                   "binding to its key, and that stored IR and tunings decode; purge and "
                   "report bad entries") \
        .set_defaults(func=_verify)


def _add_listing_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` and ``--wide``, which ``info`` and ``ls`` share."""
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--wide", action="store_true",
                        help=f"print every cell whole (the table is cut to {WIDTH} columns)")


def _with_store(action: Callable[[SqliteStore], int], *,
                absent: Callable[[], int] | None = None, notes: TextIO | None = None) -> int:
    """Run ``action`` on the current environment's store and say (on ``notes``, default
    stdout) where a damaged database was moved; a StoreError exits 1. With no store
    yet, run ``absent``, or say so."""
    path = environment_database()
    if not path.exists():
        if absent is not None:
            return absent()
        print(f"no artifact store yet at {path}")
        return 0
    db: SqliteStore | None = None
    try:
        db = SqliteStore.open(path)
        return action(db)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        for aside in [] if db is None else db.moved_aside:
            print(f"the database was damaged: moved it aside to {aside} and started a "
                  "fresh one", file=notes or sys.stdout)


def _refuse_read_only(db: SqliteStore, what: str) -> bool:
    """Whether ``db`` can only be read, said on stderr: ``what`` cannot happen."""
    if db.read_only:
        print(f"error: cache database {db.path} can only be read (read-only file system, "
              f"or not writable by you): nothing {what}", file=sys.stderr)
    return db.read_only


def _prefix(backend: str | None) -> str | None:
    return None if backend is None else f"{backend}/"


def _info(args: argparse.Namespace) -> int:
    path = environment_database()
    where = {"root": str(environment.cache_root(config().cache_dir)),
             "environment": environment.environment_name(config().environment),
             "database": str(path)}
    width = None if args.wide else WIDTH
    if args.json:
        def absent() -> int:
            print(json.dumps({**where, "exists": False, "namespaces": []}, indent=2))
            return 0

        def as_json(db: SqliteStore) -> int:
            print(json.dumps({
                **where, "exists": True, "value_bytes": db.size_bytes(),
                "disk_bytes": path.stat().st_size,
                "namespaces": [{"namespace": n.namespace, "entries": n.entries,
                                "bytes": n.bytes} for n in db.namespaces()],
            }, indent=2))
            return 0
        return _with_store(as_json, absent=absent, notes=sys.stderr)
    for label, value in where.items():
        print(f"{label:<12} {value}")

    def action(db: SqliteStore) -> int:
        print(f"size         {format_bytes(db.size_bytes())} in values, "
              f"{format_bytes(path.stat().st_size)} on disk")
        print_table(("NAMESPACE", "ENTRIES", "SIZE"),
                    [(n.namespace, str(n.entries), format_bytes(n.bytes))
                     for n in db.namespaces()], shrink=(0,), width=width)
        return 0
    return _with_store(action)


def _ls(args: argparse.Namespace) -> int:
    prefix = _prefix(args.backend)
    if args.json:
        def absent() -> int:
            print("[]")
            return 0

        def as_json(db: SqliteStore) -> int:
            print(json.dumps([{"namespace": e.namespace, "key": e.key, "name": name,
                               "kind": kind, "size": e.size, "origin": e.origin,
                               "created": e.created, "last_used": e.last_used}
                              for e, name, kind in named_entries(db, prefix)], indent=2))
            return 0
        return _with_store(as_json, absent=absent, notes=sys.stderr)

    def action(db: SqliteStore) -> int:
        # The first 16 hex digits of a key tell entries apart; --wide shows all 64.
        print_table(("NAMESPACE", "NAME", "KEY", "SIZE", "ORIGIN"),
                    [(e.namespace, name, e.key if args.wide else e.key[:16],
                      format_bytes(e.size), e.origin)
                     for e, name, _ in named_entries(db, prefix)],
                    shrink=(0, 1), width=None if args.wide else WIDTH)
        return 0
    return _with_store(action)


def named_entries(db: SqliteStore, prefix: str | None) -> list[tuple[EntryInfo, str, str]]:
    """The entries under ``prefix``, each with the name of what it is for and its kind
    (``-`` where it names none, or is not an envelope).

    The name is the kernel an artifact's header names (every backend's does), the
    kernel of a stored IR, the tuner of a tune result, and for a pointer (a sources
    map's entry) the name of the entry it points at.
    """
    rows = [(info, peek_envelope(head)) for info, head in db.heads(prefix)]
    names = {info.key: _own_name(head) for info, head in rows}
    out = []
    for info, head in rows:
        name = names[info.key]
        if name == "-" and head is not None and head.payload_complete:
            # A pointer's payload is the key it points at.
            name = names.get(head.payload_head.decode("ascii", "replace"), "-")
        out.append((info, name, "-" if head is None else head.kind))
    return out


def _own_name(head: EnvelopeHead | None) -> str:
    """The name an entry gives itself: in its header, or in the IR it holds."""
    if head is None:
        return "-"
    for field in ("kernel", "tuner"):
        value = head.header.get(field)
        if isinstance(value, str) and value:
            return value
    # Stored IR is the kernel's JSON, which opens with its node and its name.
    found = _IR_NAME.match(head.payload_head)
    if found is None:
        return "-"
    try:
        name = json.loads(found.group(1))
    except ValueError:
        return "-"
    return name if isinstance(name, str) and name else "-"


def _clear(args: argparse.Namespace) -> int:
    def action(db: SqliteStore) -> int:
        if _refuse_read_only(db, "deleted"):
            return 1
        print(f"deleted {db.clear(_prefix(args.backend))} entries")
        return 0
    return _with_store(action)


def _prune(args: argparse.Namespace) -> int:
    if args.max_size is None and args.older_than is None:
        print("error: give --max-size and/or --older-than", file=sys.stderr)
        return 2

    def action(db: SqliteStore) -> int:
        if _refuse_read_only(db, "pruned"):
            return 1
        print(f"pruned {db.prune(args.max_size, args.older_than)} entries, "
              f"{format_bytes(db.size_bytes())} left")
        return 0
    return _with_store(action)


def _undecodable(db: SqliteStore) -> list[tuple[str, str, str]]:
    """The IR and tune entries of ``db`` whose checksum holds but whose content does
    not decode or check (a forged or damaged row), each with why; purged unless the
    store is read-only."""
    from cubecl_server.lang import ircache  # deferred: only verify needs the language

    # ir/1.2 is a prefix of ir/1.20: another version's IR is not read here.
    infos = [i for i in db.keys(ircache.NAMESPACE) if i.namespace == ircache.NAMESPACE]
    bad = []
    for info in [*infos, *db.keys(tune_cache.PREFIX)]:
        found = db.get(info.namespace, info.key)
        if found is None:
            continue
        why = ircache.entry_problem(info.key, found.value) \
            if info.namespace == ircache.NAMESPACE \
            else tune_cache.entry_problem(info.namespace, info.key, found.value)
        if why is not None:
            bad.append((info.namespace, info.key, why))
            db.delete(info.namespace, info.key)
    return bad


def _verify(args: argparse.Namespace) -> int:
    def action(db: SqliteStore) -> int:
        bad = [(e.namespace, e.key, e.reason) for e in db.verify()] + _undecodable(db)
        done = "found" if db.read_only else "purged"
        for namespace, key, reason in bad:
            print(f"{done} corrupt entry {namespace} {key}: {reason}")
        print(f"{len(bad)} corrupt entries {done}")
        return 1 if bad and _refuse_read_only(db, "purged") else 0
    return _with_store(action)
