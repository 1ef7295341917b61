"""``cubecl-server compilations``: the compilations recorded in the environment."""

from __future__ import annotations

import argparse
import json
import sys

from cubecl_server.cli.table import Subparsers, print_table
from cubecl_server.compiler.record import CompilationRecord
from cubecl_server.compiler.store import environment_database
from cubecl_server.errors import StoreError
from cubecl_server.persistence import SqliteStore

__all__ = ["add_compilations_command", "run_compilations"]


def add_compilations_command(subparsers: Subparsers) -> None:
    """Register ``compilations``."""
    parser = subparsers.add_parser(
        "compilations", help="list recorded compilations",
        description="List the compilations recorded in the current environment "
                    "(recording: [compilation] record = true or CUBECL_COMPILATION_RECORD=1; "
                    "`cubecl-server demo` always records).")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument("--last", type=int, metavar="N", help="only the N most recent")
    parser.set_defaults(func=run_compilations)


def run_compilations(args: argparse.Namespace) -> int:
    """Print the records, oldest first."""
    path = environment_database()
    records: list[CompilationRecord] = []
    if path.exists():
        try:
            rows = SqliteStore.open(path).records(last=args.last)
        except StoreError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        records = [CompilationRecord.from_dict(r.data) for r in rows]
    if args.json:
        print(json.dumps([r.to_dict() for r in records], indent=2))
        return 0
    if not records:
        print(f"no compilations recorded in {path}")
        return 0
    print_table(
        ("KERNEL", "BACKEND", "VARIANT", "OUTCOME", "MS", "SIZE", "STAGES (ms)"),
        [(r.kernel, r.backend, r.variant, r.outcome.value, f"{r.total_ms:.2f}",
          str(r.artifact_size),
          " ".join(f"{s.name}={s.ms:.2f}" for s in r.stages if s.size is None))
         for r in records])
    return 0
