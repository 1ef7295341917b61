"""``cubecl-server bench``: run the benchmarks of a source checkout and write BENCHMARKS.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cubecl_server.cli.options import backend_name
from cubecl_server.cli.table import Subparsers

__all__ = ["add_bench_command", "run_bench_command"]


def add_bench_command(subparsers: Subparsers) -> None:
    """Register ``bench``."""
    # The harness lives in the checkout's benchmarks/ package, not in the wheel: its
    # options are added only when it can be imported, so --help stays honest.
    parser = subparsers.add_parser(
        "bench", help="run the benchmarks and write BENCHMARKS.md (source checkout only)",
        description="Measure how fast kernels are obtained and launched on every installed "
                    "backend that can run here, next to what a user would use instead, and "
                    "write BENCHMARKS.md. Needs the benchmarks/ package of a source checkout "
                    "(an editable install puts it on the path).")
    try:
        from benchmarks.harness import add_arguments
    except ImportError:
        parser.set_defaults(func=_no_harness)
        return
    add_arguments(parser)
    parser.set_defaults(func=run_bench_command)


def _no_harness(args: argparse.Namespace) -> int:
    print("error: the benchmarks are not importable: run `cubecl-server bench` from an "
          "editable install of a source checkout (`pip install -e .`), or "
          "`python -m benchmarks` in it", file=sys.stderr)
    return 2


def run_bench_command(args: argparse.Namespace) -> int:
    """Run the harness with the parsed options; its exit code (2, before measuring
    anything, for a backend that is not installed)."""
    from benchmarks.harness import run_benchmarks

    if args.backend is not None:
        try:
            backend_name(args.backend)
        except argparse.ArgumentTypeError as e:
            print(f"error: argument --backend: {e}", file=sys.stderr)
            return 2

    return run_benchmarks(args.backend, args.quick, Path(args.output), args.group)
