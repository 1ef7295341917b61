"""``cubecl-server demo``: the main job, a few kernels checked against NumPy."""

from __future__ import annotations

import argparse
import sys

from cubecl_server.cli.progress import steps
from cubecl_server.cli.table import WIDTH, Subparsers, print_table, shorten
from cubecl_server.compiler.record import TOTAL_MS_MEANS
from cubecl_server.config import config
from cubecl_server.errors import CubeclError
from cubecl_server.plugins import registry

__all__ = ["add_demo_command", "run_demo_command"]


def add_demo_command(subparsers: Subparsers) -> None:
    """Register ``demo``."""
    parser = subparsers.add_parser(
        "demo", help="run the demo kernels and check them against NumPy",
        description="Run saxpy, a 2-D transpose and a kernel with a loop and a branch on "
                    "a backend, with fresh random data, and check each against NumPy, "
                    "then a tuned matmul and a tuned row_softplus. COMPILE MS: "
                    f"{TOTAL_MS_MEANS}, summed over the kernels the row compiled (a tuned "
                    "row: every candidate's), as `cubecl-server compilations` lists each; "
                    "`-` when all were in memory. RUN MS: the launch and the read of its "
                    "result (a tuned row: its second call). Exits 1 if any result is "
                    "wrong.")
    parser.add_argument("--backend", help="backend name (default: CUBECL_BACKEND or cpu)")
    parser.add_argument("--device", type=int,
                        help="device index, as `cubecl-server backends` lists them (default: 0)")
    parser.add_argument("--seed", type=int, help="random seed (default: fresh)")
    parser.add_argument("--stats", action="store_true",
                        help="also print what the run triggered: launches, compilations by "
                             "outcome, bytes moved, syncs (client.stats())")
    parser.set_defaults(func=run_demo_command)


def run_demo_command(args: argparse.Namespace) -> int:
    """Run the demo and print its table."""
    # Imported here: the demo module defines kernels, which only this command needs.
    from cubecl_server import client
    from cubecl_server.demo import demo_steps, run_demo

    try:
        missing = None if args.device is None else _missing_device(
            args.backend or config().backend, args.device)
        if missing is not None:
            print(f"error: {missing}", file=sys.stderr)
            return 1
        c = client(args.backend, args.device)
        # A driver's name for its device can be long: the line fits as the table does.
        print(shorten(f"backend {c.backend}, device {c.device}", WIDTH))
        with steps("demo", demo_steps()) as step:
            results = run_demo(c, args.seed, step)
    except CubeclError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print_table(("KERNEL", "OUTCOME", "COMPILE MS", "RUN MS", "GB/S", "GFLOP/S", "MAX ERROR",
                 "RESULT"),
                [(r.kernel, r.outcome, _rate(r.compile_ms), f"{r.run_ms:.2f}",
                  _rate(r.gb_s), _rate(r.gflop_s), f"{r.max_error:.2e}",
                  "ok" if r.ok else f"WRONG (tolerance {r.tolerance:g})")
                 for r in results])
    if args.stats:
        print()
        for line in c.stats().lines():
            print(line)
    return 0 if all(r.ok for r in results) else 1


def _rate(value: float | None) -> str:
    """A figure for the table; ``-`` where none was measured."""
    return "-" if value is None else f"{value:.2f}"


def _missing_device(backend: str, index: int) -> str | None:
    """What is wrong with ``--device index`` on ``backend``, naming the devices it has;
    None when it has that device."""
    devices = registry().descriptor(backend).runtime().devices()
    if 0 <= index < len(devices):
        return None
    there = ", ".join(str(d) for d in devices) or "none"
    return f"backend {backend!r} has no device {index}; its devices: {there}"
