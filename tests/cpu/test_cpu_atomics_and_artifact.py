"""The cpu backend's lowering, continued: atomics, planes, launches over several
chunks, and the artifact the lowering writes. Hand-built IR kernels run as NumPy code, against
NumPy; every test draws fresh random data, its seed in each assertion message.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np
import pytest
from helpers.cpu_ir import (
    POS,
    UNIT,
    B,
    E,
    Seeded,
    bi,
    c,
    guarded,
    if_,
    kern,
    launch,
    ld,
    load_source,
    op,
    reduction_kernel,
    source,
    st,
    u,
    v,
)

from cubecl_server import ir
from cubecl_server.backends.cpu import support
from cubecl_server.backends.cpu.compiler import PLANE_SIZE
from cubecl_server.client import create_client
from cubecl_server.conformance.kernels import IrKernel
from cubecl_server.errors import CompilationError
from cubecl_server.kernel import CubeDim


@pytest.fixture
def rng() -> Seeded:
    return Seeded()


# ---------------------------------------------------------------- atomics


def sequential_atomic(o: ir.AtomicOp, mem: np.ndarray, idx: np.ndarray, val: np.ndarray,
                      cmp: np.ndarray, active: np.ndarray) -> np.ndarray:
    """The reference: active lanes one after another in lane order."""
    old = np.zeros(idx.shape[0], mem.dtype)
    with np.errstate(all="ignore"):
        for lane in np.flatnonzero(active):
            i = idx[lane]
            if not 0 <= i < mem.shape[0]:
                continue
            cur = mem[i]
            old[lane] = cur
            mem[i] = {
                ir.AtomicOp.ADD: lambda: cur + val[lane],  # noqa: B023
                ir.AtomicOp.SUB: lambda: cur - val[lane],  # noqa: B023
                ir.AtomicOp.MAX: lambda: max(cur, val[lane]),  # noqa: B023
                ir.AtomicOp.MIN: lambda: min(cur, val[lane]),  # noqa: B023
                ir.AtomicOp.AND: lambda: cur & val[lane],  # noqa: B023
                ir.AtomicOp.OR: lambda: cur | val[lane],  # noqa: B023
                ir.AtomicOp.XOR: lambda: cur ^ val[lane],  # noqa: B023
                ir.AtomicOp.EXCHANGE: lambda: val[lane],  # noqa: B023
                ir.AtomicOp.COMPARE_EXCHANGE:
                    lambda: val[lane] if cur == cmp[lane] else cur,  # noqa: B023
            }[o]()
    return old


@pytest.mark.parametrize("keep_old", [True, False], ids=["old", "no-old"])
@pytest.mark.parametrize("addresses", [5, 700], ids=["few-hot", "many"])
@pytest.mark.parametrize(("o", "t"), [
    pytest.param(o, t, id=f"{o.name}-{t.value}") for o in ir.AtomicOp
    for t in (E.U32, E.I64, E.F32)
    if not (t.is_float and o in (ir.AtomicOp.AND, ir.AtomicOp.OR, ir.AtomicOp.XOR))])
def test_atomics_match_a_sequential_order(o: ir.AtomicOp, t: E, addresses: int,
                                          keep_old: bool, rng: Seeded) -> None:
    n = 2048
    idx = rng.gen.integers(0, addresses + 3, n).astype(np.uint32)  # some lanes outside
    if t.is_float:
        val = rng.gen.integers(-8, 8, n).astype(np.float32) * np.float32(0.375)
        cmp = rng.gen.integers(-2, 2, n).astype(np.float32) * np.float32(0.375)
        mem = rng.gen.integers(-2, 2, addresses).astype(np.float32) * np.float32(0.375)
    else:
        val = rng.ints(t, n)
        cmp = rng.gen.integers(0, 3, n).astype(t.numpy_name)
        mem = rng.gen.integers(0, 3, addresses).astype(t.numpy_name)
    active = np.arange(n) % 3 != 0
    old = np.zeros(n, t.numpy_name)
    body = [if_(op(B.NE, op(B.REM, POS, u(3)), u(0)), [
        ir.AtomicStmt(o, "mem", ld("idx", POS, E.U32), ld("val", POS, t),
                      ld("cmp", POS, t) if o is ir.AtomicOp.COMPARE_EXCHANGE else None,
                      "r" if keep_old else None),
        st("old", POS, v("r", t))])]
    k = kern(body, [("mem", f"{t.value}[]"), ("idx", "u32[]"), ("val", f"{t.value}[]"),
                    ("cmp", f"{t.value}[]"), ("old", f"{t.value}[]")], [("r", t)])
    want_mem = mem.copy()
    want_old = sequential_atomic(o, want_mem, idx, val, cmp, active)
    launch(k, [mem, idx, val, cmp, old], count=(n // 64, 1, 1))
    np.testing.assert_array_equal(mem, want_mem, f"{o} {t} {rng}")
    np.testing.assert_array_equal(old, want_old if keep_old else 0, f"{o} {t} {rng}")


def test_histogram_in_shared_memory(rng: Seeded) -> None:
    n, bins, dim = 5000, 16, 256
    data = rng.gen.integers(0, bins, n).astype(np.uint32)
    hist = np.zeros(bins, np.uint32)
    cubes = -(-n // dim)
    body = [
        if_(op(B.LT, UNIT, u(bins)), [st("local", UNIT, u(0))]),
        ir.Barrier(),
        if_(op(B.LT, POS, ir.Len("data")),
            [ir.AtomicStmt(ir.AtomicOp.ADD, "local", ld("data", POS, E.U32), u(1), None, None)]),
        ir.Barrier(),
        if_(op(B.LT, UNIT, u(bins)),
            [ir.AtomicStmt(ir.AtomicOp.ADD, "hist", UNIT, ld("local", UNIT, E.U32), None,
                           None)]),
    ]
    k = kern(body, [("data", "u32[]"), ("hist", "u32[]")], shared=[("local", E.U32, bins)])
    launch(k, [data, hist], count=(cubes, 1, 1), dim=(dim, 1, 1))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=bins), str(rng))


# ---------------------------------------------------------------- planes


def test_plane_ops_over_active_lanes(rng: Seeded) -> None:
    dim, cubes = 80, 3  # planes of 32, 32 and a short one of 16 in each cube
    n = dim * cubes
    a = rng.gen.integers(-100, 100, n).astype(np.int32)
    f = rng.gen.standard_normal(n).astype(np.float32)
    sums, maxes = np.zeros(n, np.int32), np.full(n, -9, np.float32)
    bcast, uni = np.zeros(n, np.int32), np.zeros(n, np.int32)
    lane3 = u(3)
    body = [
        st("bcast", POS, ir.PlaneOp(ir.PlaneFn.BROADCAST, ld("a", POS, E.I32), lane3, E.I32)),
        st("uni", POS, ir.PlaneOp(ir.PlaneFn.SUM, c(2, E.I32), None, E.I32)),
        if_(op(B.GT, ld("a", POS, E.I32), c(0, E.I32)), [
            st("sums", POS, ir.PlaneOp(ir.PlaneFn.SUM, ld("a", POS, E.I32), None, E.I32)),
            st("maxes", POS, ir.PlaneOp(ir.PlaneFn.MAX, ld("f", POS, E.F32), None, E.F32)),
        ]),
    ]
    k = kern(body, [("a", "i32[]"), ("f", "f32[]"), ("sums", "i32[]"), ("maxes", "f32[]"),
                    ("bcast", "i32[]"), ("uni", "i32[]")])
    launch(k, [a, f, sums, maxes, bcast, uni], count=(cubes, 1, 1), dim=(dim, 1, 1))
    for lane in range(n):
        cube, unit = divmod(lane, dim)
        first = cube * dim + unit // PLANE_SIZE * PLANE_SIZE
        plane = np.arange(first, min(first + PLANE_SIZE, (cube + 1) * dim))
        active = plane[a[plane] > 0]
        assert bcast[lane] == a[first + 3], (lane, rng)
        assert uni[lane] == 2 * plane.size, lane
        if a[lane] > 0:
            assert sums[lane] == a[active].sum(), (lane, rng)
            assert maxes[lane] == f[active].max(), (lane, rng)
        else:
            assert sums[lane] == 0 and maxes[lane] == -9, lane


# ---------------------------------------------------------------- chunks


def test_several_chunks(monkeypatch: pytest.MonkeyPatch, rng: Seeded) -> None:
    monkeypatch.setattr(support, "MAX_LANES", 256)
    n, size = 5000, 64
    a = rng.gen.integers(-1000, 1000, n).astype(np.int64)
    cubes = -(-n // size)
    out = np.zeros(cubes, np.int64)
    launch(reduction_kernel(E.I64, size), [a, out], count=(cubes, 1, 1), dim=(size, 1, 1))
    padded = np.zeros(cubes * size, np.int64)
    padded[:n] = a
    np.testing.assert_array_equal(out, padded.reshape(cubes, size).sum(axis=1), str(rng))
    cp = np.zeros(cubes * size, np.uint32)
    launch(kern([st("cp", POS, bi("CUBE_POS"))], [("cp", "u32[]")]), [cp], dim=(size, 1, 1))
    np.testing.assert_array_equal(cp, np.arange(cp.size) // size)


def test_a_launch_bigger_than_one_chunk(rng: Seeded) -> None:
    n = support.MAX_LANES * 2 + 1000
    a = rng.gen.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    k = kern([guarded("out", st("out", POS, op(B.MUL, ld("a", POS, E.F32), c(3.0, E.F32))))],
             [("a", "f32[]"), ("out", "f32[]")])
    launch(k, [a, out], dim=(256, 1, 1))
    np.testing.assert_array_equal(out, a * np.float32(3), str(rng))


# ---------------------------------------------------------------- the artifact


def test_source_imports_only_numpy_and_support() -> None:
    src = source(reduction_kernel(E.F32, 64))
    tree = ast.parse(src)
    imports = [ast.unparse(n) for n in ast.walk(tree)
               if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["import numpy as np",
                       "from cubecl_server.backends.cpu import support as _s"]
    funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert funcs == ["run"]
    assert "# tile[UNIT_POS] = a[ABSOLUTE_POS]" in src  # a comment per core IR statement


def test_validated_source_runs_in_a_namespace_without_builtins() -> None:
    run = load_source(source(reduction_kernel(E.F32, 64)))
    assert run.run.__globals__["__builtins__"] == {}
    a, out = np.ones(64, np.float32), np.zeros(1, np.float32)
    run([a, out], [(64,), (1,)], [(1,), (1,)], [], (1, 1, 1), (64, 1, 1))
    assert out[0] == 64


def test_wrong_cube_dim_is_refused() -> None:
    ns: dict[str, Any] = {}
    exec(compile(source(reduction_kernel(E.F32, 64)), "<cpu>", "exec"), ns)
    with pytest.raises(ValueError, match="cube dim"):
        ns["run"]([np.ones(4, np.float32), np.ones(1, np.float32)], [(4,), (1,)],
                  [(1,), (1,)], [], (1, 1, 1), (32, 1, 1))


@pytest.mark.parametrize("body,params,local,message", [
    ([st("out", POS, op(B.DIV, v("n", E.I32), v("n", E.I32)))], [("out", "i32[]"), ("n", "i32")],
     [], "'/' takes floats, not i32, in `(n / n)`"),
    ([st("nowhere", POS, c(1, E.I32))], [("out", "i32[]")], [],
     "'nowhere' is not an array parameter, a shared array or a local array, in "
     "`nowhere[ABSOLUTE_POS] = 1:i32`"),
    ([ir.Break()], [("out", "i32[]")], [], "`break` outside a loop, in `break`"),
    ([ir.Assign("ghost", c(1, E.I32))], [("out", "i32[]")], [],
     "'ghost' is not a declared local: only declared locals are assigned, in `ghost = 1:i32`"),
    ([ir.Assign("x", c(1.0, E.F32))], [("out", "i32[]")], [("x", E.I32)],
     "the value is f32, but local 'x' is i32, in `x = 1.0:f32`"),
    ([st("out", POS, ir.Math(ir.MathFn.EXP, (c(1, E.I32),), E.I32))], [("out", "i32[]")], [],
     "'exp' takes floats, not i32, in `exp(1:i32)`"),
])
def test_ill_typed_ir_is_refused_before_lowering(body: list[ir.Stmt],
                                                 params: list[tuple[str, str]],
                                                 local: list[tuple[str, E]],
                                                 message: str) -> None:
    """The loader checks the IR (cubecl_server.ir_check) before the cpu backend lowers it."""
    k = kern(body, params, local, name="bad")
    with pytest.raises(CompilationError) as err:
        create_client("cpu").prepare(IrKernel(k), CubeDim(64))  # type: ignore[arg-type]
    assert err.value.kernel == "bad" and err.value.backend == "cpu"
    assert err.value.message == message


def test_a_local_holds_a_view_only_while_nothing_writes_memory(rng: Seeded) -> None:
    """A checked load's local (the checked pass's) reads the array in place: nothing
    is stored before the statement that reads it. A local read after a store to the
    array it came from holds a copy, so it keeps the value it was assigned."""
    n = 256
    a = rng.gen.standard_normal(n).astype(np.float32)
    k = kern([st("out", POS, op(B.ADD, ld("a", POS, E.F32), ld("b", POS, E.F32)))],
             [("a", "f32[]"), ("b", "f32[]"), ("out", "f32[]")])
    assert "_s.view_pos(p_a, g)" in source(k) and "load_pos" not in source(k)
    x = v("x", E.F32)
    k = kern([ir.Assign("x", ld("a", POS, E.F32)), st("a", POS, c(7.0, E.F32)),
              st("out", POS, x)], [("a", "f32[]"), ("out", "f32[]")], local=[("x", E.F32)])
    assert "_s.load_pos(p_a, g)" in source(k), "the store to a comes before x is read"
    arr, out = a.copy(), np.zeros(n, np.float32)
    launch(k, [arr, out])
    np.testing.assert_array_equal(out, a, str(rng))
    assert (arr == 7.0).all()
