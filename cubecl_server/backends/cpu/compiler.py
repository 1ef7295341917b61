"""The ``cpu`` backend's Compiler: IR -> vectorised NumPy Python source.

It lowers IR that :func:`cubecl_server.ir_check.check_kernel` has accepted (the
loader checks every kernel first), so it checks no rule of ``docs/ir.md`` itself.

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
  drops writes outside; inactive lanes never write in either mode. Of several lanes
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
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass

from cubecl_server import ir
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeDim

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
              ir.MathFn.ERF: "_s.erf"}
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


def _dtype(elem: ir.Elem) -> str:
    return f"np.{elem.numpy_name}"


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


def _comment(text: str) -> str:
    return " ".join(text.split())


def _ends_block(s: ir.Stmt) -> bool:
    return isinstance(s, (ir.Return, ir.Break, ir.Continue))


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


class _Emitter:
    """Writes one kernel's module; a visitor over the IR's statements and expressions."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode) -> None:
        self.k = kernel
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.checked = mode is ExecutionMode.CHECKED
        self.mode = mode
        self.lines: list[str] = []
        self.depth = 0
        self.temps = 0
        self.loops: list[_Loop] = []
        self.taken: set[str] = set()
        self.arrays: dict[str, tuple[str, ir.Param, int]] = {}
        self.scalars: dict[str, tuple[str, ir.Param, int]] = {}
        self.locals: dict[str, tuple[str, ir.Local]] = {}
        self.shared: dict[str, tuple[str, ir.SharedArray]] = {}
        # Locals assigned once, at the top level, to the lane's position (maybe cast).
        self.pos_aliases: dict[str, ir.Expr] = {}
        # Locals assigned once, at the top level, a value the same in every lane.
        self.uniform_locals: set[str] = set()
        self.hoisted: dict[tuple[str, str, int], str] = {}
        for p in kernel.params:
            table = self.arrays if p.array else self.scalars
            table[p.name] = (self._name("p_", p.name), p, len(table))
        for loc in kernel.locals:
            self.locals[loc.name] = (self._name("l_", loc.name), loc)
        for sh in kernel.shared:
            self.shared[sh.name] = (self._name("sh_", sh.name), sh)
        self.assign_counts: dict[str, int] = {}
        for n in ir.walk(kernel.body):
            target = (n.name if isinstance(n, ir.Assign) else n.var
                      if isinstance(n, ir.For) else n.result
                      if isinstance(n, ir.AtomicStmt) else None)
            if target is not None:
                self.assign_counts[target] = self.assign_counts.get(target, 0) + 1

    # ------------------------------------------------------------ plumbing

    def _name(self, prefix: str, name: str) -> str:
        base = prefix + re.sub(r"\W", "_", name)
        if keyword.iskeyword(base):
            base += "_"
        out, i = base, 1
        while out in self.taken:
            i += 1
            out = f"{base}_{i}"
        self.taken.add(out)
        return out

    def _temp(self, kind: str) -> str:
        self.temps += 1
        return f"_{kind}{self.temps}"

    def _line(self, text: str, comment: str = "") -> None:
        pad = "    " * self.depth
        self.lines.append(f"{pad}{text}  # {_comment(comment)}" if comment else pad + text)

    # ------------------------------------------------------------ the module

    def module(self) -> str:
        """The whole generated module's source."""
        k = self.k
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
        self._line(f"_s.check_dim(dim, {self.dim})")
        self._line('with np.errstate(all="ignore"):')
        self.depth = 2
        for py, p, i in self.arrays.values():
            self._line(f"{py} = arrays[{i}]", f"{p.name}: Array[{p.elem.value}]")
        for py, p, i in self.scalars.values():
            self._line(f"{py} = {_dtype(p.elem)}(scalars[{i}])", f"{p.name}: {p.elem.value}")
        body_start = len(self.lines)
        self.depth = 3
        for loc_py, loc in self.locals.values():
            self._line(f"{loc_py} = {_const(0, loc.elem)}", f"var {loc.name}: {loc.elem.value}")
        for sh_py, sh in self.shared.values():
            self._line(f"{sh_py} = np.zeros(g.ncubes * {sh.size}, {_dtype(sh.elem)})",
                       f"shared {sh.name}: {sh.elem.value}[{sh.size}]")
        self._line("alive = True", "lanes that have not returned")
        self._block(k.body, "alive")
        body = self.lines[body_start:]
        del self.lines[body_start:]
        self.depth = 2
        for (kind, name, axis), py in self.hoisted.items():
            arr = self.arrays[name][0]
            if kind == "len":
                self._line(f"{py} = np.uint32({arr}.shape[0])", f"len({name})")
            else:
                self._line(f"{py} = _s.extent({kind}s[{self.arrays[name][2]}], {axis})",
                           f"{name}.{kind}[{axis}]")
        self._line("for g in _s.chunks(count, dim):", "a chunk of whole cubes")
        return "\n".join([*head, *self.lines, *body]) + "\n"

    # ------------------------------------------------------------ statements

    def _block(self, stmts: tuple[ir.Stmt, ...], mask: str) -> None:
        start = len(self.lines)
        for i, s in enumerate(stmts):
            self._stmt(s, mask)
            if _ends_block(s):
                break
            ret, loop = _jumps(s)
            if not (ret or loop) or i == len(stmts) - 1:
                continue
            if loop and mask != self.loops[-1].body:
                self._line(f"{mask} = _s.and_({mask}, {self.loops[-1].body})",
                           "lanes that left the iteration")
            if ret and mask != "alive":
                self._line(f"{mask} = _s.and_({mask}, alive)", "lanes that returned")
            if mask == "alive":
                self._line("if alive is False:", "every lane has returned")
                self._line("    continue")
                continue
            self._line(f"if {mask} is not False:")
            self.depth += 1
            self._block(stmts[i + 1:], mask)
            self.depth -= 1
            break
        if len(self.lines) == start:
            self._line("pass")

    def _stmt(self, s: ir.Stmt, mask: str) -> None:
        match s:
            case ir.Assign(name=name, value=value):
                self._assign(name, value, mask)
            case ir.Store():
                self._store(s, mask)
            case ir.If():
                self._if(s, mask)
            case ir.For():
                self._for(s, mask)
            case ir.While():
                self._while(s, mask)
            case ir.Break():
                loop = self.loops[-1]
                self._line(f"{loop.looping} = _s.andnot({loop.looping}, {mask})", "break")
                if mask != loop.body:
                    self._line(f"{loop.body} = _s.andnot({loop.body}, {mask})")
            case ir.Continue():
                loop = self.loops[-1]
                if mask != loop.body:
                    self._line(f"{loop.body} = _s.andnot({loop.body}, {mask})", "continue")
                else:
                    self._line("pass", "continue")
            case ir.Return():
                if mask == "alive":
                    self._line("continue", "return (every lane)")
                else:
                    self._line(f"alive = _s.andnot(alive, {mask})", "return")
            case ir.Barrier():
                self._line("pass", "barrier: the lanes run in lockstep")
            case ir.AtomicStmt():
                self._atomic(s, mask)

    def _assign(self, name: str, value: ir.Expr, mask: str) -> None:
        py = self.locals[name][0]
        text = f"{name} = {ir.format_expr(value)}"
        if (mask == "alive" and self.assign_counts.get(name) == 1
                and self._is_pos(value)):
            # The lane's position itself: reads of it below use the slice fast paths.
            self.pos_aliases[name] = value
            self._line("pass", f"{text} (read below as ABSOLUTE_POS)")
            return
        v = self._expr(value, mask, consumed=False)
        if mask == "alive":
            if self.assign_counts.get(name) == 1 and self._is_uniform(value):
                self.uniform_locals.add(name)
            self._line(f"{py} = {v}", text)
        else:
            self._line(f"{py} = _s.merge({mask}, {v}, {py})", text)

    def _store(self, s: ir.Store, mask: str) -> None:
        text = f"{s.array}[{ir.format_expr(s.index)}] = {ir.format_expr(s.value)}"
        # A value read from the array being written must not be a view of it.
        same = isinstance(s.value, ir.Load) and s.value.array == s.array
        val = self._expr(s.value, mask, consumed=not same)
        if s.array in self.shared:
            sh, decl = self.shared[s.array]
            idx = self._expr(s.index, mask)
            self._line(f"_s.store_shared({sh}, {decl.size}, g, {idx}, {val}, {mask}, "
                       f"{self.checked})", text)
            return
        arr = self.arrays[s.array][0]
        if self._is_pos(s.index):
            self._line(f"_s.store_pos({arr}, g, {val}, {mask})", text)
            return
        fn = "store" if self.checked else "store_unchecked"
        self._line(f"_s.{fn}({arr}, {self._expr(s.index, mask)}, {val}, {mask})", text)

    def _if(self, s: ir.If, mask: str) -> None:
        cond = self._temp("c")
        self._line(f"{cond} = {self._expr(s.cond, mask, consumed=False)}",
                   f"if {ir.format_expr(s.cond)}:")
        if s.then:
            then = self._temp("m")
            self._line(f"{then} = _s.and_({mask}, {cond})")
            self._line(f"if {then} is not False:")
            self.depth += 1
            self._block(s.then, then)
            self.depth -= 1
        if s.orelse:
            other = self._temp("m")
            self._line(f"{other} = _s.andnot({mask}, {cond})", "else:")
            self._line(f"if {other} is not False:")
            self.depth += 1
            self._block(s.orelse, other)
            self.depth -= 1

    def _loop_body(self, body: tuple[ir.Stmt, ...], loop: _Loop) -> None:
        self._line(f"{loop.body} = {loop.looping}")
        self.loops.append(loop)
        self._block(body, loop.body)
        self.loops.pop()
        if any(isinstance(n, ir.Return) for n in ir.walk(body)):
            self._line(f"{loop.looping} = _s.and_({loop.looping}, alive)", "lanes that returned")

    def _while(self, s: ir.While, mask: str) -> None:
        loop = _Loop(self._temp("w"), self._temp("b"))
        self._line(f"{loop.looping} = {mask}", f"while {ir.format_expr(s.cond)}:")
        self._line("while True:")
        self.depth += 1
        cond = self._expr(s.cond, loop.looping, consumed=False)
        self._line(f"{loop.looping} = _s.and_({loop.looping}, {cond})")
        self._line(f"if {loop.looping} is False:")
        self._line("    break")
        self._loop_body(s.body, loop)
        self.depth -= 1

    def _for(self, s: ir.For, mask: str) -> None:
        py, loc = self.locals[s.var]
        step = int(s.step.value)
        loop = _Loop(self._temp("w"), self._temp("b"))
        k, trips, it = self._temp("k"), self._temp("n"), self._temp("j")
        header = (f"for {s.var} in range({ir.format_expr(s.start)}, "
                  f"{ir.format_expr(s.stop)}, {step}):" + (" (unroll)" if s.unroll else ""))
        self._line(f"{k} = {self._expr(s.start, mask, consumed=False)}", header)
        self._line(f"{trips} = _s.trip_count({k}, {self._expr(s.stop, mask)}, {step})")
        self._line(f"{loop.looping} = {mask}")
        self._line(f"{it} = 0", "iterations done: the same in every lane")
        self._line("while True:")
        self.depth += 1
        self._line(f"{loop.looping} = _s.and_({loop.looping}, {trips} > {it})")
        self._line(f"if {loop.looping} is False:")
        self._line("    break")
        self._line(f"{py} = _s.merge({loop.looping}, {k}, {py})")
        self._loop_body(s.body, loop)
        if step < 0 and not loc.elem.is_signed:
            self._line(f"{k} = {k} - {_const(-step, loc.elem)}")
        else:
            self._line(f"{k} = {k} + {_const(step, loc.elem)}")
        self._line(f"{it} += 1")
        self.depth -= 1

    def _atomic(self, s: ir.AtomicStmt, mask: str) -> None:
        if s.array in self.shared:
            sh, decl = self.shared[s.array]
            target, fn = f"{sh}, {decl.size}", "atomic_shared"
        else:
            target, fn = self.arrays[s.array][0], "atomic"
        idx = self._expr(s.index, mask)
        val = self._expr(s.value, mask)
        cmp = "None"
        if s.compare is not None:
            cmp = self._expr(s.compare, mask)
        call = (f"_s.{fn}({s.op.value!r}, {target}, g, {idx}, {val}, {cmp}, {mask}, "
                f"{self.checked})")
        args = [s.array, ir.format_expr(s.index)]
        args += [ir.format_expr(s.compare)] if s.compare is not None else []
        text = f"atomic_{s.op.value}({', '.join([*args, ir.format_expr(s.value)])})"
        if s.result is None:
            self._line(call[:-1] + ", old=False)", text)
            return
        py = self.locals[s.result][0]
        text = f"{s.result} = {text}"
        if mask == "alive":
            self._line(f"{py} = {call}", text)
        else:
            self._line(f"{py} = _s.merge({mask}, {call}, {py})", text)

    # ------------------------------------------------------------ expressions

    def _is_pos(self, e: ir.Expr) -> bool:
        """Whether ``e`` is exactly the lane's ``ABSOLUTE_POS`` (maybe cast)."""
        match e:
            case ir.Builtin(name=ir.BuiltinName.ABSOLUTE_POS):
                return True
            case ir.Var(name=n):
                return n in self.pos_aliases
            case ir.Cast(x=x, type=t):
                return t.is_int and t.bits >= 32 and self._is_pos(x)
        return False

    def _is_uniform(self, e: ir.Expr) -> bool:
        """Whether ``e`` is known at compile time to be the same in every lane."""
        match e:
            case ir.Const() | ir.Len() | ir.Shape() | ir.Stride():
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
            suffix = "" if kind == "len" else f"_{axis}"
            self.hoisted[key] = self._name(f"{kind}_", name + suffix)
        return self.hoisted[key]

    def _expr(self, e: ir.Expr, mask: str, consumed: bool = True) -> str:
        """Python source for ``e``, evaluated under ``mask``.

        ``consumed``: the value feeds an operation at once, so it may be a view of
        an array parameter; otherwise it must be a value of its own.
        """
        match e:
            case ir.Const(value=v, type=t):
                return _const(v, t)
            case ir.Var(name=n):
                if n in self.pos_aliases:
                    return self._expr(self.pos_aliases[n], mask, consumed)
                if n in self.locals:
                    return self.locals[n][0]
                return self.scalars[n][0]
            case ir.Builtin(name=n):
                if n is ir.BuiltinName.PLANE_DIM:
                    return f"np.uint32({PLANE_SIZE})"
                if n is ir.BuiltinName.UNIT_POS_PLANE:
                    return f"(g.UNIT_POS % np.uint32({PLANE_SIZE}))"
                return f"g.{n.value}"
            case ir.Binary():
                return self._binary(e, mask)
            case ir.Unary():
                return self._unary(e, mask)
            case ir.Math():
                return self._math(e, mask)
            case ir.Cast(x=x, type=t):
                if x.type is t:
                    return self._expr(x, mask, consumed)
                return f"{self._expr(x, mask)}.astype({_dtype(t)})"
            case ir.Select(cond=c, a=a, b=b):
                return (f"_s.select({self._expr(c, mask)}, {self._expr(a, mask)}, "
                        f"{self._expr(b, mask)})")
            case ir.Load():
                return self._load(e, mask, consumed)
            case ir.Len(array=a):
                return self._hoist("len", a, 0)
            case ir.Shape(array=a, dim=d) | ir.Stride(array=a, dim=d):
                return self._hoist(type(e).__name__.lower(), a, d)
            case ir.PlaneOp():
                return self._plane(e, mask)

    def _load(self, e: ir.Load, mask: str, consumed: bool) -> str:
        if e.array in self.shared:
            sh, decl = self.shared[e.array]
            return (f"_s.load_shared({sh}, {decl.size}, g, {self._expr(e.index, mask)}, "
                    f"{mask}, {self.checked})")
        arr = self.arrays[e.array][0]
        if self._is_pos(e.index):
            return f"_s.{'view_pos' if consumed else 'load_pos'}({arr}, g)"
        fn = "load" if self.checked else "load_unchecked"
        return f"_s.{fn}({arr}, {self._expr(e.index, mask)}, {mask})"

    def _binary(self, e: ir.Binary, mask: str) -> str:
        op, t = e.op, e.lhs.type
        if op in _COMPARE:
            sym = _COMPARE[op]
            if sym in _MIRROR and t.is_int:
                if self._is_pos(e.lhs) and self._is_uniform(e.rhs):
                    return f"g.pos_cmp({sym!r}, {self._expr(e.rhs, mask)})"
                if self._is_pos(e.rhs) and self._is_uniform(e.lhs):
                    return f"g.pos_cmp({_MIRROR[sym]!r}, {self._expr(e.lhs, mask)})"
            return f"({self._expr(e.lhs, mask)} {sym} {self._expr(e.rhs, mask)})"
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            return self._logical(e, mask)
        a, b = self._expr(e.lhs, mask), self._expr(e.rhs, mask)
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

    def _logical(self, e: ir.Binary, mask: str) -> str:
        """``lhs and rhs`` / ``lhs or rhs``, the right side evaluated (after the lines
        this emits) only in the lanes the left side leaves undecided."""
        sym = "&" if e.op is ir.BinOp.AND else "|"
        a = self._expr(e.lhs, mask)
        if not any(isinstance(n, (ir.Load, ir.PlaneOp)) for n in ir.walk(e.rhs)):
            # Nothing on the right depends on the lanes it runs in: compute it in all.
            return f"({a} {sym} {self._expr(e.rhs, mask)})"
        left, rest, right = self._temp("c"), self._temp("m"), self._temp("c")
        self._line(f"{left} = {a}", f"{ir.format_expr(e.lhs)} {e.op.value} ...")
        narrow = "and_" if e.op is ir.BinOp.AND else "andnot"
        self._line(f"{rest} = _s.{narrow}({mask}, {left})", "lanes it leaves undecided")
        # Where no lane is undecided, the right side's value is never used.
        self._line(f"{right} = np.False_")
        self._line(f"if {rest} is not False:", f"... {e.op.value} {ir.format_expr(e.rhs)}")
        self.depth += 1
        self._line(f"{right} = {self._expr(e.rhs, rest, consumed=False)}")
        self.depth -= 1
        return f"({left} {sym} {right})"

    def _unary(self, e: ir.Unary, mask: str) -> str:
        x = self._expr(e.x, mask)
        if e.op is ir.UnOp.NEG:
            return f"(-{x})"
        return f"(~{x})"  # NOT of a bool and BITNOT of an integer alike

    def _math(self, e: ir.Math, mask: str) -> str:
        fn, t = e.fn, e.args[0].type
        xs = [self._expr(a, mask) for a in e.args]
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
        if fn is ir.MathFn.RSQRT:
            return f"({_const(1.0, t)} / np.sqrt({xs[0]}))"
        if fn is ir.MathFn.POW:
            return f"np.power({xs[0]}, {xs[1]})"
        return f"({xs[0]} * {xs[1]} + {xs[2]})"  # FMA, the function left

    def _plane(self, e: ir.PlaneOp, mask: str) -> str:
        v = self._expr(e.value, mask)
        if e.lane is not None:  # BROADCAST, the one plane function with a lane
            return f"_s.plane_broadcast(g, {v}, {self._expr(e.lane, mask)}, {PLANE_SIZE})"
        fn = "plane_sum" if e.fn is ir.PlaneFn.SUM else "plane_max"
        return f"_s.{fn}(g, {v}, {mask}, {PLANE_SIZE})"
