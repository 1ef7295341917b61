r"""The ``cpu`` backend's Compiler: IR -> vectorised NumPy Python source.

It lowers IR that :func:`cubecl_server.ir_check.check_kernel` has accepted (the
loader checks every kernel first), so it checks no rule of ``docs/ir.md`` itself. Its
emitter builds on the core's :class:`~cubecl_server.lowering.StructuredEmitter`: it
writes the core IR the passes leave for :data:`NATIVE` (checked accesses, loops,
division, shifts and the integer functions are theirs), each node as NumPy spells it.

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
- ``and``/``or`` compute both sides in every lane: the passes made an ``if`` of any
  right side that loads or holds a plane operation.
- Loops step while any lane is active; each lane leaves when its own condition
  fails, or on ``break``; ``continue`` masks a lane off for the rest of the
  iteration; ``return`` masks it off for the rest of the kernel. Statements after
  a jump in the same block are unreachable and not emitted; after a compound
  statement that may jump, the block's mask is narrowed and the rest of the block
  runs only if a lane is left.
- ``for`` is the core IR's counted loop: its counter, the same in every lane, goes
  from 0 by 1 while a lane's trip count (maybe its own) is above it.
- Locals start as zeros of their type: reading a local before a path assigns it
  reads 0. Assignments in the kernel's top-level block are not masked: the only
  lanes inactive there have returned, and nothing they hold is observable again.
- Barriers need no work: all lanes of all cubes of a chunk execute each statement
  together as one vector operation, in program order, so every shared-memory write
  before a barrier is complete before any lane runs a statement after it. This
  holds inside loops too, since every lane still steps through the body statement
  by statement (masked-off lanes just do not write). A barrier that only some units
  of a cube reach is undefined behaviour on every backend.
- Memory: the accesses of the core IR are inside their arrays in the lanes that
  reach them (checked mode's checks are the passes' ``if``\ s); inactive lanes never
  read or write. Of several lanes
  storing to one address, the last in lane order wins. Atomics act as if the
  active lanes ran one after another in lane order (see :func:`support.atomic`).
- Planes have :data:`PLANE_SIZE` units: consecutive units of a cube, the last plane
  of a cube short when the cube size is not a multiple of it.

Integer arithmetic wraps; ``IDIV`` and ``REM`` truncate toward zero as in C (their
divisor is never 0 nor -1 in the core IR). Constants are emitted typed (``np.float32(2.5)``) so
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
from cubecl_server.backend import CompiledKernel, CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backend.lowering import Native, StructuredEmitter, metadata_kind
from cubecl_server.backends.cpu.support import CHUNK_BUILTINS

__all__ = ["PLANE_SIZE", "CpuCompiler", "NATIVE"]

PLANE_SIZE = 32
"""Units per plane (subgroup) on the cpu backend."""

_ARITH = {ir.BinOp.ADD: "+", ir.BinOp.SUB: "-", ir.BinOp.MUL: "*"}
_BITWISE = {ir.BinOp.BITAND: "&", ir.BinOp.BITOR: "|", ir.BinOp.BITXOR: "^",
            ir.BinOp.AND: "&", ir.BinOp.OR: "|"}  # both sides of and/or: see the module
_COMPARE = {ir.BinOp.EQ: "==", ir.BinOp.NE: "!=", ir.BinOp.LT: "<", ir.BinOp.LE: "<=",
            ir.BinOp.GT: ">", ir.BinOp.GE: ">="}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_FLOAT_FNS = {ir.MathFn.EXP: "np.exp", ir.MathFn.LOG: "np.log", ir.MathFn.SQRT: "np.sqrt",
              ir.MathFn.SIN: "np.sin", ir.MathFn.COS: "np.cos", ir.MathFn.TANH: "np.tanh",
              ir.MathFn.FLOOR: "np.floor", ir.MathFn.CEIL: "np.ceil",
              ir.MathFn.TAN: "np.tan", ir.MathFn.ASIN: "np.arcsin",
              ir.MathFn.ACOS: "np.arccos", ir.MathFn.ATAN: "np.arctan",
              ir.MathFn.SINH: "np.sinh", ir.MathFn.COSH: "np.cosh", ir.MathFn.LOG2: "np.log2",
              ir.MathFn.ASINH: "np.arcsinh", ir.MathFn.ACOSH: "np.arccosh",
              ir.MathFn.ATANH: "np.arctanh",
              ir.MathFn.EXP2: "np.exp2", ir.MathFn.LOG1P: "np.log1p",
              ir.MathFn.EXPM1: "np.expm1", ir.MathFn.ROUND: "np.rint",
              ir.MathFn.TRUNC: "np.trunc", ir.MathFn.ISNAN: "np.isnan",
              ir.MathFn.ISINF: "np.isinf", ir.MathFn.ABS: "np.abs",
              ir.MathFn.ATAN2: "np.arctan2", ir.MathFn.COPYSIGN: "np.copysign",
              ir.MathFn.HYPOT: "np.hypot", ir.MathFn.POW: "np.power",
              ir.MathFn.MIN: "np.fmin", ir.MathFn.MAX: "np.fmax"}
_MATH = frozenset(_FLOAT_FNS) | {ir.MathFn.FMA}
NATIVE = Native(nan_minmax=True, float_rem=True, zeroed_shared=True,
                builtins=frozenset({*map(ir.BuiltinName, CHUNK_BUILTINS), ir.BuiltinName.PLANE_DIM,
                                    ir.BuiltinName.UNIT_POS_PLANE}),
                zeroed_local_arrays=True, float_atomics=frozenset(ir.AtomicOp),
                checked_position=True,
                functions={ir.Elem.F16: _MATH, ir.Elem.F32: _MATH, ir.Elem.F64: _MATH})
"""What NumPy computes itself: its ufuncs (``fmin``/``fmax`` with the NaN rule,
``fmod``), the chunk's builtins and the plane's, arrays allocated zeroed, atomics run
lane after lane, accesses at the unit's position as slices that stop at the array's
end (``support.view_pos``, ``store_pos``). The rest - short circuits, the integer
functions, ``erf`` (NumPy has none) - is IR."""
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
_UNIFORM_BUILTINS = frozenset({ir.BuiltinName.CUBE_COUNT_X, ir.BuiltinName.CUBE_COUNT_Y,
                               ir.BuiltinName.CUBE_COUNT_Z, ir.BuiltinName.PLANE_DIM})


class CpuCompiler:
    """The ``cpu`` backend's Compiler: an IR kernel -> a NumPy Python module's source."""

    extension = "py"

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` for launches of ``cube_dim`` in ``mode``."""
        e = _Emitter(kernel, cube_dim, mode)
        return CompiledKernel(name=kernel.name, entry_point="run", source=e.module(),
                              extension=self.extension, core=e.kernel)


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


_WRITES = (ir.Store, ir.AtomicStmt, ir.TensorMapLoad)


def _view_safe(kernel: ir.Kernel) -> frozenset[str]:
    """The locals whose value may be a view of an array rather than a copy: every
    assignment and read of one is outside any loop, no assignment reads it (the other
    local would be the same view), and no statement writes memory after its first
    assignment and before the last statement reading it (that one reads before it
    writes). A local the checked pass made for a load is one: it is read by the
    statement the load was in, with only other loads between."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    unsafe: set[str] = set()  # in a loop, or read by an assignment
    writes: list[int] = []
    order = 0

    def visit(stmts: tuple[ir.Stmt, ...], loop: bool) -> None:
        nonlocal order
        for st in stmts:
            order += 1
            here = order
            if isinstance(st, _WRITES):
                writes.append(here)
            names = [n.name for n in ir.walk(tuple(
                getattr(st, f) for f in _READS.get(type(st), ()) if getattr(st, f) is not None))
                if isinstance(n, ir.Var)]
            for name in names:
                last[name] = here
                if loop or isinstance(st, ir.Assign):  # another local could alias the view
                    unsafe.add(name)
            if isinstance(st, ir.Assign):
                first.setdefault(st.name, here)
                if loop:
                    unsafe.add(st.name)
            match st:
                case ir.If():
                    visit(st.then, loop)
                    visit(st.orelse, loop)
                case ir.For() | ir.While():
                    visit(st.body, True)

    visit(kernel.body, False)
    return frozenset(n for n, at in first.items() if n not in unsafe and n in last and not any(
        at < w < last[n] for w in writes))


_READS = {ir.Assign: ("value",), ir.Store: ("index", "value"), ir.If: ("cond",),
          ir.For: ("start", "stop"), ir.While: ("cond",),
          ir.AtomicStmt: ("index", "value", "compare"), ir.TensorMapLoad: ("coords",)}


class _Emitter(StructuredEmitter):
    """Writes one kernel's module, every statement under :attr:`mask` (the name of the
    lanes it runs in) and every expression for :attr:`consumed` use."""

    comment = "#"

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode) -> None:
        super().__init__(kernel, cube_dim, mode, "cpu", NATIVE)
        kernel = self.kernel
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
        self.views = _view_safe(kernel)
        """Locals that may hold a view of an array (see :func:`_view_safe`)."""
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
            if kind == "len":
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
        v = self.value(value, consumed=name in self.views)
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
        arr = self._py(s.array)
        if s.array in self.shared:
            self.line(f"_s.store_shared({arr}, {self.shared[s.array].size}, g, "
                      f"{self.expr(s.index)}, {val}, {mask})", text)
            return
        if s.array in self.local_arrays:
            self.line(f"_s.store_local({arr}, {self.local_arrays[s.array].size}, g, "
                      f"{self.expr(s.index)}, {val}, {mask})", text)
            return
        line = ir.line_size(s.value.type)
        size = self._pos_size(s.array, s.index, line)
        if size is not None:
            self.line(f"_s.store_pos({arr}, g, {val}, {mask}{size})", text)
        elif line > 1:
            self.line(f"_s.store_line({arr}, {line}, {self.expr(s.index)}, {val}, {mask})",
                      text)
        else:
            self.line(f"_s.store({arr}, {self.expr(s.index)}, {val}, {mask})", text)

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
        """The core IR's counted loop: its counter, one for all lanes, steps while a
        lane's count is above it."""
        py, mask = self._py(s.var), self.mask
        loop = _Loop(self.temp(), self.temp())
        counter = self.locals[s.var].elem
        self.line(f"{py} = {_const(0, counter)}",
                  ir.format_stmt(s) + (" (unroll)" if s.unroll else ""))
        self.line(f"{loop.looping} = {mask}")
        self.line("while True:")
        with self.nested():
            self.line(f"{loop.looping} = _s.and_({loop.looping}, {self.expr(s.stop)} > {py})")
            self.line(f"if {loop.looping} is False:")
            self.line("    break")
            self._loop_body(s.body, loop)
            self.line(f"{py} = {py} + {_const(1, counter)}")

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

    def stmt_debug_print(self, s: ir.DebugPrint) -> None:
        """``support.debug_print``: a line per active lane, in lane order."""
        values = "".join(f", {self.expr(a)}" for a in s.args)
        self.line(f"_s.debug_print(g, {self.mask}, {s.text!r}{values})", ir.format_stmt(s))

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
        call = f"_s.{fn}({s.op.value!r}, {target}, g, {idx}, {val}, {cmp}, {mask})"
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

    def _pos_size(self, array: str, index: ir.Expr, line: int) -> str | None:
        """For an access at the unit's position that ``support``'s ``*_pos`` slices
        serve (of lines, or of an array of elements), the line size argument they take
        (empty for elements); None for any other access."""
        if not self._is_pos(index) or (line == 1 and self.arrays[array].line != 1):
            return None
        return f", {line}" if line > 1 else ""

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

    def expr_line_make(self, e: ir.LineMake) -> str:
        """``support.make_line``."""
        return f"_s.make_line({', '.join(self.expr(x) for x in e.parts)})"

    def expr_load(self, e: ir.Load) -> str:
        """A load in the active lanes (a view of the array where the position indexes
        it and the value is consumed)."""
        arr, mask = self._py(e.array), self.mask
        line = ir.line_size(e.type)
        if e.array in self.shared:
            return (f"_s.load_shared({arr}, {self.shared[e.array].size}, g, "
                    f"{self.expr(e.index)}, {mask})")
        if e.array in self.local_arrays:
            return (f"_s.load_local({arr}, {self.local_arrays[e.array].size}, g, "
                    f"{self.expr(e.index)}, {mask})")
        size = self._pos_size(e.array, e.index, line)
        if size is not None:
            return f"_s.{'view_pos' if self.consumed else 'load_pos'}({arr}, g{size})"
        if line > 1:
            return f"_s.load_line({arr}, {line}, {self.expr(e.index)}, {mask})"
        return f"_s.load({arr}, {self.expr(e.index)}, {mask})"

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
        a, b = self._side(e.lhs, e.rhs), self._side(e.rhs, e.lhs)
        if op in _BITWISE:
            return f"({a} {_BITWISE[op]} {b})"
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        if op is ir.BinOp.DIV:
            return f"({a} / {b})"
        if op is ir.BinOp.IDIV:
            return f"_s.idiv({a}, {b})" if t.is_signed else f"({a} // {b})"
        if op is ir.BinOp.REM:
            return f"np.fmod({a}, {b})"
        return f"({a} {'<<' if op is ir.BinOp.SHL else '>>'} {b})"  # the amount is in range

    def _side(self, e: ir.Expr, other: ir.Expr) -> str:
        """An operand; a line filled with a value the same in every lane as that value
        (NumPy broadcasts it over the other operand, a line, faster than a line)."""
        if isinstance(e, ir.LineFill) and not isinstance(other, ir.LineFill) \
                and self._is_uniform(e.x):
            return self.expr(e.x)
        return self.expr(e)

    def expr_unary(self, e: ir.Unary) -> str:
        """``-``, and ``~`` for both ``not`` of a bool and ``~`` of an integer."""
        x = self.expr(e.x)
        return f"(-{x})" if e.op is ir.UnOp.NEG else f"(~{x})"

    def expr_math(self, e: ir.Math) -> str:
        """NumPy's functions (``fmin``/``fmax`` for the NaN rule; ``FMA`` rounded twice)."""
        xs = [self.expr(a) for a in e.args]
        if e.fn is ir.MathFn.FMA:
            return f"({xs[0]} * {xs[1]} + {xs[2]})"
        return f"{_FLOAT_FNS[e.fn]}({', '.join(xs)})"

    def expr_plane(self, e: ir.PlaneOp) -> str:
        """``support.plane_*``."""
        v = self.expr(e.value)
        # BROADCAST and the shuffles take a lane; the others, the lanes that are active.
        extra = self.mask if e.lane is None else self.expr(e.lane)
        return f"{_PLANE_FNS[e.fn]}(g, {v}, {extra}, {PLANE_SIZE})"
