"""Slices: a view ``a[lo:hi]`` of an array, a shared or a local array, lowered to plain IR.

A slice is not an IR value. The frontend keeps, for each slice name, the array it
views and two hidden ``u32`` locals (its start in the array and its length), and
turns every access ``s[i]`` into an access of the array at :func:`window_index`: the
element ``start + i`` where ``i < length``, else an index no array reaches
(``2**32 - 1``: lengths are ``u32``, so the last valid index is ``2**32 - 2``). In
checked mode that index reads 0 and drops a store or an atomic, as any access outside
an array does, so an access outside the *slice* is refused even where it is inside
the array; in unchecked mode it is undefined, as any access outside an array is.
Every backend therefore runs slices with no code of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir

OUTSIDE = ir.Const(0xFFFFFFFF, ir.Elem.U32)
"""The index an access outside its slice is sent to: past the end of every array."""


@dataclass(frozen=True)
class SliceRef:
    """What a slice name stands for: a window of ``array`` (its IR name), from the
    ``u32`` local ``start`` for ``length`` elements (both IR names).

    ``param`` tells an array parameter's slice from a shared or local array's, and
    ``local`` a local array's (which atomics do not reach); ``line`` is the line of the
    first assignment, for messages.
    """

    array: str
    elem: ir.Elem
    start: str
    length: str
    param: bool
    local: bool
    line: int

    @property
    def start_var(self) -> ir.Var:
        """The slice's start in its array, as an expression."""
        return ir.Var(self.start, ir.Elem.U32)

    @property
    def length_var(self) -> ir.Var:
        """The slice's length (``len(s)``), as an expression."""
        return ir.Var(self.length, ir.Elem.U32)


def as_u32(x: ir.Expr) -> ir.Expr:
    """``x`` (an integer expression) converted to ``u32``; a constant is folded."""
    if x.type is ir.Elem.U32:
        return x
    if isinstance(x, ir.Const):
        return ir.Const(int(x.value) & 0xFFFFFFFF, ir.Elem.U32)
    return ir.Cast(x, ir.Elem.U32)


def window_index(ref: SliceRef, index: ir.Expr) -> ir.Expr:
    """The index into ``ref.array`` that element ``index`` of the slice is: ``start +
    index`` where ``0 <= index < length``, else :data:`OUTSIDE`.

    The test is made in the index's own width, unsigned (a negative index is then
    past any length), so a 64-bit index past ``2**32`` is outside too.
    """
    t = index.type
    assert isinstance(t, ir.Elem) and t.is_int
    wide = ir.Elem.U64 if t.bits == 64 else ir.Elem.U32
    unsigned = index if t is wide else ir.Cast(index, wide)
    length: ir.Expr = ref.length_var if wide is ir.Elem.U32 else ir.Cast(ref.length_var, wide)
    inside = ir.Binary(ir.BinOp.LT, unsigned, length, ir.Elem.BOOL)
    at = ir.Binary(ir.BinOp.ADD, ref.start_var, as_u32(index), ir.Elem.U32)
    return ir.Select(inside, at, OUTSIDE, ir.Elem.U32)


def bounds(lo: ir.Expr, hi: ir.Expr, parent: SliceRef | None) -> tuple[ir.Expr, ir.Expr]:
    """The start and length of ``[lo:hi]`` (``u32`` expressions) of an array, or of the
    slice ``parent``: the length is ``hi - lo``, 0 where ``hi <= lo``; of a slice, ``hi``
    is first clamped to the parent's length, so a slice never reaches past its parent."""
    if parent is not None and hi != parent.length_var:
        hi = ir.Math(ir.MathFn.MIN, (hi, parent.length_var), ir.Elem.U32)
    if isinstance(lo, ir.Const) and isinstance(hi, ir.Const):
        length: ir.Expr = ir.Const(max(int(hi.value) - int(lo.value), 0), ir.Elem.U32)
    else:
        length = ir.Select(ir.Binary(ir.BinOp.GT, hi, lo, ir.Elem.BOOL),
                           ir.Binary(ir.BinOp.SUB, hi, lo, ir.Elem.U32),
                           ir.Const(0, ir.Elem.U32), ir.Elem.U32)
    start = lo if parent is None else ir.Binary(ir.BinOp.ADD, parent.start_var, lo,
                                                 ir.Elem.U32)
    return start, length
