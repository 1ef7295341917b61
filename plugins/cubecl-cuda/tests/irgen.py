"""IR kernels that, together, use every operation of ``cubecl_server.ir`` on every type
it allows (each passes the core's checker, as every kernel a backend lowers does).

Built directly as IR (not through the kernel language) so each node the backend must
lower is named here once: :func:`ops_kernel` covers the expressions, stores and
atomics of one element type, :func:`control_kernel` the statements, shared memory,
barriers and every builtin.
"""

from __future__ import annotations

from cubecl_server import ir

E = ir.Elem
NUMERIC = (E.F16, E.F32, E.F64, E.I32, E.I64, E.U32, E.U64)
ALL = (*NUMERIC, E.BOOL)
POS = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)


def c(value: int | float | bool, elem: ir.Elem) -> ir.Const:
    """A constant."""
    return ir.Const(value, elem)


def load(array: str, elem: ir.Elem, index: ir.Expr = POS) -> ir.Load:
    """``array[index]``."""
    return ir.Load(array, index, elem)


def _binary_ops(t: ir.Elem) -> list[ir.BinOp]:
    b = ir.BinOp
    if t is E.BOOL:
        return [b.AND, b.OR]
    ops = [b.ADD, b.SUB, b.MUL, b.REM]
    if t.is_float:
        ops.append(b.DIV)
    else:
        ops += [b.IDIV, b.BITAND, b.BITOR, b.BITXOR, b.SHL, b.SHR]
    return ops


def _math(t: ir.Elem, x: ir.Expr, y: ir.Expr, z: ir.Expr) -> list[ir.Math]:
    m = ir.MathFn
    out = [ir.Math(m.ABS, (x,), t), ir.Math(m.MIN, (x, y), t), ir.Math(m.MAX, (x, y), t),
           ir.Math(m.CLAMP, (x, y, z), t)]
    if t.is_float:
        out += [ir.Math(fn, (x,), t) for fn in (m.EXP, m.LOG, m.SQRT, m.RSQRT, m.SIN, m.COS,
                                                m.TANH, m.ERF, m.FLOOR, m.CEIL)]
        out += [ir.Math(m.POW, (x, y), t), ir.Math(m.FMA, (x, y, z), t)]
    return out


def ops_kernel(t: ir.Elem) -> ir.Kernel:
    """Every expression, store, plane operation and atomic the IR allows on ``t``."""
    x, y = load("a", t), load("b", t, ir.Binary(ir.BinOp.ADD, POS, c(1, E.U32), E.U32))
    z = ir.Var("s", t)
    body: list[ir.Stmt] = []
    values: list[ir.Expr] = [ir.Binary(op, x, y, t) for op in _binary_ops(t)]
    compare = [ir.BinOp.EQ, ir.BinOp.NE]
    if t is not E.BOOL:
        compare += [ir.BinOp.LT, ir.BinOp.LE, ir.BinOp.GT, ir.BinOp.GE]
    flags = [ir.Binary(op, x, y, E.BOOL) for op in compare]
    if t is E.BOOL:
        values.append(ir.Unary(ir.UnOp.NOT, x, t))
    else:
        values.append(ir.Unary(ir.UnOp.NEG, x, t))
        if t.is_int:
            values.append(ir.Unary(ir.UnOp.BITNOT, x, t))
        values += _math(t, x, y, z)
        if t.is_float:
            flags += [ir.Math(fn, (x,), E.BOOL) for fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF)]
        values += [ir.PlaneOp(ir.PlaneFn.SUM, x, None, t), ir.PlaneOp(ir.PlaneFn.MAX, x, None, t)]
    values.append(ir.PlaneOp(ir.PlaneFn.BROADCAST, x, c(3, E.U32), t))
    values.append(ir.Select(load("flags", E.BOOL), x, z, t))
    values += [c(v, t) for v in _constants(t)]
    for k, v in enumerate(values):
        idx = ir.Binary(ir.BinOp.ADD, POS, c(k * 1024, E.U32), E.U32)
        body.append(ir.Store("out", idx, v))
    for k, f in enumerate(flags):
        body.append(ir.Store("flags", ir.Binary(ir.BinOp.ADD, POS, c(k, E.U32), E.U32), f))
    for dst in ALL:
        body.append(ir.Store(f"cast_{dst.value}", POS, ir.Cast(x, dst)))
    params = [ir.Param("a", t, True), ir.Param("b", t, True), ir.Param("out", t, True),
              ir.Param("flags", E.BOOL, True), ir.Param("s", t, False),
              *[ir.Param(f"cast_{d.value}", d, True) for d in ALL]]
    locals_ = [ir.Local("r", t)]
    if t.is_int or t is E.F32:
        for op in ir.AtomicOp if t.is_int else (ir.AtomicOp.ADD,):
            cmp = y if op is ir.AtomicOp.COMPARE_EXCHANGE else None
            body.append(ir.AtomicStmt(op, "out", POS, x, cmp, "r"))
            body.append(ir.AtomicStmt(op, "out", c(0, E.I32), z, cmp, None))
        body.append(ir.Store("a", POS, ir.Var("r", t)))
    # Back-casts: every type to t, read from the cast arrays.
    for src in ALL:
        body.append(ir.Store("b", POS, ir.Cast(load(f"cast_{src.value}", src), t)))
    body += [ir.Store("cast_u32", POS, ir.Len("out")),
             ir.Store("cast_u32", c(1, E.I64), ir.Shape("out", 0)),
             ir.Store("cast_u32", c(2, E.U64), ir.Shape("out", 3)),
             ir.Store("cast_u32", c(-1, E.I32), ir.Stride("out", 0))]
    return ir.Kernel(f"ops_{t.value}", tuple(params), tuple(locals_), (), tuple(body))


def _constants(t: ir.Elem) -> list[int | float | bool]:
    if t is E.BOOL:
        return [True, False]
    if t.is_float:
        return [0.1, -2.5, float("inf"), float("-inf"), float("nan"), 1e-300, 65504.0]
    lo = -(1 << (t.bits - 1)) if t.is_signed else 0
    return [lo, (1 << (t.bits - 1 if t.is_signed else t.bits)) - 1, 7]


def control_kernel() -> ir.Kernel:
    """Every statement: if/else, for (up, down, unrolled, signed and unsigned), while,
    break, continue, return, barriers, shared memory (with atomics), every builtin."""
    u, i = E.U32, E.I32
    acc, k, j, w = ir.Var("acc", i), ir.Var("k", i), ir.Var("j", u), ir.Var("w", i)
    builtins = [ir.Builtin(n) for n in ir.BuiltinName]
    total = builtins[0]
    for b in builtins[1:]:
        total = ir.Binary(ir.BinOp.BITXOR, total, b, u)
    unit = ir.Builtin(ir.BuiltinName.UNIT_POS)
    body: tuple[ir.Stmt, ...] = (
        ir.Assign("acc", c(0, i)),
        ir.Store("tile", unit, ir.Cast(unit, E.F32)),
        ir.Barrier(),
        ir.AtomicStmt(ir.AtomicOp.ADD, "counts", c(0, u), c(1, i), None, "old"),
        ir.AtomicStmt(ir.AtomicOp.COMPARE_EXCHANGE, "counts", c(1, u), c(5, i), c(0, i), None),
        ir.For("k", c(0, i), ir.Cast(ir.Var("n", u), i), c(1, i), (
            ir.If(ir.Binary(ir.BinOp.EQ, ir.Binary(ir.BinOp.REM, k, c(3, i), i), c(0, i),
                            E.BOOL), (ir.Continue(),), ()),
            ir.If(ir.Binary(ir.BinOp.GT, k, c(100, i), E.BOOL), (ir.Break(),), ()),
            ir.Assign("acc", ir.Binary(ir.BinOp.ADD, acc, k, i)),
            ir.Assign("k", c(1000, i)),  # does not change the trip count
        )),
        ir.For("j", c(0, u), c(8, u), c(2, u), (
            ir.Assign("acc", ir.Binary(ir.BinOp.SUB, acc, ir.Cast(j, i), i)),), unroll=True),
        ir.For("k", c(10, i), c(-10, i), c(-3, i), (
            ir.Assign("acc", ir.Binary(ir.BinOp.MUL, acc, k, i)),)),
        ir.Assign("w", c(0, i)),
        ir.While(ir.Binary(ir.BinOp.LT, w, c(10, i), E.BOOL), (
            ir.Assign("w", ir.Binary(ir.BinOp.ADD, w, c(1, i), i)),
            ir.If(ir.Binary(ir.BinOp.EQ, w, c(5, i), E.BOOL), (ir.Continue(),),
                  (ir.Assign("acc", ir.Binary(ir.BinOp.BITXOR, acc, w, i)),)),
            ir.If(ir.Binary(ir.BinOp.GE, acc, c(1 << 20, i), E.BOOL), (ir.Break(),), ()),
        )),
        ir.If(ir.Binary(ir.BinOp.GE, ir.Builtin(ir.BuiltinName.ABSOLUTE_POS),
                        ir.Len("out"), E.BOOL), (ir.Return(),), ()),
        ir.Store("out", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS),
                 ir.Binary(ir.BinOp.ADD, acc, ir.Cast(total, i), i)),
        ir.Store("tile", c(0, u), ir.Load("tile", ir.Binary(
            ir.BinOp.SUB, ir.Builtin(ir.BuiltinName.CUBE_DIM), unit, u), E.F32)),
        ir.AtomicStmt(ir.AtomicOp.ADD, "tile", c(3, u), c(2.0, E.F32), None, None),
        ir.Barrier(),
    )
    return ir.Kernel(
        "control", (ir.Param("out", i, True), ir.Param("counts", i, True),
                    ir.Param("n", u, False)),
        (ir.Local("acc", i), ir.Local("k", i), ir.Local("j", u), ir.Local("w", i),
         ir.Local("old", i)),
        (ir.SharedArray("tile", E.F32, 256), ir.SharedArray("half", E.F16, 1)),
        body)


def keyword_kernel() -> ir.Kernel:
    """Names that are C++ keywords or CUDA built-ins, and one not an identifier in C++."""
    t = E.F32
    body = (ir.Assign("int", ir.Load("float", POS, t)),
            ir.Assign("threadIdx", ir.Binary(ir.BinOp.ADD, ir.Var("int", t),
                                             ir.Var("return", t), t)),
            ir.Store("class", POS, ir.Var("threadIdx", t)))
    return ir.Kernel("template", (ir.Param("float", t, True), ir.Param("class", t, True),
                                  ir.Param("return", t, False)),
                     (ir.Local("int", t), ir.Local("threadIdx", t)), (), body)
