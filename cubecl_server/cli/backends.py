"""``cubecl-server backends``: every installed backend, its status and its devices."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from cubecl_server.cli.table import WIDTH, Subparsers, print_table
from cubecl_server.config import config
from cubecl_server.errors import PluginError
from cubecl_server.plugins import registry
from cubecl_server.plugins.registry import ENV_STRICT

__all__ = ["add_backends_command", "run_backends"]

_HEADER = ("", "NAME", "DISTRIBUTION", "VERSION", "STATUS", "DEVICES")
# A reason is wrapped to no narrower than this, whatever the other columns take.
_MIN_ROOM = 24


def add_backends_command(subparsers: Subparsers) -> None:
    """Register ``backends``: every installed backend, its status and its devices."""
    parser = subparsers.add_parser(
        "backends", help="list installed backends, their status and devices",
        description="List every backend the installed plugins provide, whether it can "
                    "run here and on which devices, every backend built for another "
                    "backend contract version (incompatible) and every plugin that is "
                    "broken; `*` "
                    "marks the selected one (CUBECL_BACKEND, else `backend` in "
                    "cubecl.toml, else cpu). "
                    f"Exits 0 even with broken plugins, unless {ENV_STRICT}=1.")
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    parser.add_argument("--wide", action="store_true",
                        help=f"print every cell whole (the table is cut to {WIDTH} columns: "
                             "a long device name loses its middle, a reason why a "
                             "backend cannot run is wrapped)")
    parser.set_defaults(func=run_backends)


def run_backends(args: argparse.Namespace) -> int:
    """Print the backend listing; 1 when strict discovery found a broken plugin."""
    reg = registry()
    try:
        rows = reg.backends()
        # backends() ends with one row per broken plugin, in broken()'s order
        broken = iter(reg.broken())
    except PluginError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    selected = config().backend
    if args.json:
        listing = []
        for row in rows:
            item: dict[str, object] = {
                "name": row.name, "distribution": row.distribution, "version": row.version,
                "status": row.status, "reason": row.reason, "devices": row.devices,
                "selected": _is_selected(row.name, row.status, selected),
            }
            if row.status == "broken":
                plugin = next(broken)
                item["error"] = plugin.error
                item["traceback"] = plugin.traceback
            listing.append(item)
        print(json.dumps(listing, indent=2))
        return 0
    own = [("*" if _is_selected(row.name, row.status, selected) else "", row.name,
            row.distribution, row.version, row.status) for row in rows]
    # What the last column has room for, the others as wide as their widest cell.
    room = WIDTH - sum(max(len(cells[i]) for cells in [_HEADER, *own]) + 2 for i in range(5))
    table = []
    for row, cells in zip(rows, own, strict=True):
        # A row per device, the backend's own cells on its first only: a machine with
        # several GPUs lists each whole, not joined and then cut. A backend without
        # devices says why in their place (which keeps STATUS a narrow column), in
        # words wrapped onto rows of their own, never cut: its middle may be the point.
        last = list(row.devices)
        if row.reason:
            reason = f"({row.reason})"
            last += [reason] if args.wide else textwrap.wrap(reason, max(room, _MIN_ROOM))
        for i, cell in enumerate(last or [""]):
            table.append((*cells, cell) if i == 0 else ("", "", "", "", "", cell))
    print_table(_HEADER, table, shrink=(5,), width=None if args.wide else WIDTH)
    if any(line[0] for line in table):
        print("* selected (CUBECL_BACKEND, else `backend` in cubecl.toml, else cpu)")
    else:
        print(f"the selected backend {selected!r} is not installed (CUBECL_BACKEND, else "
              "`backend` in cubecl.toml)")
    return 0


def _is_selected(name: str, status: str, selected: str) -> bool:
    """Whether the row of backend ``name`` is the one a client uses by default (a broken
    plugin's row names the plugin, not a backend; an incompatible backend is never
    used)."""
    return name == selected and status not in ("broken", "incompatible")
