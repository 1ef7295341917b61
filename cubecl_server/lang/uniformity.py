"""Uniformity analysis: which code every unit of a cube reaches together.

A barrier (``sync_cube()``) must be reached by all units of a cube, and a shared
array is declared once for the whole cube; both are reported when they sit under
control flow that depends on the unit. The analysis runs on the finished IR of a
kernel (helpers already inlined), flow-insensitively and to a fixed point:

- ``workgroup_uniform_load(tile[i])`` (a :class:`UniformLoad`) is uniform where its
  index is: every unit reads the element between two barriers. It must be reached
  under uniform control, as a barrier, and its index must be uniform.
- An expression is *uniform* when it derives only from constants (literals and
  comptime values), scalar parameters, ``CUBE_POS*``/``CUBE_DIM*``/``CUBE_COUNT*``,
  ``PLANE_DIM``, ``len``/``shape``/``stride`` and uniform locals. ``UNIT_POS*``,
  ``ABSOLUTE_POS*``, ``UNIT_POS_PLANE``, loads (from global or shared memory), plane
  operations and atomic results are not.
- A local is uniform when every assignment to it (and, for a loop variable, its
  loop's bounds) is uniform and happens under uniform control.
- Control is *divergent* inside an ``if``/``while`` whose condition, or a ``for``
  whose bounds, are not uniform; after a ``return`` taken under divergent control
  (for the rest of the kernel); and after a ``break``/``continue`` taken under
  divergent control, for the rest of that loop (every iteration of its body).

The analysis is conservative where it cannot see values: a condition on a value
loaded from memory is divergent even when every unit loaded the same value (hoist
such a value into a scalar parameter or comptime value, or restructure).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import ir

__all__ = ["UNIFORM_BUILTINS", "Marker", "UniformLoad", "Divergence", "is_uniform",
           "find_divergent", "strip_markers"]

UNIFORM_BUILTINS: frozenset[ir.BuiltinName] = frozenset({
    ir.BuiltinName.CUBE_POS, ir.BuiltinName.CUBE_POS_X, ir.BuiltinName.CUBE_POS_Y,
    ir.BuiltinName.CUBE_POS_Z, ir.BuiltinName.CUBE_DIM, ir.BuiltinName.CUBE_DIM_X,
    ir.BuiltinName.CUBE_DIM_Y, ir.BuiltinName.CUBE_DIM_Z, ir.BuiltinName.CUBE_COUNT,
    ir.BuiltinName.CUBE_COUNT_X, ir.BuiltinName.CUBE_COUNT_Y, ir.BuiltinName.CUBE_COUNT_Z,
    ir.BuiltinName.PLANE_DIM,
})
"""Builtins with one value for all units of a cube."""


@dataclass(frozen=True, eq=False)
class Marker:
    """A point the frontend puts into the body while building, that must be reached
    under uniform control (a shared-array declaration); removed before the IR is
    returned. ``eq=False``: each marker is its own point."""

    what: str


@dataclass(frozen=True, eq=False)
class UniformLoad:
    """``name = load`` of shared memory by every unit of the cube between two barriers
    (``workgroup_uniform_load``): a uniform value where the index is uniform. The
    frontend puts it into the body while building; :func:`strip_markers` turns it
    into ``Barrier, Assign, Barrier``."""

    name: str
    load: ir.Load


@dataclass(frozen=True)
class Divergence:
    """``stmt`` (a Barrier, a Marker or a UniformLoad) is reached under divergent control;
    ``cause`` is the statement that made control divergent (an If, For, While, Return,
    Break or Continue), or a UniformLoad itself whose index depends on the unit."""

    stmt: object
    cause: object


def is_uniform(e: ir.Expr, divergent_locals: set[str] | frozenset[str]) -> bool:
    """Whether ``e`` has one value for all units of a cube."""
    for n in ir.walk(e):
        match n:
            case ir.Var(name=name) if name in divergent_locals:
                return False
            case ir.Builtin(name=b) if b not in UNIFORM_BUILTINS:
                return False
            case ir.Load() | ir.PlaneOp():
                return False
    return True


class _Pass:
    def __init__(self, divergent: set[str]) -> None:
        self.divergent = divergent
        self.changed = False
        self.found: list[Divergence] = []

    def mark(self, name: str) -> None:
        if name not in self.divergent:
            self.divergent.add(name)
            self.changed = True

    def uni(self, e: ir.Expr) -> bool:
        return is_uniform(e, self.divergent)

    def block(self, body: tuple[object, ...], cause: object | None
              ) -> tuple[object | None, object | None]:
        """Visit ``body``; return the causes of a divergent return and of a divergent
        break/continue it contains (None when there is none)."""
        ret: object | None = None
        brk: object | None = None
        for s in body:
            cur = cause or ret or brk
            match s:
                case ir.Assign(name=name, value=value):
                    if cur is not None or not self.uni(value):
                        self.mark(name)
                case ir.AtomicStmt(result=result):
                    if result is not None:
                        self.mark(result)
                case ir.Barrier() | Marker():
                    if cur is not None:
                        self.found.append(Divergence(s, cur))
                case UniformLoad(name=name, load=load):
                    if cur is not None or not self.uni(load.index):
                        self.found.append(Divergence(s, cur or s))
                        self.mark(name)
                case ir.TensorMapLoad(coords=coords):
                    if cur is not None or not all(self.uni(c) for c in coords):
                        self.found.append(Divergence(s, cur or s))
                case ir.If(cond=cond, then=then, orelse=orelse):
                    c = cur if cur is not None else (None if self.uni(cond) else s)
                    r1, b1 = self.block(then, c)
                    r2, b2 = self.block(orelse, c)
                    ret, brk = ret or r1 or r2, brk or b1 or b2
                case ir.For(var=var, start=start, stop=stop, step=step, body=inner):
                    c = cur if cur is not None else (
                        None if self.uni(start) and self.uni(stop) and self.uni(step) else s)
                    if c is not None:
                        self.mark(var)
                    ret = self.loop(inner, c) or ret
                case ir.While(cond=cond, body=inner):
                    c = cur if cur is not None else (None if self.uni(cond) else s)
                    ret = self.loop(inner, c) or ret
                case ir.Return():
                    if cur is not None:
                        ret = ret or s
                case ir.Break() | ir.Continue():
                    if cur is not None:
                        brk = brk or s
        return ret, brk

    def loop(self, body: tuple[object, ...], cause: object | None) -> object | None:
        ret, brk = self.block(body, cause)
        if brk is not None and cause is None:
            # Later iterations run with the units a divergent break/continue left.
            r2, _ = self.block(body, brk)
            ret = ret or r2
        return ret


def find_divergent(body: tuple[object, ...]) -> list[Divergence]:
    """Every barrier and marker of ``body`` reached under divergent control, in order."""
    divergent: set[str] = set()
    while True:
        p = _Pass(divergent)
        p.block(body, None)
        if not p.changed:
            # A pass that learnt nothing new saw the final set of divergent locals.
            seen: set[int] = set()
            out = []
            for d in p.found:
                if id(d.stmt) not in seen:
                    seen.add(id(d.stmt))
                    out.append(d)
            return out


def strip_markers(body: tuple[object, ...]) -> tuple[ir.Stmt, ...]:
    """``body`` without the frontend's markers."""
    out: list[ir.Stmt] = []
    for s in body:
        match s:
            case Marker():
                continue
            case UniformLoad(name=name, load=load):
                out += [ir.Barrier(), ir.Assign(name, load), ir.Barrier()]
            case ir.If(then=t, orelse=o):
                out.append(replace(s, then=strip_markers(t), orelse=strip_markers(o)))
            case ir.For(body=b) | ir.While(body=b):
                out.append(replace(s, body=strip_markers(b)))
            case _:
                out.append(s)  # type: ignore[arg-type]
    return tuple(out)
