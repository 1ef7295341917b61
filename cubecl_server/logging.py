"""Logging for a compute server: one logger tree under ``cubecl_server``, and the
switch that shows it.

The library only logs; it attaches no handler unless asked, so an application's own
logging setup decides. Warnings (a cache that cannot be used, a broken plugin) reach
stderr through Python's last-resort handler even then. ``CUBECL_LOG=debug`` (or
``info``) shows the compile path as it happens: every miss, its outcome and timings.
"""

from __future__ import annotations

import logging
import os

__all__ = ["ROOT", "logger", "configure_logging"]

ROOT = "cubecl_server"
"""The name of the logger every part of cubecl-server logs under."""

_handler: logging.Handler | None = None


def logger(part: str) -> logging.Logger:
    """The logger of one part of the toolkit (``logger("compiler")``)."""
    return logging.getLogger(f"{ROOT}.{part}")


def configure_logging(level: str | None = None) -> None:
    """Show cubecl-server's records on stderr at ``level`` (default: ``CUBECL_LOG``;
    nothing is changed when neither is set). Calling it again only changes the level."""
    global _handler
    name = level or os.environ.get("CUBECL_LOG")
    if not name:
        return
    numeric = logging.getLevelName(name.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"CUBECL_LOG={name!r}: expected debug, info, warning or error")
    root = logging.getLogger(ROOT)
    if _handler is None:
        _handler = logging.StreamHandler()
        _handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root.addHandler(_handler)
    root.setLevel(numeric)
