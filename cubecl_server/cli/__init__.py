"""The ``cubecl-server`` command line: one subcommand per job, each its own module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from cubecl_server.cli.backends import add_backends_command
from cubecl_server.cli.bench import add_bench_command
from cubecl_server.cli.bundle import add_bundle_command
from cubecl_server.cli.cache import add_cache_command
from cubecl_server.cli.compilations import add_compilations_command
from cubecl_server.cli.conformance import add_conformance_command
from cubecl_server.cli.demo import add_demo_command
from cubecl_server.cli.source import add_source_command
from cubecl_server.cli.table import Subparsers
from cubecl_server.cli.tune import add_tune_command
from cubecl_server.logging import configure_logging

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

SUBCOMMANDS: list[Callable[[Subparsers], None]] = [
    add_demo_command,
    add_backends_command,
    add_compilations_command,
    add_cache_command,
    add_bundle_command,
    add_conformance_command,
    add_bench_command,
    add_source_command,
    add_tune_command,
]
"""Each adds one subcommand to the parser; its ``func`` default runs it and returns
the exit code."""


def build_parser() -> argparse.ArgumentParser:
    """The ``cubecl-server`` argument parser, with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="cubecl-server",
        description="Run, inspect and manage cubecl-server backends and caches.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    configure_logging()
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except BrokenPipeError:
        # The reader left (`cubecl-server cache ls | head`): not an error of ours.
        # Point stdout at nothing so the interpreter's final flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
