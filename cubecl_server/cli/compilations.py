"""``cubecl-server compilations``: the compilations recorded in the environment."""

from __future__ import annotations

import argparse
import json
import sys
import time

from cubecl_server.cli.table import WIDTH, Subparsers, print_table
from cubecl_server.compiler.record import CompilationRecord
from cubecl_server.compiler.store import environment_database
from cubecl_server.errors import StoreError
from cubecl_server.persistence import SqliteStore

__all__ = ["add_compilations_command", "run_compilations", "positive_count"]


def positive_count(text: str) -> int:
    """``--last N``: N is a whole number of at least 1 (0 would list nothing)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(
            f"expected a number of compilations, 1 or more, not {text!r} (leave --last "
            "out to list them all)")
    return n


def add_compilations_command(subparsers: Subparsers) -> None:
    """Register ``compilations``."""
    parser = subparsers.add_parser(
        "compilations", help="list recorded compilations",
        description="List the compilations recorded in the current environment, oldest "
                    "first (recording: [compilation] record = true or "
                    "CUBECL_COMPILATION_RECORD=1; `cubecl-server demo` always records). "
                    f"The table is cut to {WIDTH} columns; --wide prints it whole, with "
                    "the time of each stage.")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON list (`created`: when, in seconds since the epoch)")
    parser.add_argument("--last", type=positive_count, metavar="N",
                        help="only the N most recent (N >= 1)")
    parser.add_argument("--wide", action="store_true",
                        help="print every variant whole, and a STAGES column")
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
    header = ["WHEN", "KERNEL", "BACKEND", "VARIANT", "OUTCOME", "MS", "SIZE"]
    table = [[time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created)), r.kernel,
              r.backend, r.variant, r.outcome.value, f"{r.total_ms:.2f}",
              str(r.artifact_size)] for r in records]
    if args.wide:
        header.append("STAGES (ms)")
        for line, r in zip(table, records, strict=True):
            line.append(" ".join(f"{s.name}={s.ms:.2f}" for s in r.stages if s.size is None))
    print_table(header, table, shrink=(1, 3), width=None if args.wide else WIDTH)
    return 0
