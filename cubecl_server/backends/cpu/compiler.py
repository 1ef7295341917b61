"""The ``cpu`` backend's Compiler: IR -> vectorised NumPy Python source.

It lowers IR that :func:`cubecl_server.ir_check.check_kernel` has accepted (the
loader checks every kernel first), so it checks no rule of ``docs/ir.md`` itself. Its
emitter builds on the core's :class:`~cubecl_server.lowering.StructuredEmitter`
(names, temporaries, nesting, dispatch over the IR's nodes).

The generated module imports only ``numpy as np`` and
:mod:`cubecl_server.backends.cpu.support` (as ``_s``) and defines::

    def run(arrays, shapes, strides, scalars, count, dim): ...

- ``arrays``: one 1-D NumPy array per array parameter, in parameter order, of the
  parameter's dtype; stores write into them in place.
- ``shapes``, ``strides``: per array parameter, tuples of ints (strides in
  elements). ``ir.Shape`` and ``ir.Stride`` past the rank both read 1 (a trailing
  axis of extent 1 has stride 1 in C order).
- ``scalars``: one value per scalar parameter, in order (converted to its type).
- ``count``, ``dim``: the cube count and cube dim as ``(x, y, z)``; ``dim`` must be
  the cube dim the kernel was compiled for.

Execution model. Every unit of the launch runs at once as a lane of NumPy arrays,
one chunk of whole cubes at a time (:func:`support.chunks`). Control flow is
divergent through masks (see :mod:`support` for values and masks):

- ``if`` runs its then-branch under ``mask & cond`` and its else-branch under
  ``mask & ~cond``, each skipped when no lane is left in it; an assignment under a
  mask keeps the old value in the other lanes.
- ``and``/``or`` compute their right side only in the lanes the left side leaves
  undecided (under that narrower mask, and not at all when no lane is left), so a load
  there never touches the lanes the left side decided: Python's short circuit, lane by
  lane. A right side without loads or plane operations is computed in every lane.
- Loops step while any lane is active; each lane leaves when its own condition
  fails, or on ``break``; ``continue`` masks a lane off for the rest of the
  iteration; ``return`` masks it off for the rest of the kernel. Statements after
  a jump in the same block are unreachable and not emitted; after a compound
  statement that may jump, the block's mask is narrowed and the rest of the block
  runs only if a lane is left.
- ``for`` follows Python's ``range``: the bounds are evaluated once and turned
  into a per-lane trip count (so a counter near its type's limit never wraps into
  extra iterations); the variable takes each value in turn and keeps the last one
  after the loop (unchanged in a lane that runs no iteration); assigning the
  variable in the body does not change the trip count.
- Locals start as zeros of their type: reading a local before a path assigns it
  reads 0. Assignments in the kernel's top-level block are not masked: the only
  lanes inactive there have returned, and nothing they hold is observable again.
- Barriers need no work: all lanes of all cubes of a chunk execute each statement
  together as one vector operation, in program order, so every shared-memory write
  before a barrier is complete before any lane runs a statement after it. This
  holds inside loops too, since every lane still steps through the body statement
  by statement (masked-off lanes just do not write). A barrier that only some units
  of a cube reach is undefined behaviour on every backend.
- Memory: checked mode reads 0 outside an array (or a cube's shared array) and
  drops writes outside, except for the accesses the core's bounds pass proved
  inside (:attr:`StructuredEmitter.proven`), lowered as in unchecked mode; inactive
  lanes never write in either mode. Of several lanes
  storing to one address, the last in lane order wins. Atomics act as if the
  active lanes ran one after another in lane order (see :func:`support.atomic`).
- Planes have :data:`PLANE_SIZE` units: consecutive units of a cube, the last plane
  of a cube short when the cube size is not a multiple of it.

Integer arithmetic wraps; ``IDIV`` and ``REM`` truncate toward zero as in C and an
integer division by zero gives 0; float ``IDIV`` is ``trunc(a / b)`` (consistent
with ``REM`` being ``fmod``). Constants are emitted typed (``np.float32(2.5)``) so
NumPy 2's promotion rules keep every operation in the IR's type; an integer
constant outside its type's range wraps. NumPy's floating-point warnings are off.
``FMA`` is ``a * b + c`` rounded twice.

Lines are NumPy's last axis: a line value is an array of shape ``(lanes, N)`` (or
``(N,)`` where it is the same in every lane), a line array the 1-D array of its
elements read as ``(n / N, N)`` (:func:`support.load_line`, a view of the array at
``ABSOLUTE_POS``); elementwise operations are NumPy's, broadcasting a lane's mask or
bool over its line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cubecl_server import ir
from cubecl_server.backend import (
    CompiledKernel,
    CubeDim,
    ExecutionMode,
    StructuredEmitter,
    metadata_kind,
)

__all__ = ["PLANE_SIZE", "CpuCompiler"]

PLANE_SIZE = 32
"""Units per plane (subgroup) on the cpu backend."""

_ARITH = {ir.BinOp.ADD: "+", ir.BinOp.SUB: "-", ir.BinOp.MUL: "*"}
_BITWISE = {ir.BinOp.BITAND: "&", ir.BinOp.BITOR: "|", ir.BinOp.BITXOR: "^"}
_COMPARE = {ir.BinOp.EQ: "==", ir.BinOp.NE: "!=", ir.BinOp.LT: "<", ir.BinOp.LE: "<=",
            ir.BinOp.GT: ">", ir.BinOp.GE: ">="}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_FLOAT_FNS = {ir.MathFn.EXP: "np.exp", ir.MathFn.LOG: "np.log", ir.MathFn.SQRT: "np.sqrt",
              ir.MathFn.SIN: "np.sin", ir.MathFn.COS: "np.cos", ir.MathFn.TANH: "np.tanh",
              ir.MathFn.FLOOR: "np.floor", ir.MathFn.CEIL: "np.ceil",
              ir.MathFn.ERF: "_s.erf", ir.MathFn.TAN: "np.tan", ir.MathFn.ASIN: "np.arcsin",
              ir.MathFn.ACOS: "np.arccos", ir.MathFn.ATAN: "np.arctan",
              ir.MathFn.SINH: "np.sinh", ir.MathFn.COSH: "np.cosh", ir.MathFn.LOG2: "np.log2",
              ir.MathFn.EXP2: "np.exp2", ir.MathFn.LOG1P: "np.log1p",
              ir.MathFn.EXPM1: "np.expm1", ir.MathFn.ROUND: "np.rint",
              ir.MathFn.TRUNC: "np.trunc", ir.MathFn.SIGN: "_s.sign",
              ir.MathFn.COUNT_ONES: "_s.count_ones", ir.MathFn.REVERSE_BITS: "_s.reverse_bits",
              ir.MathFn.LEADING_ZEROS: "_s.leading_zeros",
              ir.MathFn.TRAILING_ZEROS: "_s.trailing_zeros",
              ir.MathFn.FIND_FIRST_SET: "_s.find_first_set"}
_FLOAT_FNS2 = {ir.MathFn.ATAN2: "np.arctan2", ir.MathFn.COPYSIGN: "np.copysign",
               ir.MathFn.HYPOT: "np.hypot", ir.MathFn.POW: "np.power",
               ir.MathFn.MUL_HI: "_s.mul_hi"}
_PLANE_FNS = {ir.PlaneFn.SUM: "_s.plane_sum", ir.PlaneFn.MAX: "_s.plane_max",
              ir.PlaneFn.MIN: "_s.plane_min", ir.PlaneFn.PROD: "_s.plane_prod",
              ir.PlaneFn.ALL: "_s.plane_all", ir.PlaneFn.ANY: "_s.plane_any",
              ir.PlaneFn.INCLUSIVE_SUM: "_s.plane_inclusive_sum",
              ir.PlaneFn.EXCLUSIVE_SUM: "_s.plane_exclusive_sum",
              ir.PlaneFn.BALLOT: "_s.plane_ballot", ir.PlaneFn.BROADCAST: "_s.plane_broadcast",
              ir.PlaneFn.SHUFFLE_XOR: "_s.plane_shuffle_xor",
              ir.PlaneFn.SHUFFLE: "_s.plane_broadcast",
              ir.PlaneFn.INCLUSIVE_PROD: "_s.plane_inclusive_prod",
              ir.PlaneFn.EXCLUSIVE_PROD: "_s.plane_exclusive_prod"}
# The same in every lane of a launch. Unlike lang.uniformity's per-cube set, CUBE_POS*
# is left out: one chunk holds several cubes.
_UNIFORM_BUILTINS = frozenset({
    ir.BuiltinName.CUBE_DIM, ir.BuiltinName.CUBE_DIM_X, ir.BuiltinName.CUBE_DIM_Y,
    ir.BuiltinName.CUBE_DIM_Z, ir.BuiltinName.CUBE_COUNT, ir.BuiltinName.CUBE_COUNT_X,
    ir.BuiltinName.CUBE_COUNT_Y, ir.BuiltinName.CUBE_COUNT_Z, ir.BuiltinName.PLANE_DIM,
})


class CpuCompiler:
    """The ``cpu`` backend's Compiler: an IR kernel -> a NumPy Python module's source."""

    extension = "py"

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` for launches of ``cube_dim`` in ``mode``."""
        source = _Emitter(kernel, cube_dim, mode).module()
        return CompiledKernel(name=kernel.name, entry_point="run", source=source,
                              extension=self.extension)


@dataclass(frozen=True)
class _Loop:
    """The masks of one loop being emitted: lanes still looping, lanes in this pass."""

    looping: str
    body: str


def _dtype(elem: ir.Type) -> str:
    return f"np.{ir.elem_of(elem).numpy_name}"


def _zero(t: ir.Type) -> str:
    """The zero of ``t``: a line of zeros for a line type."""
    if isinstance(t, ir.Line):
        return f"np.zeros({t.size}, {_dtype(t)})"
    return _const(0, t)


def _const(value: int | float | bool, elem: ir.Elem) -> str:
    if elem is ir.Elem.BOOL:
        return "np.True_" if value else "np.False_"
    if elem.is_float:
        v = float(value)
        text = repr(v) if math.isfinite(v) else f"'{v}'"
        return f"{_dtype(elem)}({text})"
    bits = elem.bits
    v = int(value) & ((1 << bits) - 1)
    if elem.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return f"{_dtype(elem)}({v})"


def _jumps(s: ir.Stmt) -> tuple[bool, bool]:
    """Whether ``s`` may return, and may break/continue the loop enclosing it."""
    ret = any(isinstance(n, ir.Return) for n in ir.walk(s))
    loop = False
    if not isinstance(s, (ir.For, ir.While)):
        stack: list[ir.Stmt] = [s]
        while stack and not loop:
            n = stack.pop()
            if isinstance(n, (ir.Break, ir.Continue)):
                loop = True
            elif isinstance(n, ir.If):
                stack.extend(n.then + n.orelse)
    return ret, loop


class _Emitter(StructuredEmitter):
    """Writes one kernel's module, every statement under :attr:`mask` (the name of the
    lanes it runs in) and every expression for :attr:`consumed` use."""

    comment = "#"

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode) -> None:
        super().__init__(kernel, cube_dim, mode, "cpu")
        self.mask = "alive"
        # Whether the expression being lowered feeds an operation at once (so it may be
        # a view of an array parameter) or must be a value of its own.
        self.consumed = True
        self.loops: list[_Loop] = []
        self.position = {p.name: i for table in (self.arrays, self.scalars)
                         for i, p in enumerate(table.values())}
        # Locals assigned once, at the top level, to the lane's position (maybe cast).
        self.pos_aliases: dict[str, ir.Expr] = {}
        # Locals assigned once, at the top level, a value the same in every lane.
        self.uniform_locals: set[str] = set()
        self.hoisted: dict[tuple[str, str, int], str] = {}
        self.assign_counts: dict[str, int] = {}
        for n in ir.walk(kernel.body):
            target = (n.name if isinstance(n, ir.Assign) else n.var
                      if isinstance(n, ir.For) else n.result
                      if isinstance(n, ir.AtomicStmt) else None)
            if target is not None:
                self.assign_counts[target] = self.assign_counts.get(target, 0) + 1

    def _py(self, name: str) -> str:
        """The Python name of a parameter, local, shared or local array."""
        role = ("s" if name in self.shared else "l" if name in self.locals
                else "a" if name in self.local_arrays else "p")
        return f"{role}_{self.stems[name]}"

    @contextmanager
    def under(self, mask: str) -> Iterator[None]:
        """Statements and expressions inside run in the lanes of ``mask``."""
        outer, self.mask = self.mask, mask
        try:
            yield
        finally:
            self.mask = outer

    def value(self, e: ir.Expr, consumed: bool) -> str:
        """Python for ``e``, for a use that is ``consumed`` at once or not (its operands
        always are)."""
        outer, self.consumed = self.consumed, consumed
        try:
            return super().expr(e)
        finally:
            self.consumed = outer

    def expr(self, e: ir.Expr) -> str:
        """Python for ``e``, under :attr:`mask`, consumed at once."""
        return self.value(e, True)

    # ------------------------------------------------------------ the module

    def module(self) -> str:
        """The whole generated module's source."""
        k = self.kernel
        title = re.sub(r"[^\w.<>-]", "_", k.name)  # safe inside the docstrings
        head = [
            f'"""Kernel {title} lowered by the cubecl-server cpu backend '
            f'({self.mode.value}, cube dim {self.dim})."""',
            "import numpy as np",
            "",
            "from cubecl_server.backends.cpu import support as _s",
            "",
            "",
            "def run(arrays, shapes, strides, scalars, count, dim):",
            f'    """Run {title} over a launch of ``count`` cubes of ``dim`` units."""',
        ]
        self.depth = 1
        self.line(f"_s.check_dim(dim, {self.dim})")
        for p in self.arrays.values():
            self.line(f"{self._py(p.name)} = arrays[{self.position[p.name]}]",
                      f"{p.name}: Array[{p.value_type.value}]")
        for p in self.scalars.values():
            self.line(f"{self._py(p.name)} = _s.scalar(scalars[{self.position[p.name]}], "
                      f"{_dtype(p.elem)})", f"{p.name}: {p.elem.value}")
        body_start = len(self.lines)
        self.depth = 2
        self.block(k.body)
        chunk_body = self.lines[body_start:]
        del self.lines[body_start:]
        # A local the body never names (one read as what it aliases, as ``i =
        # ABSOLUTE_POS`` is) needs no zeros; a name in a comment keeps them, harmlessly.
        named = set(re.findall(r"\w+", "\n".join(chunk_body)))
        for loc in k.locals:
            if self._py(loc.name) in named:
                self.line(f"{self._py(loc.name)} = {_zero(loc.elem)}",
                          f"var {loc.name}: {loc.elem.value}")
        for sh in k.shared:
            self.line(f"{self._py(sh.name)} = np.zeros(g.ncubes * {sh.size}, {_dtype(sh.elem)})",
                      f"shared {sh.name}: {sh.elem.value}[{sh.size}]")
        for la in k.local_arrays:
            self.line(f"{self._py(la.name)} = np.zeros(g.n * {la.size}, {_dtype(la.elem)})",
                      f"local {la.name}: {la.elem.value}[{la.size}]")
        self.line("alive = True", "lanes that have not returned")
        self.lines += chunk_body
        body = self.lines[body_start:]
        del self.lines[body_start:]
        self.depth = 1
        for (kind, name, axis), py in self.hoisted.items():
            line = self.arrays[name].line if name in self.arrays else 1
            if kind == "len" and line > 1:
                self.line(f"{py} = _s.lines({self._py(name)}.shape[0], {line})",
                          f"len({name}): lines of {line}")
            elif kind == "len":
                self.line(f"{py} = _s.count(shapes[{self.position[name]}])", f"len({name})")
            elif kind == "buffer_len":
                self.line(f"{py} = _s.length({self._py(name)})", f"buffer_len({name})")
            elif kind == "rank":
                self.line(f"{py} = _s.rank(shapes[{self.position[name]}])", f"rank({name})")
            else:
                self.line(f"{py} = _s.extent({kind}s[{self.position[name]}], {axis})",
                          f"{name}.{kind}[{axis}]")
        self.line("for g in _s.chunks(count, dim):", "a chunk of whole cubes")
        return "\n".join([*head, *self.lines, *body]) + "\n"

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """The statements under :attr:`mask`; after one that may jump, the rest only in
        the lanes left (and not at all when none is)."""
        start, mask = len(self.lines), self.mask
        for i, s in enumerate(stmts):
            self.stmt(s)
            if isinstance(s, (ir.Return, ir.Break, ir.Continue)):
                break
            ret, loop = _jumps(s)
            if not (ret or loop) or i == len(stmts) - 1:
                continue
            if loop and mask != self.loops[-1].body:
                self.line(f"{mask} = _s.and_({mask}, {self.loops[-1].body})",
                          "lanes that left the iteration")
            if ret and mask != "alive":
                self.line(f"{mask} = _s.and_({mask}, alive)", "lanes that returned")
            if mask == "alive":
                self.line("if alive is False:", "every lane has returned")
                self.line("    continue")
                continue
            self.line(f"if {mask} is not False:")
            with self.nested():
                self.block(stmts[i + 1:])
            break
        if len(self.lines) == start:
            self.line("pass")

    def _masked_block(self, stmts: tuple[ir.Stmt, ...], mask: str) -> None:
        with self.nested(), self.under(mask):
            self.block(stmts)

    def stmt_assign(self, s: ir.Assign) -> None:
        """A masked assignment (plain at the top level)."""
        name, value, mask = s.name, s.value, self.mask
        text = ir.format_stmt(s)
        if (mask == "alive" and self.assign_counts.get(name) == 1
                and self._is_pos(value)):
            # The lane's position itself: reads of it below use the slice fast paths.
            self.pos_aliases[name] = value
            self.line("pass", f"{text} (read below as ABSOLUTE_POS)")
            return
        v = self.value(value, consumed=False)
        py = self._py(name)
        if mask == "alive":
            if self.assign_counts.get(name) == 1 and self._is_uniform(value):
                self.uniform_locals.add(name)
            self.line(f"{py} = {v}", text)
        else:
            merge = "merge_line" if isinstance(self.locals[name].elem, ir.Line) else "merge"
            self.line(f"{py} = _s.{merge}({mask}, {v}, {py})", text)

    def stmt_store(self, s: ir.Store) -> None:
        """A store in the active lanes."""
        text, mask = ir.format_stmt(s), self.mask
        # A value read from the array being written must not be a view of it.
        same = isinstance(s.value, ir.Load) and s.value.array == s.array
        val = self.value(s.value, consumed=not same)
        arr, checked = self._py(s.array), self.needs_check(s)
        if s.array in self.shared:
            self.line(f"_s.store_shared({arr}, {self.shared[s.array].size}, g, "
                      f"{self.expr(s.index)}, {val}, {mask}, {checked})", text)
            return
        if s.array in self.local_arrays:
            self.line(f"_s.store_local({arr}, {self.local_arrays[s.array].size}, g, "
                      f"{self.expr(s.index)}, {val}, {mask}, {checked})", text)
            return
        line = self.arrays[s.array].line
        if line > 1 and self._is_pos(s.index):
            self.line(f"_s.store_line_pos({arr}, {line}, g, {val}, {mask})", text)
            return
        if line > 1:
            self.line(f"_s.store_line({arr}, {line}, {self.expr(s.index)}, {val}, {mask}, "
                      f"{self.checked})", text)
            return
        if self._is_pos(s.index):
            self.line(f"_s.store_pos({arr}, g, {val}, {mask})", text)
            return
        fn = "store" if checked else "store_unchecked"
        self.line(f"_s.{fn}({arr}, {self.expr(s.index)}, {val}, {mask})", text)

    def stmt_if(self, s: ir.If) -> None:
        """Each branch under its narrower mask, skipped when no lane is in it."""
        cond, mask = self.temp(), self.mask
        self.line(f"{cond} = {self.value(s.cond, consumed=False)}", ir.format_stmt(s))
        if s.then:
            then = self.temp()
            self.line(f"{then} = _s.and_({mask}, {cond})")
            self.line(f"if {then} is not False:")
            self._masked_block(s.then, then)
        if s.orelse:
            other = self.temp()
            self.line(f"{other} = _s.andnot({mask}, {cond})", "else:")
            self.line(f"if {other} is not False:")
            self._masked_block(s.orelse, other)

    def _loop_body(self, body: tuple[ir.Stmt, ...], loop: _Loop) -> None:
        self.line(f"{loop.body} = {loop.looping}")
        self.loops.append(loop)
        with self.under(loop.body):
            self.block(body)
        self.loops.pop()
        if any(isinstance(n, ir.Return) for n in ir.walk(body)):
            self.line(f"{loop.looping} = _s.and_({loop.looping}, alive)", "lanes that returned")

    def stmt_while(self, s: ir.While) -> None:
        """Steps while a lane is left; each lane leaves when its condition fails."""
        loop = _Loop(self.temp(), self.temp())
        self.line(f"{loop.looping} = {self.mask}", ir.format_stmt(s))
        self.line("while True:")
        with self.nested():
            with self.under(loop.looping):
                cond = self.value(s.cond, consumed=False)
            self.line(f"{loop.looping} = _s.and_({loop.looping}, {cond})")
            self.line(f"if {loop.looping} is False:")
            self.line("    break")
            self._loop_body(s.body, loop)

    def stmt_for(self, s: ir.For) -> None:
        """Python's ``range``: the bounds once, as a per-lane trip count."""
        elem, step = self.locals[s.var].elem, int(s.step.value)
        py, mask = self._py(s.var), self.mask
        loop = _Loop(self.temp(), self.temp())
        k, trips, it = self.temp(), self.temp(), self.temp()
        header = ir.format_stmt(s) + (" (unroll)" if s.unroll else "")
        self.line(f"{k} = {self.value(s.start, consumed=False)}", header)
        self.line(f"{trips} = _s.trip_count({k}, {self.expr(s.stop)}, {step})")
        self.line(f"{loop.looping} = {mask}")
        self.line(f"{it} = 0", "iterations done: the same in every lane")
        self.line("while True:")
        with self.nested():
            self.line(f"{loop.looping} = _s.and_({loop.looping}, {trips} > {it})")
            self.line(f"if {loop.looping} is False:")
            self.line("    break")
            self.line(f"{py} = _s.merge({loop.looping}, {k}, {py})")
            self._loop_body(s.body, loop)
            if step < 0 and not elem.is_signed:
                self.line(f"{k} = {k} - {_const(-step, elem)}")
            else:
                self.line(f"{k} = {k} + {_const(step, elem)}")
            self.line(f"{it} += 1")

    def stmt_break(self, s: ir.Break) -> None:
        """The active lanes leave the loop."""
        loop, mask = self.loops[-1], self.mask
        self.line(f"{loop.looping} = _s.andnot({loop.looping}, {mask})", "break")
        if mask != loop.body:
            self.line(f"{loop.body} = _s.andnot({loop.body}, {mask})")

    def stmt_continue(self, s: ir.Continue) -> None:
        """The active lanes leave this iteration."""
        loop, mask = self.loops[-1], self.mask
        if mask != loop.body:
            self.line(f"{loop.body} = _s.andnot({loop.body}, {mask})", "continue")
        else:
            self.line("pass", "continue")

    def stmt_return(self, s: ir.Return) -> None:
        """The active lanes are done."""
        if self.mask == "alive":
            self.line("continue", "return (every lane)")
        else:
            self.line(f"alive = _s.andnot(alive, {self.mask})", "return")

    def stmt_barrier(self, s: ir.Barrier) -> None:
        """Nothing to do: the lanes run in lockstep."""
        self.line("pass", "barrier: the lanes run in lockstep")

    def stmt_sync_plane(self, s: ir.SyncPlane) -> None:
        """Nothing to do: the lanes run in lockstep."""
        self.line("pass", "plane barrier: the lanes run in lockstep")

    def stmt_atomic(self, s: ir.AtomicStmt) -> None:
        """``support.atomic``: the active lanes one after another, in lane order."""
        mask = self.mask
        if s.array in self.shared:
            target = f"{self._py(s.array)}, {self.shared[s.array].size}"
            fn = "atomic_shared"
        else:
            target, fn = self._py(s.array), "atomic"
        idx, val = self.expr(s.index), self.expr(s.value)
        cmp = "None" if s.compare is None else self.expr(s.compare)
        call = (f"_s.{fn}({s.op.value!r}, {target}, g, {idx}, {val}, {cmp}, {mask}, "
                f"{self.needs_check(s)})")
        text = ir.format_stmt(s)
        if s.result is None:
            self.line(call[:-1] + ", old=False)", text)
            return
        py = self._py(s.result)
        if mask == "alive":
            self.line(f"{py} = {call}", text)
        else:
            self.line(f"{py} = _s.merge({mask}, {call}, {py})", text)

    # ------------------------------------------------------------ expressions

    def _is_pos(self, e: ir.Expr) -> bool:
        """Whether ``e`` is exactly the lane's ``ABSOLUTE_POS`` (maybe cast)."""
        match e:
            case ir.Builtin(name=ir.BuiltinName.ABSOLUTE_POS):
                return True
            case ir.Var(name=n):
                return n in self.pos_aliases
            case ir.Cast(x=x, type=t):
                return isinstance(t, ir.Elem) and t.is_int and t.bits >= 32 and self._is_pos(x)
        return False

    def _is_uniform(self, e: ir.Expr) -> bool:
        """Whether ``e`` is known at compile time to be the same in every lane."""
        match e:
            case ir.Const() | ir.Len() | ir.Shape() | ir.Stride() | ir.BufferLen() | ir.Rank():
                return True
            case ir.Var(name=n):
                return n in self.uniform_locals if n in self.locals else n in self.scalars
            case ir.Builtin(name=n):
                return n in _UNIFORM_BUILTINS
            case ir.Binary(lhs=a, rhs=b):
                return self._is_uniform(a) and self._is_uniform(b)
            case ir.Unary(x=x) | ir.Cast(x=x):
                return self._is_uniform(x)
            case ir.Math(args=args):
                return all(self._is_uniform(a) for a in args)
        return False

    def _hoist(self, kind: str, name: str, axis: int) -> str:
        key = (kind, name, axis)
        if key not in self.hoisted:
            stem = self.stems[name]
            named = {"len": "n_", "buffer_len": "bn_", "rank": "rank_"}.get(kind)
            self.hoisted[key] = f"{named}{stem}" if named else f"{kind}_{stem}_{axis}"
        return self.hoisted[key]

    def expr_const(self, e: ir.Const) -> str:
        """A typed NumPy scalar."""
        return _const(e.value, e.type)

    def expr_var(self, e: ir.Var) -> str:
        """A local or scalar; a position alias as the position."""
        if e.name in self.pos_aliases:
            return self.value(self.pos_aliases[e.name], self.consumed)
        return self._py(e.name)

    def expr_builtin(self, e: ir.Builtin) -> str:
        """The chunk's (``g``); plane builtins from :data:`PLANE_SIZE`."""
        if e.name is ir.BuiltinName.PLANE_DIM:
            return f"np.uint32({PLANE_SIZE})"
        if e.name is ir.BuiltinName.UNIT_POS_PLANE:
            return f"(g.UNIT_POS % np.uint32({PLANE_SIZE}))"
        return f"g.{e.name.value}"

    def expr_cast(self, e: ir.Cast) -> str:
        """``astype`` (nothing to a value's own type)."""
        if e.x.type is e.type:
            return self.value(e.x, self.consumed)
        return f"{self.expr(e.x)}.astype({_dtype(e.type)})"

    def expr_bitcast(self, e: ir.Bitcast) -> str:
        """``support.bitcast``: a view of the bits."""
        return f"_s.bitcast({self.expr(e.x)}, {_dtype(e.type)})"

    def expr_select(self, e: ir.Select) -> str:
        """``support.select``, both sides computed (one bool per lane over lines:
        ``select_lanes``)."""
        fn = "select_lanes" if isinstance(e.type, ir.Line) and e.cond.type is ir.Elem.BOOL \
            else "select"
        return f"_s.{fn}({self.expr(e.cond)}, {self.expr(e.a)}, {self.expr(e.b)})"

    def expr_line_fill(self, e: ir.LineFill) -> str:
        """``support.fill``."""
        return f"_s.fill({self.expr(e.x)}, {e.type.size})"

    def expr_line_element(self, e: ir.LineElement) -> str:
        """``support.element``."""
        return f"_s.element({self.expr(e.x)}, {e.index})"

    def expr_line_reduce(self, e: ir.LineReduce) -> str:
        """``support.reduce_line``."""
        return f"_s.reduce_line({e.fn.value!r}, {self.expr(e.x)})"

    def expr_load(self, e: ir.Load) -> str:
        """A load in the active lanes (a view of the array where the position indexes
        it and the value is consumed)."""
        arr, mask = self._py(e.array), self.mask
        line = self.arrays[e.array].line if e.array in self.arrays else 1
        if line > 1 and self._is_pos(e.index):
            fn = "view_line_pos" if self.consumed else "load_line_pos"
            return f"_s.{fn}({arr}, {line}, g)"
        if line > 1:
            return (f"_s.load_line({arr}, {line}, {self.expr(e.index)}, {mask}, "
                    f"{self.checked})")
        checked = self.needs_check(e)
        if e.array in self.shared:
            return (f"_s.load_shared({arr}, {self.shared[e.array].size}, g, "
                    f"{self.expr(e.index)}, {mask}, {checked})")
        if e.array in self.local_arrays:
            return (f"_s.load_local({arr}, {self.local_arrays[e.array].size}, g, "
                    f"{self.expr(e.index)}, {mask}, {checked})")
        if self._is_pos(e.index):
            return f"_s.{'view_pos' if self.consumed else 'load_pos'}({arr}, g)"
        fn = "load" if checked else "load_unchecked"
        return f"_s.{fn}({arr}, {self.expr(e.index)}, {mask})"

    def expr_metadata(self, e: ir.Len | ir.BufferLen | ir.Rank | ir.Shape | ir.Stride) -> str:
        """A length, buffer length, rank, extent or stride, hoisted out of the chunk loop."""
        return self._hoist(metadata_kind(e), e.array, getattr(e, "dim", 0))

    def expr_binary(self, e: ir.Binary) -> str:
        """NumPy's operators; the position compared by ``g.pos_cmp`` where it can."""
        op, t = e.op, ir.elem_of(e.lhs.type)
        if op in _COMPARE:
            sym = _COMPARE[op]
            if sym in _MIRROR and t.is_int and not isinstance(e.lhs.type, ir.Line):
                if self._is_pos(e.lhs) and self._is_uniform(e.rhs):
                    return f"g.pos_cmp({sym!r}, {self.expr(e.rhs)})"
                if self._is_pos(e.rhs) and self._is_uniform(e.lhs):
                    return f"g.pos_cmp({_MIRROR[sym]!r}, {self.expr(e.lhs)})"
            return f"({self.expr(e.lhs)} {sym} {self.expr(e.rhs)})"
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            return self._logical(e)
        a, b = self._side(e.lhs, e.rhs), self._side(e.rhs, e.lhs)
        if op in _BITWISE:
            return f"({a} {_BITWISE[op]} {b})"
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        if op is ir.BinOp.DIV:
            return f"({a} / {b})"
        if op is ir.BinOp.IDIV:
            if t.is_float:
                return f"np.trunc({a} / {b})"
            return f"_s.idiv({a}, {b})" if t.is_signed else f"({a} // {b})"
        if op is ir.BinOp.REM:
            return f"np.fmod({a}, {b})"
        # SHL or SHR, the operators left.
        if isinstance(e.rhs, ir.Const):
            amount = _const(int(e.rhs.value) & (t.bits - 1), t)
        else:
            amount = f"({b} & {_const(t.bits - 1, t)})"
        return f"({a} {'<<' if op is ir.BinOp.SHL else '>>'} {amount})"

    def _side(self, e: ir.Expr, other: ir.Expr) -> str:
        """An operand; a line filled with a value the same in every lane as that value
        (NumPy broadcasts it over the other operand, a line, faster than a line)."""
        if isinstance(e, ir.LineFill) and not isinstance(other, ir.LineFill) \
                and self._is_uniform(e.x):
            return self.expr(e.x)
        return self.expr(e)

    def _logical(self, e: ir.Binary) -> str:
        """``lhs and rhs`` / ``lhs or rhs``, the right side evaluated (after the lines
        this emits) only in the lanes the left side leaves undecided."""
        sym = "&" if e.op is ir.BinOp.AND else "|"
        a = self.expr(e.lhs)
        if not any(isinstance(n, (ir.Load, ir.PlaneOp)) for n in ir.walk(e.rhs)):
            # Nothing on the right depends on the lanes it runs in: compute it in all.
            return f"({a} {sym} {self.expr(e.rhs)})"
        left, rest, right = self.temp(), self.temp(), self.temp()
        self.line(f"{left} = {a}", f"{ir.format_expr(e.lhs)} {e.op.value} ...")
        narrow = "and_" if e.op is ir.BinOp.AND else "andnot"
        self.line(f"{rest} = _s.{narrow}({self.mask}, {left})", "lanes it leaves undecided")
        # Where no lane is undecided, the right side's value is never used.
        self.line(f"{right} = np.False_")
        self.line(f"if {rest} is not False:", f"... {e.op.value} {ir.format_expr(e.rhs)}")
        with self.nested(), self.under(rest):
            self.line(f"{right} = {self.value(e.rhs, consumed=False)}")
        return f"({left} {sym} {right})"

    def expr_unary(self, e: ir.Unary) -> str:
        """``-``, and ``~`` for both ``not`` of a bool and ``~`` of an integer."""
        x = self.expr(e.x)
        return f"(-{x})" if e.op is ir.UnOp.NEG else f"(~{x})"

    def expr_math(self, e: ir.Math) -> str:
        """NumPy's functions (``fmin``/``fmax`` for the NaN rule; ``FMA`` rounded twice)."""
        fn, t = e.fn, ir.elem_of(e.args[0].type)
        xs = [self.expr(a) for a in e.args]
        if fn is ir.MathFn.ISNAN:
            return f"np.isnan({xs[0]})"
        if fn is ir.MathFn.ISINF:
            return f"np.isinf({xs[0]})"
        if fn is ir.MathFn.ABS:
            return f"np.abs({xs[0]})"
        if fn is ir.MathFn.MIN:
            return f"np.fmin({xs[0]}, {xs[1]})"
        if fn is ir.MathFn.MAX:
            return f"np.fmax({xs[0]}, {xs[1]})"
        if fn is ir.MathFn.CLAMP:
            return f"np.fmin(np.fmax({xs[0]}, {xs[1]}), {xs[2]})"
        if fn in _FLOAT_FNS:
            return f"{_FLOAT_FNS[fn]}({xs[0]})"
        if fn in _FLOAT_FNS2:
            return f"{_FLOAT_FNS2[fn]}({xs[0]}, {xs[1]})"
        if fn is ir.MathFn.RSQRT:
            return f"({_const(1.0, t)} / np.sqrt({xs[0]}))"
        if fn is ir.MathFn.RHYPOT:
            return f"({_const(1.0, t)} / np.hypot({xs[0]}, {xs[1]}))"
        if fn is ir.MathFn.POWI:
            return f"np.power({xs[0]}, {xs[1]}.astype({_dtype(t)}))"
        if fn in (ir.MathFn.SATURATING_ADD, ir.MathFn.SATURATING_SUB):
            op = "add" if fn is ir.MathFn.SATURATING_ADD else "sub"
            return f"_s.saturating({op!r}, {xs[0]}, {xs[1]})"
        return f"({xs[0]} * {xs[1]} + {xs[2]})"  # FMA, the function left

    def expr_plane(self, e: ir.PlaneOp) -> str:
        """``support.plane_*``."""
        v = self.expr(e.value)
        # BROADCAST and the shuffles take a lane; the others, the lanes that are active.
        extra = self.mask if e.lane is None else self.expr(e.lane)
        return f"{_PLANE_FNS[e.fn]}(g, {v}, {extra}, {PLANE_SIZE})"
