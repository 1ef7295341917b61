"""Tuples of the kernel language: the values of ``a, b`` on the right of an unpacking
assignment and of a ``@cube_fn`` that returns several values. A tuple is never a
value of the IR: it exists only until it is unpacked into names or elements
(``q, r = divmod_fn(x, y)``, ``a, b = b, a``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .typerules import Value

__all__ = ["TupleValue", "Unpacked", "target_leaves", "needs_holding"]


@dataclass(frozen=True)
class TupleValue:
    """The values of a tuple expression or of a helper returning several, in order."""

    items: tuple[Unpacked, ...]


Unpacked = Value | TupleValue
"""What the right side of an assignment evaluates to: one value or a tuple of them."""


def target_leaves(target: ast.expr) -> list[ast.expr]:
    """The names and elements a (possibly nested) target assigns, left to right."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [leaf for e in target.elts for leaf in target_leaves(e)]
    return [target]


def needs_holding(targets: list[ast.expr], value: ast.expr) -> bool:
    """Whether the right side's values must be kept in locals before any target is
    assigned: Python evaluates the whole right side first, so ``a, b = b, a`` swaps.
    That matters where a target is assigned before a value reading it is: a name the
    right side reads, or an element (a store may change what a load reads)."""
    leaves = [leaf for t in targets for leaf in target_leaves(t)]
    if len(leaves) < 2:
        return False
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    return any(not isinstance(leaf, ast.Name) or leaf.id in read for leaf in leaves)
