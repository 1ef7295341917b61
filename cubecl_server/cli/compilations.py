"""``cubecl-server compilations``: the compilations recorded in the environment."""

from __future__ import annotations

import argparse
import json
import sys
import time

from cubecl_server.allocator import format_bytes
from cubecl_server.cli.table import WIDTH, Subparsers, print_table
from cubecl_server.compiler.record import TOTAL_MS_MEANS, CompilationRecord
from cubecl_server.compiler.store import environment_database
from cubecl_server.errors import StoreError
from cubecl_server.persistence import SqliteStore

__all__ = ["add_compilations_command", "kernel_with_comptime", "positive_count",
           "run_compilations"]


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
                    "CUBECL_COMPILATION_RECORD=1; `cubecl-server demo` always records): "
                    "each kernel with its comptime values, the cube dim it was built for, "
                    f"the outcome and COMPILE MS, {TOTAL_MS_MEANS}. The table fits {WIDTH} "
                    "columns; --wide adds the variant each was built for and the time of "
                    "each stage.")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON list (`created`: when, in seconds since the epoch)")
    parser.add_argument("--last", type=positive_count, metavar="N",
                        help="only the N most recent (N >= 1)")
    parser.add_argument("--wide", action="store_true",
                        help="add the VARIANT and STAGES columns, nothing cut")
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
    # The variant (a driver's description, a hundred characters and more) is what the
    # narrow table leaves out: cut to fit, it would also cut the kernels' names.
    header = ["WHEN", "KERNEL", "CUBE DIM", "BACKEND", "OUTCOME", "COMPILE MS", "SIZE"]
    table = [[time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created)),
              kernel_with_comptime(r.kernel, r.comptime), _dim(r.cube_dim), r.backend,
              r.outcome.value, f"{r.total_ms:.2f}", format_bytes(r.artifact_size)]
             for r in records]
    if args.wide:
        header += ["VARIANT", "STAGES (ms)"]
        for line, r in zip(table, records, strict=True):
            line += [r.variant,
                     " ".join(f"{s.name}={s.ms:.2f}" for s in r.stages if s.size is None)]
    print_table(header, table, shrink=(1,), width=None if args.wide else WIDTH)
    return 0


def kernel_with_comptime(kernel: str, comptime: tuple[tuple[str, object], ...]) -> str:
    """``kernel`` as a row names it: with its comptime values, ``matmul(tile=16)``."""
    if not comptime:
        return kernel
    return f"{kernel}({', '.join(f'{name}={value}' for name, value in comptime)})"


def _dim(cube_dim: tuple[int, int, int] | None) -> str:
    """A cube dim as ``--cube-dim`` takes it (``256``, ``16x16``); ``-`` if unrecorded."""
    if cube_dim is None:
        return "-"
    dims = list(cube_dim)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(map(str, dims))
