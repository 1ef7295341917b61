"""The core IR to LLVM IR, through llvmlite's builder: one entry point runs a range of
cubes, each cube's units one after another.

Every local lives in an ``alloca`` (promoted to registers by the optimiser). A kernel
without a barrier runs each cube as a plain loop over its units, the whole body inside
(the loop LLVM may vectorise). A kernel with a barrier keeps every local of a unit in
a per-unit array instead, and runs each stretch of statements between barriers as a
loop over the cube's units: a statement holding a barrier (an ``if`` or a loop around
one) is uniform across the cube, so its condition is computed once per cube, as unit
0 sees it. A ``break``/``continue`` of such a loop, reached inside a stretch, raises a
per-cube flag that the code after the stretch obeys; a ``return`` marks the unit done,
and later stretches skip it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass

from llvmlite import ir as ll

import cubecl_server.backend as cb
import cubecl_server.backend.compiling as cp
import cubecl_server.backend.lowering as lo
from cubecl_server import ir

__all__ = ["NATIVE", "LlvmEmitter", "WORDS_BEFORE_PARAMS"]

Elem, B, M, Op = ir.Elem, ir.BuiltinName, ir.MathFn, ir.AtomicOp
I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
PTR = ll.PointerType()
WORDS_BEFORE_PARAMS = 3
"""A launch's words start with the cube count along x, y and z."""

_INTS = (Elem.I8, Elem.I16, Elem.I32, Elem.I64, Elem.U8, Elem.U16, Elem.U32, Elem.U64)
_INT_NATIVE = frozenset({M.COUNT_ONES, M.REVERSE_BITS, M.LEADING_ZEROS, M.TRAILING_ZEROS,
                         M.MUL_HI, M.SATURATING_ADD, M.SATURATING_SUB})
# LLVM computes these exactly (the rest of the float functions are the core's polyfills,
# which give C's edge semantics without libm: the object code then needs no symbol).
_FLOAT_NATIVE = frozenset({M.COPYSIGN})
NATIVE = lo.Native(
    nan_minmax=True,  # llvm.minnum/maxnum: a NaN loses to a number, as fmin/fmax
    functions={**{t: _INT_NATIVE for t in _INTS},
               **{t: _FLOAT_NATIVE for t in (Elem.F16, Elem.F32, Elem.F64)}},
    float_atomics=frozenset({Op.ADD, Op.MIN, Op.MAX, Op.EXCHANGE}),  # atomicrmw f*
    builtins=frozenset({B.UNIT_POS, B.UNIT_POS_X, B.UNIT_POS_Y, B.UNIT_POS_Z, B.CUBE_POS,
                        B.CUBE_POS_X, B.CUBE_POS_Y, B.CUBE_POS_Z, B.CUBE_COUNT_X,
                        B.CUBE_COUNT_Y, B.CUBE_COUNT_Z, B.PLANE_DIM, B.UNIT_POS_PLANE}))
"""What LLVM does itself; the shared passes lower the rest of the IR."""

_SCALAR = {Elem.F16: ll.HalfType(), Elem.F32: ll.FloatType(), Elem.F64: ll.DoubleType(),
           Elem.BOOL: I1, **{t: ll.IntType(t.bits) for t in _INTS}}
_INTRINSIC = {M.SQRT: "sqrt", M.FLOOR: "floor", M.CEIL: "ceil", M.TRUNC: "trunc",
              M.ROUND: "roundeven", M.ABS: "fabs", M.FMA: "fma", M.COPYSIGN: "copysign",
              M.MIN: "minnum", M.MAX: "maxnum", M.COUNT_ONES: "ctpop",
              M.REVERSE_BITS: "bitreverse"}
_CMP = {ir.BinOp.EQ: "==", ir.BinOp.NE: "!=", ir.BinOp.LT: "<", ir.BinOp.LE: "<=",
        ir.BinOp.GT: ">", ir.BinOp.GE: ">="}
_RMW = {Op.ADD: "add", Op.SUB: "sub", Op.EXCHANGE: "xchg", Op.AND: "and", Op.OR: "or",
        Op.XOR: "xor"}
_ORDER = "seq_cst"


def ltype(t: ir.Type) -> ll.Type:
    """The LLVM type of a value of ``t`` (a line is a vector)."""
    if isinstance(t, ir.Line):
        return ll.VectorType(_SCALAR[t.elem], t.size)
    return _SCALAR[t]


def mtype(t: ir.Type) -> ll.Type:
    """The LLVM type of ``t`` in memory: a bool is a byte there."""
    if isinstance(t, ir.Line):
        return ll.VectorType(I8 if t.elem is Elem.BOOL else _SCALAR[t.elem], t.size)
    return I8 if t is Elem.BOOL else _SCALAR[t]


def _suffix(t: ll.Type) -> str:
    """An overloaded intrinsic's type suffix: ``f32``, ``i64``, ``v4f32``."""
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{_suffix(t.element)}"
    if isinstance(t, ll.IntType):
        return f"i{t.width}"
    return {ll.HalfType: "f16", ll.FloatType: "f32", ll.DoubleType: "f64"}[type(t)]


def has_barrier(s: ir.Stmt) -> bool:
    """Whether ``s`` is or holds a barrier (the cube meets there)."""
    return any(isinstance(n, ir.Barrier) for n in ir.walk(s))


def _escapes(stmts: tuple[ir.Stmt, ...]) -> bool:
    """Whether a ``break``/``continue`` in ``stmts`` leaves a loop around them."""
    for s in stmts:
        if isinstance(s, (ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.If) and (_escapes(s.then) or _escapes(s.orelse)):
            return True
    return False


_CUBE_BUILTINS = frozenset({B.CUBE_POS, B.CUBE_POS_X, B.CUBE_POS_Y, B.CUBE_POS_Z,
                            B.CUBE_COUNT, B.CUBE_COUNT_X, B.CUBE_COUNT_Y, B.CUBE_COUNT_Z,
                            B.CUBE_DIM, B.CUBE_DIM_X, B.CUBE_DIM_Y, B.CUBE_DIM_Z, B.PLANE_DIM})


def _bodies(s: ir.Stmt) -> tuple[tuple[ir.Stmt, ...], ...]:
    """The statement lists directly inside ``s``."""
    if isinstance(s, ir.If):
        return s.then, s.orelse
    if isinstance(s, (ir.For, ir.While)):
        return (s.body,)
    return ()


def _is_uniform(e: ir.Expr, uniform: set[str], scalars: Collection[str]) -> bool:
    """Whether ``e`` has one value for every unit of a cube: it reads no memory and no
    unit's position, only constants, scalars, metadata, the cube's position and
    ``uniform`` locals."""
    for n in ir.walk(e):
        if isinstance(n, (ir.Load, ir.PlaneOp)):
            return False
        if isinstance(n, ir.Var) and n.name not in uniform and n.name not in scalars:
            return False
        if isinstance(n, ir.Builtin) and n.name not in _CUBE_BUILTINS:
            return False
    return True


def _uniform_locals(kernel: ir.Kernel, scalars: set[str]) -> set[str]:
    """The locals every unit of a cube holds the same value of: assigned only by
    statements of the kernel's top level, from uniform values (``_is_uniform``)."""
    top: dict[str, list[ir.Expr]] = {}
    elsewhere: set[str] = set()
    for s in kernel.body:
        if isinstance(s, ir.Assign):
            top.setdefault(s.name, []).append(s.value)
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and n is not s:
                elsewhere.add(n.name)
            elif isinstance(n, ir.For):
                elsewhere.add(n.var)
            elif isinstance(n, ir.AtomicStmt) and n.result is not None:
                elsewhere.add(n.result)
    uniform = set(top) - elsewhere
    while True:
        keep = {n for n in uniform if all(_is_uniform(v, uniform, scalars) for v in top[n])}
        if keep == uniform:
            return uniform
        uniform = keep


def _rematerialised(kernel: ir.Kernel, scalars: set[str]) -> dict[str, ir.Expr]:
    """The locals computed again where they are read instead of kept: each assigned
    once, at the kernel's top level before any read, from positions, constants,
    scalars, metadata and other such locals, without reading memory. Where locals live
    per unit, this keeps ``col = CUBE_POS_X * 16 + UNIT_POS_X`` a function of the units'
    loop, so that LLVM sees neighbouring units access neighbouring elements."""
    assigns: dict[str, int] = {}
    for n in ir.walk(kernel):
        if isinstance(n, ir.Assign):
            assigns[n.name] = assigns.get(n.name, 0) + 1
        elif isinstance(n, ir.For):
            assigns[n.var] = 2
        elif isinstance(n, ir.AtomicStmt) and n.result is not None:
            assigns[n.result] = 2
    out: dict[str, ir.Expr] = {}
    read: set[str] = set()
    for s in kernel.body:
        if isinstance(s, ir.Assign) and assigns[s.name] == 1 and s.name not in read and all(
                not isinstance(n, (ir.Load, ir.PlaneOp))
                and (not isinstance(n, ir.Var) or n.name in scalars or n.name in out)
                for n in ir.walk(s.value)):
            out[s.name] = s.value
        read |= {n.name for n in ir.walk(s) if isinstance(n, ir.Var)}
    return out


@dataclass
class _Loop:
    """Where a ``break`` and a ``continue`` go; ``flag`` for a loop of the cube."""

    brk: ll.Block
    cont: ll.Block
    flag: ll.AllocaInstr | None = None


class LlvmEmitter(lo.StructuredEmitter):
    """One kernel as an LLVM module whose function ``entry_point(words, first, end)``
    runs cubes ``first`` to ``end`` (linear indices) of a launch."""

    def __init__(self, kernel: ir.Kernel, cube_dim: cb.CubeDim,
                 mode: cp.ExecutionMode) -> None:
        super().__init__(kernel, cube_dim, mode, "llvm", NATIVE)
        k = self.kernel
        self.n = math.prod(self.dim)
        self.module = ll.Module(name=self.ident)
        self.entry_point = f"cubecl_{self.ident}"
        self.fn = ll.Function(self.module, ll.FunctionType(ll.VoidType(), [PTR, I64, I64]),
                              self.entry_point)
        self.fn.args[0].add_attribute("noalias")
        self.pre = ll.IRBuilder(self.fn.append_basic_block("entry"))
        self.b = ll.IRBuilder(self.fn.append_basic_block("start"))
        self.words = self.fn.args[0]
        self.returns = any(isinstance(s, ir.Return) for s in ir.walk(k.body))
        self.uniform = _uniform_locals(k, set(self.scalars))
        self.remat = _rematerialised(k, set(self.scalars))
        self.per_unit = any(isinstance(s, ir.Barrier) for s in ir.walk(k.body)) or \
            self._hoists(k.body)
        self.meta_used: dict[tuple[str, str, int], ll.Value] = {}
        self._words: dict[int, ll.Value] = {}
        self.unit: ll.Value = ll.Constant(I32, 0)
        self.axes: tuple[ll.Value, ...] | None = None  # the unit's x, y, z where looped
        self.cube: ll.Value = ll.Constant(I64, 0)
        self.loops: list[_Loop] = []
        self.region_latch: ll.Block | None = None
        self.cube_vars: dict[str, ll.Value] = {}
        n = self.n if self.per_unit else 1
        self.slots = {loc.name: self.alloca(self._per(ltype(loc.elem)), loc.name)
                      for loc in k.locals}
        self.arrays_mem = {la.name: self.alloca(self._per(ll.ArrayType(mtype(la.elem), la.size)),
                                                la.name) for la in k.local_arrays}
        self.shared_mem = {sh.name: self.alloca(ll.ArrayType(mtype(sh.elem), sh.size), sh.name)
                           for sh in k.shared}
        self.done = self.alloca(ll.ArrayType(I8, n), "done") if self.per_unit else None

    # ------------------------------------------------------------ uniform loops

    def hoisted(self, s: ir.Stmt) -> bool:
        """Whether ``s``, met at the cube's level, is a loop every unit runs the same
        number of times (a trip count from constants, scalars, metadata and the cube's
        position; no ``break``, ``continue`` or ``return`` to leave it early) that reads
        memory: run for the cube, with the units' loop inside its body, so that LLVM
        vectorises across the units (a unit's accesses at ``UNIT_POS_X`` are neighbours)
        - the cost is the locals living per unit, in memory."""
        return (isinstance(s, ir.For) and not self.returns and self.n >= 4
                and _is_uniform(s.stop, self.uniform, self.scalars)
                and not _escapes(s.body)
                and any(isinstance(n, ir.Load) for n in ir.walk(s)))

    def _loop_alias(self, s: ir.For) -> str | None:
        """The kernel's loop variable of the counted loop ``s`` (``k = counter`` first in
        its body), where nothing else assigns it and nothing outside ``s`` reads it: for
        a loop run by the cube, it is then the cube's counter itself, which LLVM sees is
        the same for every unit (a per-unit copy would hide that)."""
        first = s.body[0] if s.body else None
        if not (isinstance(first, ir.Assign) and isinstance(first.value, ir.Var)
                and first.value.name == s.var and first.name in self.locals):
            return None
        name = first.name

        def uses(tree: ir.Kernel | ir.For) -> tuple[int, int]:
            nodes = list(ir.walk(tree))
            return (sum(isinstance(n, ir.Assign) and n.name == name for n in nodes)
                    + sum(isinstance(n, ir.For) and n.var == name for n in nodes)
                    + sum(isinstance(n, ir.AtomicStmt) and n.result == name for n in nodes),
                    sum(isinstance(n, ir.Var) and n.name == name for n in nodes))
        total, inside = uses(self.kernel), uses(s)
        return name if total == (1, inside[1]) and inside[0] == 1 else None

    def _hoists(self, stmts: tuple[ir.Stmt, ...]) -> bool:
        """Whether a loop at the cube's level in ``stmts`` is hoisted (``hoisted``)."""
        for s in stmts:
            if self.hoisted(s):
                return True
            if has_barrier(s) and any(self._hoists(b) for b in _bodies(s)):
                return True
        return False

    # ------------------------------------------------------------ helpers

    def _per(self, t: ll.Type) -> ll.Type:
        """``t``, or an array of one per unit where locals live per unit."""
        return ll.ArrayType(t, self.n) if self.per_unit else t

    def alloca(self, t: ll.Type, name: str) -> ll.AllocaInstr:
        """Stack memory of the entry point (in its first block, so it is promotable)."""
        a = self.pre.alloca(t, name=self.stems.get(name, name))
        a.align = 16
        a.type = PTR  # llvmlite types it ``T*``; addresses here are opaque, as in LLVM
        return a

    def word(self, k: int) -> ll.Value:
        """Launch word ``k`` (a u64), loaded once at the top of the entry point."""
        if k not in self._words:
            p = self.pre.gep(self.words, [ll.Constant(I64, k)], source_etype=I64)
            self._words[k] = self.pre.load(p, typ=I64)
        return self._words[k]

    def const(self, value: float | bool, t: ir.Type) -> ll.Constant:
        """A constant of ``t`` (a line's: every element ``value``)."""
        if isinstance(t, ir.Line):
            return ll.Constant(ltype(t), [self.const(value, t.elem)] * t.size)
        if t is Elem.BOOL:
            return ll.Constant(I1, int(bool(value)))
        if t.is_float:
            return ll.Constant(_SCALAR[t], float(value))
        v = int(value) & ((1 << t.bits) - 1)
        return ll.Constant(_SCALAR[t], v - (1 << t.bits) if v >= 1 << (t.bits - 1) else v)

    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
        """A call of ``llvm.<name>`` overloaded on the first argument's type."""
        full = f"llvm.{name}.{_suffix(args[0].type)}"
        fn = self.module.globals.get(full)
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(ret, [a.type for a in args]), full)
        return self.b.call(fn, args)

    def resize(self, x: ll.Value, src: ir.Type, dst: ir.Type) -> ll.Value:
        """An integer ``x`` of ``src`` brought to ``dst``'s width (sign-extended where
        ``src`` is signed)."""
        a, b = ir.elem_of(src).bits, ir.elem_of(dst).bits
        if a == b:
            return x
        if a > b:
            return self.b.trunc(x, ltype(dst))
        return (self.b.sext if ir.elem_of(src).is_signed else self.b.zext)(x, ltype(dst))

    def index64(self, e: ir.Expr) -> ll.Value:
        """An index as an i64 (an unsigned one zero-extended)."""
        return self.resize(self.expr(e), e.type, Elem.I64 if e.type.is_signed else Elem.U64)

    def element(self, name: str, index: ll.Value) -> tuple[ll.Value, ir.Elem]:
        """The address of element ``index`` of array ``name``, and its element type."""
        # One index from the element type's address: the unit's copy starts past the others.
        if name in self.shared_mem:
            elem = self.shared[name].elem
            base = self.shared_mem[name]
        elif name in self.arrays_mem:
            la = self.local_arrays[name]
            elem, base = la.elem, self.arrays_mem[name]
            if self.per_unit:
                start = self.b.mul(self.b.zext(self.unit, I64), ll.Constant(I64, la.size))
                index = self.b.add(start, index)
        else:
            elem, base = self.arrays[name].elem, self.param(name)
        return self.b.gep(base, [index], source_etype=mtype(elem)), elem

    def param(self, name: str) -> ll.Value:
        """An array parameter's address, or a scalar parameter's value."""
        params = [*self.arrays, *self.scalars]
        k = WORDS_BEFORE_PARAMS + params.index(name)
        if name in self.arrays:
            key = -1 - k
            if key not in self._words:
                self._words[key] = self.pre.inttoptr(self.word(k), PTR)
            return self._words[key]
        t = self.scalars[name].elem
        key = -1000 - k
        if key not in self._words:
            p = self.pre.gep(self.words, [ll.Constant(I64, k)], source_etype=I64)
            v = self.pre.load(p, typ=mtype(t))
            self._words[key] = self.pre.icmp_unsigned("!=", v, ll.Constant(I8, 0)) \
                if t is Elem.BOOL else v
        return self._words[key]

    def local(self, name: str) -> ll.Value:
        """The address of local ``name`` for the unit running."""
        if name in self.cube_vars:
            return self.cube_vars[name]
        slot = self.slots[name]
        if self.per_unit:
            t = self.locals[name].elem
            return self.b.gep(slot, [self.unit], source_etype=ltype(t))
        return slot

    def to_memory(self, v: ll.Value, t: ir.Type) -> ll.Value:
        """``v`` as memory holds it (a bool as a byte)."""
        return self.b.zext(v, mtype(t)) if ir.elem_of(t) is Elem.BOOL else v

    def from_memory(self, v: ll.Value, t: ir.Type) -> ll.Value:
        """``v`` read from memory as a value of ``t``."""
        if ir.elem_of(t) is not Elem.BOOL:
            return v
        return self.b.icmp_unsigned("!=", v, ll.Constant(v.type, None))

    def terminated(self) -> bool:
        """Whether the block being written already ends in a jump."""
        return self.b.block.is_terminated

    def goto(self, target: ll.Block) -> None:
        """Jump to ``target`` unless the block already ends."""
        if not self.terminated():
            self.b.branch(target)

    # ------------------------------------------------------------ the program

    def program(self) -> str:
        """The module's text: the entry point over its cube range."""
        first, end = self.fn.args[1], self.fn.args[2]
        c = self.alloca(I64, "cube")
        self.b.store(first, c)
        hdr, body, latch, out = (self.fn.append_basic_block(n)
                                 for n in ("cubes", "cube", "next_cube", "out"))
        self.b.branch(hdr)
        self.b.position_at_end(hdr)
        cube = self.b.load(c, typ=I64)
        self.b.cbranch(self.b.icmp_unsigned("<", cube, end), body, out)
        self.b.position_at_end(body)
        self.cube = cube
        if self.per_unit:  # each cube's units start with zeroed locals, none done
            for slot in [*self.slots.values(), self.done]:
                self.b.store(ll.Constant(slot.allocated_type, None), slot)
        self.cube_block(self.kernel.body)
        self.goto(latch)
        self.b.position_at_end(latch)
        self.b.store(self.b.add(cube, ll.Constant(I64, 1)), c)
        self.b.branch(hdr)
        self.b.position_at_end(out)
        self.b.ret_void()
        self.pre.branch(self.fn.blocks[1])
        text = str(self.module)
        if "half" in text:
            _truncdfhf2(self.module)
            text = str(self.module)
        return text

    def cube_block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """``stmts`` for the whole cube: the stretches between barriers as loops over
        its units, the statements holding barriers once for the cube."""
        run: list[ir.Stmt] = []
        for s in stmts:
            if not has_barrier(s) and not self.hoisted(s):
                run.append(s)
                if isinstance(s, (ir.Break, ir.Continue, ir.Return)):
                    break
                continue
            self.units(tuple(run))
            run = []
            if self.terminated():
                return
            self.cube_stmt(s)
            if self.terminated():
                return
        self.units(tuple(run))

    def units(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """``stmts`` (holding no barrier) run by each unit of the cube in turn."""
        if not stmts:
            return
        # One loop per axis of more than one unit, x innermost: a unit's x is then the
        # innermost counter, and accesses at ``UNIT_POS_X`` are consecutive (vectorisable).
        x, y, _ = self.dim
        axes = [(k, size) for k, size in reversed(list(enumerate(self.dim))) if size > 1]
        pos: list[ll.Value] = [ll.Constant(I32, 0)] * 3
        exits: list[tuple[ll.AllocaInstr, ll.Value, ll.Block, ll.Block, ll.Block]] = []
        for k, size in axes or [(0, 1)]:
            slot = self.alloca(I32, "xyz"[k])
            self.b.store(ll.Constant(I32, 0), slot)
            hdr, body, latch, out = (self.fn.append_basic_block(f"{n}_{'xyz'[k]}")
                                     for n in ("units", "unit", "next_unit", "units_done"))
            self.b.branch(hdr)
            self.b.position_at_end(hdr)
            pos[k] = self.b.load(slot, typ=I32)
            self.b.cbranch(self.b.icmp_unsigned("<", pos[k], ll.Constant(I32, size)), body, out)
            self.b.position_at_end(body)
            exits.append((slot, pos[k], hdr, latch, out))
        latch = exits[-1][3]
        unit = self.b.add(self.b.mul(self.b.add(self.b.mul(pos[2], ll.Constant(I32, y)), pos[1]),
                                     ll.Constant(I32, x)), pos[0])
        saved = (self.unit, self.region_latch, self.axes)
        self.unit, self.region_latch, self.axes = unit, latch, tuple(pos)
        if self.per_unit and self.returns and self.done is not None:
            done = self.b.load(self.b.gep(self.done, [unit], source_etype=I8), typ=I8)
            go = self.fn.append_basic_block("unit_live")
            self.b.cbranch(self.b.icmp_unsigned("!=", done, ll.Constant(I8, 0)), latch, go)
            self.b.position_at_end(go)
        if not self.per_unit:  # a unit's locals start at zero
            for slot in self.slots.values():
                self.b.store(ll.Constant(slot.allocated_type, None), slot)
        self.block(stmts)
        for slot, value, hdr, latch, out in reversed(exits):
            self.goto(latch)
            self.b.position_at_end(latch)
            self.b.store(self.b.add(value, ll.Constant(I32, 1)), slot)
            self.b.branch(hdr)
            self.b.position_at_end(out)
        self.unit, self.region_latch, self.axes = saved
        loop = self.loops[-1] if self.loops else None
        if loop is not None and loop.flag is not None and _escapes(stmts):
            # The units left the cube's loop (uniformly): the cube follows them.
            flag = self.b.load(loop.flag, typ=I8)
            self.b.store(ll.Constant(I8, 0), loop.flag)
            rest = self.fn.append_basic_block("stay")
            sw = self.b.switch(flag, rest)
            sw.add_case(ll.Constant(I8, 1), loop.brk)
            sw.add_case(ll.Constant(I8, 2), loop.cont)
            self.b.position_at_end(rest)

    def cube_stmt(self, s: ir.Stmt) -> None:
        """A statement holding a barrier, its conditions as unit 0 computes them."""
        saved, self.unit = self.unit, ll.Constant(I32, 0)
        if isinstance(s, ir.Barrier):
            pass  # the stretches before and after are separate loops over the units
        elif isinstance(s, ir.If):
            cond = self.expr(s.cond)
            self.unit = saved
            self._if(cond, lambda: self.cube_block(s.then), lambda: self.cube_block(s.orelse),
                     bool(s.orelse))
        elif isinstance(s, ir.For):
            stop = self.expr(s.stop)
            self.unit = saved
            counter = self.alloca(ltype(s.stop.type), "counter")
            body, alias = s.body, self._loop_alias(s)
            self.cube_vars[s.var] = counter
            if alias is not None:  # the loop's own variable is the counter, for the cube
                self.cube_vars[alias], body = counter, body[1:]
            flag = self.alloca(I8, "left")
            self.b.store(ll.Constant(I8, 0), flag)
            self._counted(counter, stop, s.stop.type, lambda: self.cube_block(body), flag)
            del self.cube_vars[s.var]
            self.cube_vars.pop(alias or "", None)
        elif isinstance(s, ir.While):
            flag = self.alloca(I8, "left")
            self.b.store(ll.Constant(I8, 0), flag)
            self.unit = saved
            self._while(s.cond, lambda: self.cube_block(s.body), flag, cube=True)
        else:
            self.fail(f"{type(s).__name__} cannot hold a barrier on the llvm backend")
        self.unit = saved

    # ------------------------------------------------------------ control flow

    def _if(self, cond: ll.Value, then: Callable[[], None], orelse: Callable[[], None],
            has_else: bool) -> None:
        t, out = self.fn.append_basic_block("then"), self.fn.append_basic_block("endif")
        e = self.fn.append_basic_block("else") if has_else else out
        self.b.cbranch(cond, t, e)
        for block, emit in ((t, then), (e, orelse)) if has_else else ((t, then),):
            self.b.position_at_end(block)
            emit()
            self.goto(out)
        self.b.position_at_end(out)

    def _counted(self, counter: ll.Value, stop: ll.Value, t: ir.Type, body: Callable[[], None],
                 flag: ll.AllocaInstr | None = None) -> None:
        """``for counter in 0..stop`` (unsigned) around ``body``."""
        self.b.store(self.const(0, t), counter)
        hdr, blk, latch, out = (self.fn.append_basic_block(n)
                                for n in ("for", "for_body", "for_next", "for_out"))
        self.b.branch(hdr)
        self.b.position_at_end(hdr)
        v = self.b.load(counter, typ=ltype(t))
        self.b.cbranch(self.b.icmp_unsigned("<", v, stop), blk, out)
        self.b.position_at_end(blk)
        self.loops.append(_Loop(out, latch, flag))
        body()
        self.loops.pop()
        self.goto(latch)
        self.b.position_at_end(latch)
        self.b.store(self.b.add(self.b.load(counter, typ=ltype(t)), self.const(1, t)), counter)
        self.b.branch(hdr)
        self.b.position_at_end(out)

    def _while(self, cond: ir.Expr, body: Callable[[], None], flag: ll.AllocaInstr | None = None,
               cube: bool = False) -> None:
        hdr, blk, out = (self.fn.append_basic_block(n) for n in ("while", "loop", "done"))
        self.b.branch(hdr)
        self.b.position_at_end(hdr)
        saved = self.unit
        if cube:
            self.unit = ll.Constant(I32, 0)
        c = self.expr(cond)
        self.unit = saved
        self.b.cbranch(c, blk, out)
        self.b.position_at_end(blk)
        self.loops.append(_Loop(out, hdr, flag))
        body()
        self.loops.pop()
        self.goto(hdr)
        self.b.position_at_end(out)

    def _nested(self, stmts: tuple[ir.Stmt, ...]) -> Callable[[], None]:
        return lambda: self.block(stmts)

    def stmt_assign(self, s: ir.Assign) -> None:
        """A store to the local's slot (none for a local computed where it is read)."""
        if s.name not in self.remat:
            self.b.store(self.expr(s.value), self.local(s.name))

    def stmt_store(self, s: ir.Store) -> None:
        """A store of an element, or of a whole line of a line array."""
        t = s.value.type
        v = self.to_memory(self.expr(s.value), t)
        index = self.index64(s.index)
        if isinstance(t, ir.Line):
            index = self.b.mul(index, ll.Constant(I64, t.size))
        p, elem = self.element(s.array, index)
        self.b.store(v, p, align=max(1, elem.bits // 8))

    def stmt_if(self, s: ir.If) -> None:
        """A branch, joined after both sides."""
        self._if(self.expr(s.cond), self._nested(s.then), self._nested(s.orelse),
                 bool(s.orelse))

    def stmt_for(self, s: ir.For) -> None:
        """A counted loop (the core IR's: from 0 by 1 to a value fixed before it)."""
        self._counted(self.local(s.var), self.expr(s.stop), s.stop.type, self._nested(s.body))

    def stmt_while(self, s: ir.While) -> None:
        """A loop testing its condition first."""
        self._while(s.cond, self._nested(s.body))

    def _leave(self, loop: _Loop, code: int, target: ll.Block) -> None:
        if loop.flag is not None:  # the cube's loop, from inside a stretch of units
            self.b.store(ll.Constant(I8, code), loop.flag)
            assert self.region_latch is not None
            self.b.branch(self.region_latch)
        else:
            self.b.branch(target)

    def stmt_break(self, s: ir.Break) -> None:
        """To the innermost loop's exit."""
        self._leave(self.loops[-1], 1, self.loops[-1].brk)

    def stmt_continue(self, s: ir.Continue) -> None:
        """To the innermost loop's next iteration."""
        self._leave(self.loops[-1], 2, self.loops[-1].cont)

    def stmt_return(self, s: ir.Return) -> None:
        """The unit is done: on to the next (marked done, where stretches follow)."""
        if self.done is not None:
            p = self.b.gep(self.done, [self.unit], source_etype=I8)
            self.b.store(ll.Constant(I8, 1), p)
        assert self.region_latch is not None
        self.b.branch(self.region_latch)

    def stmt_barrier(self, s: ir.Barrier) -> None:
        """Never reached: a barrier splits the cube's stretches (``cube_block``)."""
        raise AssertionError("a barrier inside a stretch of units")

    def stmt_sync_plane(self, s: ir.SyncPlane) -> None:
        """A plane is one unit: nothing to wait for."""

    def stmt_debug_print(self, s: ir.DebugPrint) -> None:
        """A call of the C library's ``printf`` (the process has it, and MCJIT links
        the object code to it), its values passed as C passes them
        (:func:`~cubecl_server.backend.lowering.printf_format`)."""
        fmt, passed = lo.printf_format(s)
        data = bytearray(fmt.encode("ascii") + b"\0")
        text = ll.GlobalVariable(self.module, ll.ArrayType(I8, len(data)),
                                 self.module.get_unique_name("fmt"))
        text.initializer = ll.Constant(ll.ArrayType(I8, len(data)), data)
        text.global_constant, text.linkage = True, "internal"
        printf = self.module.globals.get("printf")
        if printf is None:
            printf = ll.Function(self.module, ll.FunctionType(I32, [PTR], var_arg=True),
                                 "printf")
        args: list[ll.Value] = [text]
        for a, t in zip(s.args, passed, strict=True):
            x = self.expr(a)
            if t.is_float:
                args.append(x if a.type is Elem.F64 else self.b.fpext(x, _SCALAR[Elem.F64]))
            else:
                args.append(self.resize(x, a.type, t))
        self.b.call(printf, args)

    def stmt_atomic(self, s: ir.AtomicStmt) -> None:
        """``atomicrmw``, or ``cmpxchg``; the old value to the result's local."""
        t = s.value.type
        assert isinstance(t, Elem)
        p, _ = self.element(s.array, self.index64(s.index))
        v = self.expr(s.value)
        if s.op is Op.COMPARE_EXCHANGE:
            assert s.compare is not None
            pair = self.b.cmpxchg(p, self.expr(s.compare), v, _ORDER, _ORDER)
            old = self.b.extract_value(pair, 0)
        else:
            if t.is_float:
                op = {Op.ADD: "fadd", Op.MAX: "fmax", Op.MIN: "fmin"}.get(s.op, _RMW.get(s.op))
            elif s.op in (Op.MAX, Op.MIN):
                op = ("" if t.is_signed else "u") + s.op.value
            else:
                op = _RMW[s.op]
            if op is None:
                self.fail(f"atomic {s.op.value} on {t.value} has no LLVM instruction")
            old = self.b.atomic_rmw(op, p, v, _ORDER)
        if s.result is not None:
            self.b.store(old, self.local(s.result))

    # ------------------------------------------------------------ expressions

    def expr_const(self, e: ir.Const) -> ll.Value:
        """A constant."""
        return self.const(e.value, e.type)

    def expr_var(self, e: ir.Var) -> ll.Value:
        """A local's value for the unit running, or a scalar parameter."""
        if e.name in self.scalars:
            return self.param(e.name)
        if e.name in self.remat:
            return self.expr(self.remat[e.name])
        return self.b.load(self.local(e.name), typ=ltype(e.type))

    def expr_builtin(self, e: ir.Builtin) -> ll.Value:
        """The unit's and the cube's positions, the cube count; planes of one unit."""
        x, y, _ = self.dim
        b, u = self.b, self.unit
        c = lambda v: ll.Constant(I32, v)  # noqa: E731
        name = e.name
        if name is B.UNIT_POS:
            return u
        axis = {B.UNIT_POS_X: 0, B.UNIT_POS_Y: 1, B.UNIT_POS_Z: 2}.get(name)
        if axis is not None and self.axes is not None and not isinstance(u, ll.Constant):
            return self.axes[axis]
        if name is B.UNIT_POS_X:
            return b.urem(u, c(x))
        if name is B.UNIT_POS_Y:
            return b.urem(b.udiv(u, c(x)), c(y))
        if name is B.UNIT_POS_Z:
            return b.udiv(u, c(x * y))
        if name is B.PLANE_DIM:
            return c(1)
        if name is B.UNIT_POS_PLANE:
            return c(0)
        counts = [self.word(k) for k in range(3)]
        if name in (B.CUBE_COUNT_X, B.CUBE_COUNT_Y, B.CUBE_COUNT_Z):
            return b.trunc(counts[(B.CUBE_COUNT_X, B.CUBE_COUNT_Y, B.CUBE_COUNT_Z).index(name)],
                           I32)
        q = self.cube
        if name is B.CUBE_POS_X:
            q = b.urem(q, counts[0])
        elif name is B.CUBE_POS_Y:
            q = b.urem(b.udiv(q, counts[0]), counts[1])
        elif name is B.CUBE_POS_Z:
            q = b.udiv(q, b.mul(counts[0], counts[1]))
        return b.trunc(q, I32)

    def expr_binary(self, e: ir.Binary) -> ll.Value:
        """LLVM's instructions: integers wrap, the passes made divisions and shifts safe."""
        op, t = e.op, ir.elem_of(e.lhs.type)
        a, c = self.expr(e.lhs), self.expr(e.rhs)
        b = self.b
        Bo = ir.BinOp
        if op in _CMP:
            if t.is_float:
                return (b.fcmp_unordered if op is Bo.NE else b.fcmp_ordered)(_CMP[op], a, c)
            return (b.icmp_signed if t.is_signed else b.icmp_unsigned)(_CMP[op], a, c)
        if op in (Bo.AND, Bo.BITAND):
            return b.and_(a, c)
        if op in (Bo.OR, Bo.BITOR):
            return b.or_(a, c)
        if op is Bo.BITXOR:
            return b.xor(a, c)
        if t.is_float:
            fop = {Bo.ADD: b.fadd, Bo.SUB: b.fsub, Bo.MUL: b.fmul, Bo.DIV: b.fdiv, Bo.REM: b.frem}
            return fop[op](a, c)
        iop = {Bo.ADD: b.add, Bo.SUB: b.sub, Bo.MUL: b.mul, Bo.SHL: b.shl,
               Bo.IDIV: b.sdiv if t.is_signed else b.udiv,
               Bo.REM: b.srem if t.is_signed else b.urem,
               Bo.SHR: b.ashr if t.is_signed else b.lshr}
        return iop[op](a, c)

    def expr_unary(self, e: ir.Unary) -> ll.Value:
        """Negation (wrapping on integers), ``not``, ``~``."""
        x = self.expr(e.x)
        if e.op is ir.UnOp.NEG:
            return self.b.fneg(x) if ir.elem_of(e.type).is_float else self.b.neg(x)
        return self.b.not_(x)

    def expr_math(self, e: ir.Math) -> ll.Value:
        """LLVM's intrinsics for the functions the passes left."""
        fn, t = e.fn, e.args[0].type
        xs = [self.expr(a) for a in e.args]
        b = self.b
        if fn is M.ISNAN:
            return b.fcmp_unordered("uno", xs[0], xs[0])
        if fn is M.ISINF:
            fabs = self.intrinsic("fabs", xs[0].type, xs)
            return b.fcmp_ordered("==", fabs, self.const(math.inf, t))
        if fn in (M.LEADING_ZEROS, M.TRAILING_ZEROS):
            name = "ctlz" if fn is M.LEADING_ZEROS else "cttz"
            v = self.intrinsic(name, xs[0].type, [xs[0], ll.Constant(I1, 0)])
            return self.resize(v, t, e.type)
        if fn is M.COUNT_ONES:
            return self.resize(self.intrinsic("ctpop", xs[0].type, xs), t, e.type)
        if fn in (M.SATURATING_ADD, M.SATURATING_SUB):
            s = "s" if ir.elem_of(t).is_signed else "u"
            return self.intrinsic(f"{s}{'add' if fn is M.SATURATING_ADD else 'sub'}.sat",
                                  xs[0].type, xs)
        if fn is M.MUL_HI:  # the full product in twice the width, its high half
            el = ir.elem_of(t)
            w: ll.Type = ll.IntType(2 * el.bits)
            shift = ll.Constant(w, el.bits)
            if isinstance(t, ir.Line):
                w, shift = ll.VectorType(w, t.size), ll.Constant(ll.VectorType(w, t.size),
                                                                 [shift] * t.size)
            ext = b.sext if el.is_signed else b.zext
            p = b.mul(ext(xs[0], w), ext(xs[1], w))
            return b.trunc(b.lshr(p, shift), ltype(t))
        if fn not in _INTRINSIC:
            self.fail(f"{fn.value} has no LLVM intrinsic (the llvm backend's Native "
                      "description should have left it to the polyfills)")
        return self.intrinsic(_INTRINSIC[fn], xs[0].type, xs)

    def expr_cast(self, e: ir.Cast) -> ll.Value:
        """C's conversions (float to integer truncates; to bool, ``!= 0``)."""
        src, dst = ir.elem_of(e.x.type), ir.elem_of(e.type)
        x, b, to = self.expr(e.x), self.b, ltype(e.type)
        if src is dst:
            return x
        if dst is Elem.BOOL:
            zero = self.const(0, e.x.type)
            return b.fcmp_unordered("!=", x, zero) if src.is_float else \
                b.icmp_unsigned("!=", x, zero)
        if src is Elem.BOOL:
            return b.uitofp(x, to) if dst.is_float else b.zext(x, to)
        if src.is_float and dst.is_float:
            return b.fpext(x, to) if dst.bits > src.bits else b.fptrunc(x, to)
        if src.is_float:
            return b.fptosi(x, to) if dst.is_signed else b.fptoui(x, to)
        if dst.is_float:
            return b.sitofp(x, to) if src.is_signed else b.uitofp(x, to)
        return self.resize(x, e.x.type, e.type)

    def expr_bitcast(self, e: ir.Bitcast) -> ll.Value:
        """The same bits as another type."""
        return self.b.bitcast(self.expr(e.x), ltype(e.type))

    def expr_select(self, e: ir.Select) -> ll.Value:
        """``select`` (both sides computed, as the IR says)."""
        return self.b.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))

    def expr_load(self, e: ir.Load) -> ll.Value:
        """An element, or a whole line of a line array (its index counts lines)."""
        index = self.index64(e.index)
        if isinstance(e.type, ir.Line):
            index = self.b.mul(index, ll.Constant(I64, e.type.size))
        p, elem = self.element(e.array, index)
        v = self.b.load(p, typ=mtype(e.type), align=max(1, elem.bits // 8))
        return self.from_memory(v, e.type)

    def expr_metadata(self, e: ir.Len | ir.BufferLen | ir.Rank | ir.Shape | ir.Stride
                      ) -> ll.Value:
        """A length, rank, extent or stride: a launch word after the parameters."""
        key = (lo.metadata_kind(e), e.array, getattr(e, "dim", 0))
        if key not in self.meta_used:
            k = WORDS_BEFORE_PARAMS + len(self.arrays) + len(self.scalars) + len(self.meta_used)
            self.meta_used[key] = self.pre.trunc(self.word(k), I32)
        return self.meta_used[key]

    def expr_plane(self, e: ir.PlaneOp) -> ll.Value:
        """A plane is one unit: its own value (its bit for a ballot; 0 or 1 before it)."""
        v = self.expr(e.value)
        if e.lane is not None:
            self.expr(e.lane)
        if e.fn is ir.PlaneFn.BALLOT:
            return self.b.zext(v, I32)
        if e.fn is ir.PlaneFn.EXCLUSIVE_SUM:
            return self.const(0, e.type)
        if e.fn is ir.PlaneFn.EXCLUSIVE_PROD:
            return self.const(1, e.type)
        return v

    def expr_line_fill(self, e: ir.LineFill) -> ll.Value:
        """Every element the one value."""
        x = self.expr(e.x)
        v: ll.Value = ll.Constant(ltype(e.type), ll.Undefined)
        for k in range(e.type.size):
            v = self.b.insert_element(v, x, ll.Constant(I32, k))
        return v

    def expr_line_element(self, e: ir.LineElement) -> ll.Value:
        """One element of a line."""
        return self.b.extract_element(self.expr(e.x), ll.Constant(I32, e.index))

    def expr_line_make(self, e: ir.LineMake) -> ll.Value:
        """A line of its parts."""
        v: ll.Value = ll.Constant(ltype(e.type), ll.Undefined)
        for k, part in enumerate(e.parts):
            v = self.b.insert_element(v, self.expr(part), ll.Constant(I32, k))
        return v



def _truncdfhf2(module: ll.Module) -> None:
    """Define ``__truncdfhf2``, the routine LLVM calls to round an f64 to f16 (a cast, and
    an f16 ``fma``, computed in f64): compiler-rt's is not in the process, and the object
    code must need no symbol. Rounded to odd into f32, then to nearest into f16: correct,
    as f32 has more than two bits beyond f16's precision."""
    half, f32, f64 = ll.HalfType(), ll.FloatType(), ll.DoubleType()
    fn = ll.Function(module, ll.FunctionType(half, [f64]), "__truncdfhf2")
    b = ll.IRBuilder(fn.append_basic_block())
    fabs = ll.Function(module, ll.FunctionType(f64, [f64]), "llvm.fabs.f64")
    d = fn.args[0]
    f = b.fptrunc(d, f32)
    back = b.fpext(f, f64)
    exact = b.fcmp_unordered("==", back, d)  # or a NaN: nothing to round
    bits = b.bitcast(f, I32)
    away = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [d]))
    toward_zero = b.sub(bits, b.zext(away, I32))
    odd = b.or_(toward_zero, ll.Constant(I32, 1))
    r = b.select(exact, bits, odd)
    b.ret(b.fptrunc(b.bitcast(r, f32), half))
