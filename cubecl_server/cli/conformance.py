"""``cubecl-server conformance NAME [pytest args]``: the conformance suite against an
installed backend."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys

from cubecl_server.cli.table import Subparsers

__all__ = ["INSTALL_HINT", "add_conformance_command", "run_conformance_command"]

INSTALL_HINT = "pip install 'cubecl-server[conformance]'"
"""What installs what the suite runs on (pytest)."""


def add_conformance_command(subparsers: Subparsers) -> None:
    """Register ``conformance``."""
    parser = subparsers.add_parser(
        "conformance", help="run the conformance suite against a backend",
        description="Run the cubecl-server conformance suite (pytest) against an installed "
                    "backend, with the backend's own conformance hooks (expected failures, "
                    "artifact checks), and print its results; exits with pytest's status. "
                    "Arguments after the backend name go to pytest (-k EXPR, -x, -v, "
                    "--cubecl-seed N).")
    parser.add_argument("backend", help="backend name (see `cubecl-server backends`)")
    parser.add_argument("--device", type=int, help="device index (default: 0)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER,
                        help="further arguments for pytest")
    parser.set_defaults(func=run_conformance_command)


def run_conformance_command(args: argparse.Namespace) -> int:
    """Run the suite with pytest in a fresh process; its exit status (2 without
    pytest, saying what to install)."""
    if importlib.util.find_spec("pytest") is None:
        print("error: the conformance suite runs on pytest, which is not installed here; "
              f"install it with: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from cubecl_server.conformance.runner import suite_args

    # A fresh process: this one has imported the suite's plugin already, and pytest
    # rewrites the assertions only of modules it imports itself.
    cmd = [sys.executable, "-m", "pytest",
           *suite_args(args.backend, args.pytest_args, args.device)]
    with subprocess.Popen(cmd) as proc:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            return proc.wait()  # pytest was interrupted too: let it print its summary
