"""``cubecl-server conformance NAME [pytest args]``: the conformance suite against an
installed backend."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from cubecl_server.cli.table import Subparsers

__all__ = ["add_conformance_command", "run_conformance_command"]


def add_conformance_command(subparsers: Subparsers) -> None:
    """Register ``conformance``."""
    parser = subparsers.add_parser(
        "conformance", help="run the conformance suite against a backend",
        description="Run the cubecl-server conformance suite (pytest) against an installed "
                    "backend and print its results; exits with pytest's status. Arguments "
                    "after the backend name go to pytest (-k EXPR, -x, -v, --cubecl-seed N).")
    parser.add_argument("backend", help="backend name (see `cubecl-server backends`)")
    parser.add_argument("--device", type=int, help="device index (default: 0)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER,
                        help="further arguments for pytest")
    parser.set_defaults(func=run_conformance_command)


def run_conformance_command(args: argparse.Namespace) -> int:
    """Run the suite in this process with pytest; its exit status."""
    # Imported here: pytest is only needed by this command.
    import pytest

    # The suite's package is located, not imported: pytest must import the plugin
    # itself to rewrite its assertions.
    spec = importlib.util.find_spec("cubecl_server.conformance")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    argv = ["-c", str(root / "pytest.ini"), "--rootdir", str(root),
            "-p", "cubecl_server.conformance", "--cubecl-backend", args.backend]
    if args.device is not None:
        argv += ["--cubecl-device", str(args.device)]
    argv += [str(p) for p in sorted((root / "suite").glob("test_*.py"))]
    return int(pytest.main([*argv, *args.pytest_args]))
