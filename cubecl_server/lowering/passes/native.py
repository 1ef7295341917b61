"""What a target does natively: the IR rules the passes need not lower for it.

A backend describes its target once (per device where features differ) with a
:class:`Native`; :func:`~cubecl_server.lowering.passes.lower` lowers everything the
description leaves out, so an emitter only ever meets what its target writes 1:1.
Every field's default is the conservative one: the pass runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cubecl_server import ir

__all__ = ["Native", "ALL_BUILTINS", "GRID_BUILTINS", "INT_FUNCTIONS"]

B = ir.BuiltinName
M = ir.MathFn

ALL_BUILTINS = frozenset(B)
"""Every builtin of the IR: what a target reading each one directly declares."""

GRID_BUILTINS = frozenset({B.UNIT_POS_X, B.UNIT_POS_Y, B.UNIT_POS_Z, B.CUBE_POS_X,
                           B.CUBE_POS_Y, B.CUBE_POS_Z, B.CUBE_COUNT_X, B.CUBE_COUNT_Y,
                           B.CUBE_COUNT_Z})
"""The per-axis positions and counts every GPU API has; the rest derive from these
and the cube dim (``docs/ir.md``, "BuiltinName")."""

INT_FUNCTIONS = frozenset({M.COUNT_ONES, M.REVERSE_BITS, M.LEADING_ZEROS, M.TRAILING_ZEROS,
                           M.FIND_FIRST_SET, M.MUL_HI, M.SATURATING_ADD, M.SATURATING_SUB})
"""The integer functions a target may have built in (in ``Native.functions``)."""


def _no_math() -> Mapping[ir.Elem, frozenset[ir.MathFn]]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Native:
    """What one target computes itself, exactly as ``docs/ir.md`` says; the passes
    lower the rest into what it does have.

    - ``short_circuit``: ``and``/``or`` evaluate their right side only where the left
      side does not decide (C's ``&&``). Without it, a right side that loads or holds a
      plane operation becomes an ``if``.
    - ``nan_minmax``: float ``MIN``/``MAX`` return the other operand of a NaN (C's
      ``fmin``/``fmax``). Without it they become comparisons and selects.
    - ``functions``: per element type, the functions it computes itself exactly as
      ``docs/ir.md`` says - the integer ones of :data:`INT_FUNCTIONS`, and the float
      ones within the accuracy budget at every input, edges included. The other
      integer functions become IR (:mod:`~cubecl_server.lowering.passes.integers`), the
      float ones the core's polyfills (:mod:`~cubecl_server.lowering.passes.mathlib`).
      ``SQRT``, ``FLOOR``, ``CEIL``, ``TRUNC``, ``ROUND``, ``ABS``, ``FMA``, ``ISNAN`` and
      ``ISINF`` every target is taken to have (the polyfills use them).
    - ``float_rem``: float ``%`` is C's ``fmod``, exactly. Without it, the core's.
    - ``float_atomics``: the f32 atomics (``ADD``, ``MIN``, ``MAX``, ``EXCHANGE``) it has; the
      others become compare-exchange loops on the element's bits.
    - ``builtins``: the builtins it reads directly; the others are derived from them
      (at least :data:`GRID_BUILTINS`, and the plane builtins where it has planes).
    - ``zeroed_shared``, ``zeroed_local_arrays``: shared arrays (per cube) and local
      arrays (per unit) start at zero without a word from the kernel. Without them
      the kernel clears them first (shared ones behind a barrier).
    - ``checked_position``: a load of an array parameter (not of lines) at the unit's
      own ``ABSOLUTE_POS`` reads 0 past the array's end, and a store there is dropped,
      as checked mode wants, with no check written (the cpu's slices of a chunk's
      positions). Without it checked mode checks those accesses as any other.
    """

    short_circuit: bool = False
    nan_minmax: bool = False
    functions: Mapping[ir.Elem, frozenset[ir.MathFn]] = field(default_factory=_no_math)
    float_rem: bool = False
    float_atomics: frozenset[ir.AtomicOp] = frozenset()
    builtins: frozenset[ir.BuiltinName] = GRID_BUILTINS
    zeroed_shared: bool = False
    zeroed_local_arrays: bool = False
    checked_position: bool = False

    def has(self, fn: ir.MathFn, t: ir.Type) -> bool:
        """Whether the target computes ``fn`` on values of ``t`` (a line's element type)
        itself."""
        return fn in self.functions.get(ir.elem_of(t), frozenset())
