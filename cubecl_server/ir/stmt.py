"""The IR's statements: assignments, stores, structured control flow, barriers and
atomics; they nest, and there is no goto."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .expr import Expr

__all__ = [
    "Assign", "Store", "If", "For", "While", "Break", "Continue", "Return", "Barrier",
    "SyncPlane", "AtomicOp", "AtomicStmt", "TensorMapLoad", "DebugPrint", "MAX_PRINT_TEXT",
    "Stmt",
]


@dataclass(frozen=True)
class Assign:
    """``name = value`` for a declared local."""

    name: str
    value: Expr


@dataclass(frozen=True)
class Store:
    """``array[index] = value``; in checked mode an index outside the array is dropped."""

    array: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class If:
    """``if cond: then else: orelse``."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)``; ``step`` is a nonzero constant or a
    value computed at run time.

    The bounds and the step are evaluated once, before the first iteration, and the
    trip count is Python's: ``max(0, ceil((stop - start) / step))``; a step that is 0
    at run time runs no iterations. ``unroll`` asks the backend to unroll (the bounds
    and step are then constants).
    """

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    unroll: bool = False


@dataclass(frozen=True)
class While:
    """``while cond: body``."""

    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break:
    """Leaves the innermost loop."""


@dataclass(frozen=True)
class Continue:
    """Goes on with the next iteration of the innermost loop."""


@dataclass(frozen=True)
class Return:
    """Ends this unit's work."""


@dataclass(frozen=True)
class Barrier:
    """Waits until every unit of the cube reaches it; makes shared memory writes visible."""


@dataclass(frozen=True)
class SyncPlane:
    """Waits until every active unit of this unit's plane reaches it; makes memory
    writes before it visible to the plane."""


class AtomicOp(enum.Enum):
    """Atomic read-modify-write operations on one array element."""

    ADD = "add"
    SUB = "sub"
    MAX = "max"
    MIN = "min"
    EXCHANGE = "exchange"
    COMPARE_EXCHANGE = "compare_exchange"
    AND = "and"
    OR = "or"
    XOR = "xor"


@dataclass(frozen=True)
class AtomicStmt:
    """``result = atomic_op(array, index, value)``: the old value goes to ``result``.

    On ``f32`` elements there are ``ADD``, ``MAX`` and ``MIN`` (these two as
    ``fmax``/``fmin``: a NaN operand leaves the element as it is, a NaN element takes
    the operand).

    ``COMPARE_EXCHANGE`` stores ``value`` only where the element equals ``compare``.
    ``result`` is None when the old value is not used.
    """

    op: AtomicOp
    array: str
    index: Expr
    value: Expr
    compare: Expr | None
    result: str | None


@dataclass(frozen=True)
class TensorMapLoad:
    """Copies the box of tensor map ``map`` whose first element is at ``coords`` (``i32``,
    innermost dimension first, one per dimension of the map) into shared array
    ``shared``, and waits for it: afterwards every unit of the cube sees the box there.

    Every unit of the cube reaches it with the same coordinates, as it reaches a
    :class:`Barrier`, and it orders like one before and after. The map's box holds as
    many elements as the shared array (the launch checks it).
    """

    map: str
    shared: str
    coords: tuple[Expr, ...]


MAX_PRINT_TEXT = 1024
"""The most characters the texts of one :class:`DebugPrint` hold."""


@dataclass(frozen=True)
class DebugPrint:
    """Print one line for each unit that runs it: ``text[0]``, ``args[0]``, ``text[1]``,
    ... ``text[-1]`` (one more text than args), then a newline, as one write.

    ``args`` are values of element types (no lines, no minifloats): integers in
    decimal, floats as C's ``%g`` (six significant digits; ``inf``, ``nan``), bools as
    ``1`` or ``0``. The texts are printable ASCII. Lines of different units come in no
    particular order. Only on a device with ``Capabilities.debug_print``; the texts hold
    at most :data:`MAX_PRINT_TEXT` characters.
    """

    text: tuple[str, ...]
    args: tuple[Expr, ...]


Stmt = (Assign | Store | If | For | While | Break | Continue | Return | Barrier | AtomicStmt
        | SyncPlane | TensorMapLoad | DebugPrint)
