"""``cubecl-server tune``: what autotune chose in the current environment, and why."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from cubecl_server.cli.options import backend_name
from cubecl_server.cli.table import WIDTH, Subparsers, print_table
from cubecl_server.compiler.store import environment_database
from cubecl_server.errors import StoreError
from cubecl_server.persistence import SqliteStore
from cubecl_server.persistence.tune_cache import TuneCache, TuneEntry

__all__ = ["add_tune_command", "candidate_rows"]


def add_tune_command(subparsers: Subparsers) -> None:
    """Register ``tune`` and its subcommands."""
    parser = subparsers.add_parser(
        "tune", help="list and clear autotune results",
        description="The tune cache of the current environment: for each tuner, device "
                    "and autotune key, the candidate that won and every candidate's "
                    "time (docs/tuning.md).")
    sub = parser.add_subparsers(title="tune commands", metavar="ACTION", required=True)
    ls = sub.add_parser("ls", help="list tuners, keys, winners and timings")
    ls.add_argument("--backend", type=backend_name,
                    help="only this backend's results")
    ls.add_argument("--tuner", help="only this tuner's results")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.add_argument("--wide", action="store_true",
                    help=f"print every cell whole (the table is cut to {WIDTH} columns)")
    ls.set_defaults(func=_ls)
    clear = sub.add_parser("clear", help="delete results: the next use tunes again")
    clear.add_argument("--backend", type=backend_name,
                    help="only this backend's results")
    clear.add_argument("--tuner", help="only this tuner's results")
    clear.set_defaults(func=_clear)


def candidate_rows(entry: TuneEntry) -> list[tuple[str, str, str]]:
    """One row per candidate of ``entry``, fastest first: its name (``*`` marks the
    winner), its median time, and that time against the winner's - then the
    candidates excluded, with why."""
    best = entry.timings.get(entry.winner)
    rows = []
    for name, seconds in sorted(entry.timings.items(), key=lambda t: t[1]):
        against = "-" if not best else f"{seconds / best:.2f}x"
        rows.append((name + (" *" if name == entry.winner else ""), f"{seconds * 1e3:.3g} ms",
                     against))
    rows += [(name, "excluded", error.splitlines()[0]) for name, error in entry.errors.items()]
    return rows or [(f"{entry.winner} *", "-", "not timed: one candidate could run")]


def _saying(text: str) -> Callable[[], int]:
    """What to do when there is no store yet: print ``text`` and succeed."""
    def say() -> int:
        print(text)
        return 0
    return say


def _with_cache(action: Callable[[TuneCache], int], absent: Callable[[], int]) -> int:
    """Run ``action`` on the current environment's tune cache; a StoreError exits 1."""
    path = environment_database()
    if not path.exists():
        return absent()
    try:
        return action(TuneCache(SqliteStore.open(path)))
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _ls(args: argparse.Namespace) -> int:
    def chosen(cache: TuneCache) -> list[TuneEntry]:
        return [e for e in cache.entries(args.backend)
                if args.tuner is None or e.tuner == args.tuner]

    if args.json:
        def as_json(cache: TuneCache) -> int:
            print(json.dumps([e.to_dict() for e in chosen(cache)], indent=2))
            return 0
        return _with_cache(as_json, _saying("[]"))

    def as_table(cache: TuneCache) -> int:
        entries = chosen(cache)
        if not entries:
            return _saying("no tune results yet")()
        # A row per candidate, the entry's own columns on its first row only: the
        # comparison the listing exists for stays whole in any width.
        rows = []
        for e in entries:
            for i, (name, time_, against) in enumerate(candidate_rows(e)):
                first = (e.tuner, e.backend, e.device, e.key) if i == 0 else ("",) * 4
                rows.append((*first, name, time_, against))
        print_table(("TUNER", "BACKEND", "DEVICE", "KEY", "CANDIDATE", "TIME", "VS WINNER"),
                    rows, shrink=(2, 3, 6), width=None if args.wide else WIDTH)
        return 0
    return _with_cache(as_table, _saying("no tune results yet"))


def _clear(args: argparse.Namespace) -> int:
    def action(cache: TuneCache) -> int:
        if cache.read_only:
            print(f"error: cache database {cache.db.path} can only be read (read-only file "
                  "system, or not writable by you): nothing deleted", file=sys.stderr)
            return 1
        print(f"deleted {cache.clear(args.backend, args.tuner)} tune results")
        return 0
    return _with_cache(action, _saying("deleted 0 tune results"))
