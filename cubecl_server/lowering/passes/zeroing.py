"""Which shared arrays a kernel must clear before its body runs.

Shared memory is uninitialised by the IR's rules (``docs/ir.md``), but the C-family
and SPIR-V targets clear it at the start of each cube anyway, so that a kernel which
reads an element no unit wrote gets zeros, as on the cpu backend, rather than what
another cube or kernel left there. That costs a loop over the array and a barrier in
every cube, which a reduction's few-step tree feels (on PoCL it was the whole of a
generated row reduction's 1.2x against the same kernel hand-written). The clearing
cannot be seen, and is left out, when every unit writes its own element before any
unit can read one:

- the array has exactly one element per unit of the cube (its size is the cube
  dim's product);
- a statement of the body's top level (so every unit runs it, unless an earlier one
  may have left: none of them contains a ``return``) stores to element ``UNIT_POS``:
  the builtin itself, or a local assigned ``UNIT_POS`` at the top level earlier and
  nowhere else;
- nothing before that store, and nothing from it up to the first top-level barrier
  after it, touches the array (reads, stores, atomics, tensor-map loads), so no unit
  can read an element before the unit that owns it has written it.

Conservative: any other kernel keeps the clearing. The cpu backend allocates its
shared arrays zeroed and does not ask.
"""

from __future__ import annotations

from collections import Counter

from cubecl_server import ir
from cubecl_server.kernel import CubeDim

__all__ = ["shared_to_zero"]

_UNIT_POS = ir.Builtin(ir.BuiltinName.UNIT_POS)


def shared_to_zero(kernel: ir.Kernel, cube_dim: CubeDim) -> frozenset[str]:
    """The names of ``kernel``'s shared arrays that must be cleared at the start of
    each cube when it runs with ``cube_dim`` (see the module)."""
    units = cube_dim.x * cube_dim.y * cube_dim.z
    assigned = Counter(ir.assigned_names(kernel.body))
    return frozenset(sh.name for sh in kernel.shared
                     if sh.size != units or not _written_first(kernel.body, sh.name, assigned))


def _touches(node: ir.Stmt | ir.Expr, name: str) -> bool:
    for n in ir.walk(node):
        if isinstance(n, ir.Load | ir.Store | ir.AtomicStmt) and n.array == name:
            return True
        if isinstance(n, ir.TensorMapLoad) and n.shared == name:
            return True
    return False


def _written_first(body: tuple[ir.Stmt, ...], name: str, assigned: Counter[str]) -> bool:
    """Whether every unit stores element UNIT_POS of ``name`` before any unit may read
    an element of it."""
    unit_pos: set[str] = set()  # locals that hold UNIT_POS from here on
    for at, s in enumerate(body):
        if (isinstance(s, ir.Store) and s.array == name
                and (s.index == _UNIT_POS
                     or (isinstance(s.index, ir.Var) and s.index.name in unit_pos))
                and not _touches(s.value, name)):
            return _untouched_until_barrier(body[at + 1:], name)
        if _touches(s, name) or any(isinstance(n, ir.Return) for n in ir.walk(s)):
            return False
        if isinstance(s, ir.Assign) and s.value == _UNIT_POS and assigned[s.name] == 1:
            unit_pos.add(s.name)
    return False


def _untouched_until_barrier(rest: tuple[ir.Stmt, ...], name: str) -> bool:
    for s in rest:
        if isinstance(s, ir.Barrier):
            return True
        if _touches(s, name):
            return False
    return True
