"""What every subcommand shares: the subparsers type and plain-text tables."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeAlias

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

__all__ = ["Subparsers", "WIDTH", "print_table", "shorten"]

WIDTH = 100
"""The width a table is shortened to fit, unless ``--wide`` asks for every cell whole."""

_ELLIPSIS = "..."
# Below this a shortened cell says too little to tell rows apart.
_MIN_CELL = 12


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle: a driver string
    keeps its start (backend, device) and its end (driver version, artifact kind)."""
    if len(text) <= width:
        return text
    keep = max(width - len(_ELLIPSIS), 2)
    head = (keep + 1) // 2
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head):]


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], *,
                shrink: Sequence[int] = (), width: int | None = WIDTH) -> None:
    """Print ``rows`` under ``header`` in left-aligned columns (the last one unpadded).

    When a line would be wider than ``width``, the cells of the columns ``shrink``
    (indexes) are cut in the middle (:func:`shorten`), the longest first, until the
    table fits or none is longer than its header and 12 characters; ``width`` None
    never cuts.
    """
    table = [tuple(header), *(tuple(r) for r in rows)]
    if width is not None and shrink:
        table = _fit(table, shrink, width)
    widths = [max(len(line[i]) for line in table) for i in range(len(header) - 1)]
    for line in table:
        cells = [cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True)]
        print("  ".join([*cells, line[-1]]).rstrip())


def _fit(table: list[tuple[str, ...]], shrink: Sequence[int], width: int
         ) -> list[tuple[str, ...]]:
    """``table`` with the cells of the ``shrink`` columns cut to fit ``width``."""
    natural = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    fixed = sum(w for i, w in enumerate(natural) if i not in shrink)
    budget = width - fixed - 2 * (len(natural) - 1)
    floor = {i: max(len(table[0][i]), _MIN_CELL) for i in shrink}
    caps = {i: natural[i] for i in shrink}
    # Take one character at a time from the widest column that can still give one.
    while sum(caps.values()) > budget:
        cuttable = [i for i in shrink if caps[i] > floor[i]]
        if not cuttable:
            break
        widest = max(cuttable, key=lambda i: caps[i])
        caps[widest] -= 1
    return [tuple(shorten(cell, caps[i]) if i in caps and n else cell
                  for i, cell in enumerate(line)) for n, line in enumerate(table)]
