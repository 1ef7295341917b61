"""The core's shared lowering (``cubecl_server.lowering``): naming, helper collection,
and the C-family emitter, here with a C99 dialect of about forty lines, built with the
system C compiler and run unit by unit against the IR's semantics (``docs/ir.md``)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.backend import CompilationError, CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backend.lowering import ArrayRef, CEmitter, StandardC
from cubecl_server.lowering import mangle

E = ir.Elem
B = ir.BuiltinName
POS = ir.Builtin(B.ABSOLUTE_POS)
CHECKED, UNCHECKED = ExecutionMode.CHECKED, ExecutionMode.UNCHECKED
_GRID = (B.UNIT_POS_X, B.UNIT_POS_Y, B.UNIT_POS_Z, B.CUBE_POS_X, B.CUBE_POS_Y, B.CUBE_POS_Z,
         B.CUBE_COUNT_X, B.CUBE_COUNT_Y, B.CUBE_COUNT_Z)


class C99(StandardC):
    """Plain C99 (no address spaces), one unit per call: the caller loops over the units
    of one cube, so there is no barrier and every read-modify-write is atomic."""

    backend = "c99"

    def builtin(self, e: CEmitter, name: ir.BuiltinName) -> str | None:
        """From the grid array the caller passes; the rest derived."""
        return f"grid[{_GRID.index(name)}]" if name in _GRID else None

    def atomic(self, e: CEmitter, op: ir.AtomicOp, array: ArrayRef, element: str,
               operands: list[str]) -> str:
        """Add, as a helper: the old value, then the wrapping sum."""
        t, name = e.ctype(array.elem), f"cc_atomic_add_{array.elem.value}"
        e.helper(name, lambda: e.function(t, name, [(f"{t}*", "p"), (t, "v")], [
            f"const {t} old = *p;", f"*p = {e.wrap('+', 'old', 'v', array.elem)};",
            "return old;"]))
        return f"{name}(&{element}, {operands[0]})"

    def head(self, e: CEmitter) -> list[str]:
        """C99's headers."""
        return ["#include <stdbool.h>", "#include <stdint.h>", "#include <math.h>"]

    def signature(self, e: CEmitter) -> str:
        """The grid, the arrays, the scalars, then the metadata the body reads."""
        params = ["const uint32_t* grid"]
        params += [f"{e.mtype(p.elem)}* p_{e.stems[p.name]}" for p in e.arrays.values()]
        params += [f"{e.ctype(p.elem)} p_{e.stems[p.name]}" for p in e.scalars.values()]
        params += [f"uint32_t {text}" for text in e.meta_used.values()]
        return f"void {e.ident}({', '.join(params)})"

    def prologue(self, e: CEmitter) -> None:
        """Nothing to unpack."""


_CTYPES = {E.F32: ctypes.c_float, E.F64: ctypes.c_double, E.I32: ctypes.c_int32,
           E.I64: ctypes.c_int64, E.U32: ctypes.c_uint32, E.U64: ctypes.c_uint64}


def lower(kernel: ir.Kernel, mode: ExecutionMode = CHECKED, units: int = 8,
          dialect: StandardC | None = None) -> tuple[CEmitter, str]:
    """The emitter that lowered ``kernel``, and the program."""
    e = CEmitter(kernel, CubeDim(units), mode, dialect or C99())
    return e, e.program()


def run(tmp: Path, kernel: ir.Kernel, arrays: list[np.ndarray], scalars: tuple[int, ...] = (),
        units: int = 8, mode: ExecutionMode = CHECKED) -> None:
    """Build ``kernel`` with the system C compiler and run the ``units`` units of one
    cube over ``arrays`` (written in place)."""
    e, source = lower(kernel, mode, units)
    src, lib = tmp / f"{kernel.name}.c", tmp / f"{kernel.name}.so"
    src.write_text(source)
    build = subprocess.run(["cc", "-std=c99", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
                            "-Wno-unused", "-o", str(lib), str(src), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr + source
    fn = getattr(ctypes.CDLL(str(lib)), e.ident)
    sizes = {p.name: a.size for p, a in zip(e.arrays.values(), arrays, strict=True)}
    args: list[object] = [None, *(a.ctypes.data_as(ctypes.c_void_p) for a in arrays)]
    args += [_CTYPES[p.elem](v) for p, v in zip(e.scalars.values(), scalars, strict=True)]
    args += [ctypes.c_uint32(sizes[a] if kind in ("len", "buffer_len") else 1)
             for kind, a, _ in e.meta_used]
    for u in range(units):
        args[0] = (ctypes.c_uint32 * 9)(u, 0, 0, 0, 0, 0, 1, 1, 1)
        fn(*args)


needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


def c(value: int | float | bool, t: ir.Elem) -> ir.Const:
    """A constant."""
    return ir.Const(value, t)


def v(name: str, t: ir.Elem) -> ir.Var:
    """A variable."""
    return ir.Var(name, t)


def op(o: ir.BinOp, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    """``a o b``."""
    logical = o.is_comparison or o in (ir.BinOp.AND, ir.BinOp.OR)
    return ir.Binary(o, a, b, E.BOOL if logical else a.type)


def load(array: str, t: ir.Elem, index: ir.Expr = POS) -> ir.Load:
    """``array[index]``."""
    return ir.Load(array, index, t)


def test_mangle_is_one_safe_scheme() -> None:
    assert mangle("x") == "x"
    assert mangle("a__b") == "a_b"  # GLSL reserves double underscores
    assert mangle("_x_") == "x"
    assert mangle("été") == "t"
    assert mangle("__") == "x"


def test_names_are_unique_and_prefixed() -> None:
    params = (ir.Param("float", E.F32, True), ir.Param("x_", E.I32, False),
              ir.Param("x", E.I32, False))
    k = ir.Kernel("names", params, (ir.Local("gl_x", E.I32), ir.Local("é", E.I32)), (),
                  (ir.Store("float", POS, ir.Cast(op(ir.BinOp.ADD, v("x", E.I32),
                                                       v("x_", E.I32)), E.F32)),))
    e, source = lower(k)
    named = ("float", "x_", "x", "gl_x", "é")  # the kernel's (the passes add their own)
    assert {n: e.stems[n] for n in named} == {
        "float": "float", "x_": "x", "x": "x_2", "gl_x": "gl_x", "é": "x_3"}
    assert len(set(e.stems.values())) == len(e.stems)
    assert "p_float[" in source and "l_gl_x" in source and "l_x_3" in source


def test_helpers_are_emitted_once_in_order_of_first_use() -> None:
    x, f = v("x", E.U32), v("f", E.F32)
    k = ir.Kernel("helpers", (ir.Param("out", E.U32, True),),
                  (ir.Local("x", E.U32), ir.Local("f", E.F32)), (), (
        ir.Assign("x", ir.Bitcast(f, E.U32)),
        ir.Assign("f", ir.Bitcast(x, E.F32)),
        ir.Store("out", POS, ir.Bitcast(ir.Bitcast(x, E.F32), E.U32))))
    e, source = lower(k)
    assert list(e.helpers) == ["cc_bitcast_f32_u32", "cc_bitcast_u32_f32"]
    assert source.count("uint32_t cc_bitcast_f32_u32(") == 1
    assert source.index("cc_bitcast_f32_u32(") < source.index("cc_bitcast_u32_f32(")


def test_a_dialect_refuses_what_it_lacks() -> None:
    k = ir.Kernel("half", (ir.Param("a", E.F16, True),), (), (), ())
    with pytest.raises(CompilationError, match="parameter 'a' is f16, which the c99 backend"):
        lower(k)
    k = ir.Kernel("planes", (ir.Param("a", E.F32, True),), (), (), (
        ir.Store("a", POS, ir.PlaneOp(ir.PlaneFn.SUM, load("a", E.F32), None, E.F32)),))
    with pytest.raises(CompilationError, match="plane_sum needs plane operations"):
        lower(k)


def test_select_evaluates_a_plane_operation_in_every_unit() -> None:
    """A select side holding a plane operation is computed before the select (the
    passes' doing), so C's ``?:`` cannot skip it in some units."""

    class Planes(C99):
        def plane(self, e: CEmitter, fn: ir.PlaneFn, value: str, lane: str | None,
                  t: ir.Elem) -> str:
            return f"sum({value})"

    a = load("a", E.F32)
    k = ir.Kernel("sel", (ir.Param("a", E.F32, True),), (), (), (
        ir.Store("a", POS, ir.Select(op(ir.BinOp.GT, a, c(0.0, E.F32)), a, a, E.F32)),
        ir.Store("a", POS, ir.Select(op(ir.BinOp.GT, a, c(0.0, E.F32)),
                                     ir.PlaneOp(ir.PlaneFn.SUM, a, None, E.F32), a, E.F32))))
    body = lower(k, dialect=Planes())[1].split("\n")
    selects = [line for line in body if " ? " in line]
    assert len(selects) == 2 and not any("sum(" in line for line in selects)
    summed = next(i for i, line in enumerate(body) if "= sum(" in line)
    assert summed < body.index(selects[1]), "the plane operation is computed first"


@needs_cc
def test_integer_semantics_are_the_irs(tmp_path: Path) -> None:
    """Wrapping arithmetic, C division and remainder, 0 for a division by zero,
    ``MIN // -1`` and ``MIN % -1``, shifts modulo the width, wrapping abs and negation."""
    lo = -(1 << 31)
    a = np.array([lo, lo, 7, -7, 7, -7, 5, 2**31 - 1], np.int32)
    b = np.array([-1, 0, 2, 2, -2, 0, 33, 1], np.int32)
    ops = [ir.BinOp.IDIV, ir.BinOp.REM, ir.BinOp.ADD, ir.BinOp.MUL, ir.BinOp.SHL,
           ir.BinOp.SHR]
    x, y = load("a", E.I32), load("b", E.I32)
    values = [op(o, x, y) for o in ops]
    values += [ir.Math(ir.MathFn.ABS, (x,), E.I32), ir.Unary(ir.UnOp.NEG, x, E.I32)]
    outs = [np.zeros(8, np.int32) for _ in values]
    k = ir.Kernel("ints", (ir.Param("a", E.I32, True), ir.Param("b", E.I32, True),
                           *(ir.Param(f"o{i}", E.I32, True) for i in range(len(values)))),
                  (), (), tuple(ir.Store(f"o{i}", POS, e) for i, e in enumerate(values)))
    run(tmp_path, k, [a, b, *outs])

    def wrap(n: int) -> int:
        return (n + (1 << 31)) % (1 << 32) - (1 << 31)

    def div(p: int, q: int) -> int:
        return 0 if q == 0 else wrap(abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1))

    for i, (p, q) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        want = [div(p, q), 0 if q == 0 else wrap(p - div(p, q) * q), wrap(p + q), wrap(p * q),
                wrap(p << (q & 31)), p >> (q & 31), wrap(abs(p)), wrap(-p)]
        assert [int(o[i]) for o in outs] == want, (p, q)


@needs_cc
def test_for_has_pythons_trip_count_at_the_ends_of_the_type(tmp_path: Path) -> None:
    """A step longer than one never wraps past ``stop`` into extra iterations, and
    ``continue`` still steps."""
    cases = [(E.U32, 0xFFFF_FFF0, 0xFFFF_FFFF, 4), (E.I32, 2**31 - 50, 2**31 - 1, 20),
             (E.I32, -(2**31) + 8, -(2**31), -3), (E.U32, 10, 3, 1), (E.I32, 5, -5, -1)]
    out = np.zeros(2 * len(cases), np.int64)
    body: list[ir.Stmt] = []
    for i, (t, start, stop, step) in enumerate(cases):
        n, s, var = v("n", E.I64), v("s", E.I64), f"k{i}"
        body += [ir.Assign("n", c(0, E.I64)), ir.Assign("s", c(0, E.I64)),
                 ir.For(var, c(start, t), c(stop, t), c(step, t), (
                     ir.Assign("n", op(ir.BinOp.ADD, n, c(1, E.I64))),
                     ir.If(op(ir.BinOp.EQ, n, c(2, E.I64)), (ir.Continue(),), ()),
                     ir.Assign("s", op(ir.BinOp.ADD, s, ir.Cast(v(var, t), E.I64))))),
                 ir.Store("out", c(2 * i, E.U32), n), ir.Store("out", c(2 * i + 1, E.U32), s)]
    locals_ = (ir.Local("n", E.I64), ir.Local("s", E.I64),
               *(ir.Local(f"k{i}", t) for i, (t, *_) in enumerate(cases)))
    k = ir.Kernel("loops", (ir.Param("out", E.I64, True),), locals_, (), tuple(body))
    run(tmp_path, k, [out], units=1)
    for i, (_, start, stop, step) in enumerate(cases):
        r = range(start, stop, step)
        assert out[2 * i] == len(r), (start, stop, step)
        assert out[2 * i + 1] == sum(r) - (r[1] if len(r) > 1 else 0), (start, stop, step)


@needs_cc
def test_checked_memory_and_short_circuit(tmp_path: Path) -> None:
    """Checked: a load outside reads 0, a store outside is dropped, an atomic outside
    does nothing and reads 0; ``and`` decides where its left side is false."""
    a = np.arange(1, 5, dtype=np.float32)  # 4 elements, 8 units
    out, dst = np.full(8, -1.0, np.float32), np.zeros(4, np.int32)
    old, counts, flags = np.full(8, -1, np.int32), np.array([10, 20], np.int32), np.zeros(8, bool)
    i = ir.Cast(POS, E.I32)
    back = op(ir.BinOp.SUB, c(5, E.I32), i)  # 5 - i: 5 and 4 are outside a, so are negatives
    params = [ir.Param(n, t, True) for n, t in (("a", E.F32), ("out", E.F32), ("dst", E.I32),
                                                 ("old", E.I32), ("counts", E.I32),
                                                 ("flags", E.BOOL))]
    k = ir.Kernel("checked", tuple(params), (ir.Local("r", E.I32),), (), (
        ir.Store("out", POS, load("a", E.F32, back)),
        ir.Store("dst", back, i),
        ir.AtomicStmt(ir.AtomicOp.ADD, "counts", op(ir.BinOp.SUB, i, c(6, E.I32)),
                      c(1, E.I32), None, "r"),
        ir.Store("old", POS, v("r", E.I32)),
        ir.Store("flags", POS, op(ir.BinOp.AND, op(ir.BinOp.LT, POS, ir.Len("a")),
                                  op(ir.BinOp.GT, load("a", E.F32), c(2.0, E.F32))))))
    run(tmp_path, k, [a, out, dst, old, counts, flags])
    np.testing.assert_array_equal(out, [0, 0, 4, 3, 2, 1, 0, 0])
    np.testing.assert_array_equal(dst, [5, 4, 3, 2])
    assert counts.tolist() == [11, 21] and old.tolist() == [0] * 6 + [10, 20]
    np.testing.assert_array_equal(flags, [False, False, True, True] + [False] * 4)


def test_an_emitter_names_the_arrays_atomics_act_on() -> None:
    """What a target whose atomics need an atomic type declares so (WGSL's
    ``array<atomic<u32>>``): the arrays of the core IR's atomics, and no other."""
    params = (ir.Param("count", E.U32, True), ir.Param("plain", E.U32, True))
    body = (ir.AtomicStmt(ir.AtomicOp.ADD, "count", ir.Const(0, E.U32), ir.Const(1, E.U32),
                          None, None),
            ir.Store("plain", POS, ir.Const(2, E.U32)))
    e, _ = lower(ir.Kernel("atomics", params, (), (), body))
    assert e.atomic_arrays == {"count"}
