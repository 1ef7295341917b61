"""IR-level tests of the full kernel language: shared memory, barriers and the
uniformity rule, atomics, comptime dtypes and unrolling, @cube_fn helpers, plane ops,
shapes and strides, and the launch-time TypeErrors. Every error is checked with the
line it points at (lines are found by a ``# <tag>`` comment)."""

# Kernel bodies are compiled, never run: locals that look unused to a linter are the
# IR under test.
# ruff: noqa: F841, B007

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.client import create_client
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_DIM,
    CUBE_POS,
    PLANE_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    KernelOnlyError,
    TypeRef,
    atomic_add,
    atomic_compare_exchange,
    atomic_exchange,
    atomic_max,
    atomic_min,
    atomic_sub,
    bool_,
    clamp,
    cube_fn,
    dtype,
    erf,
    f16,
    f32,
    f64,
    i32,
    i64,
    isinf,
    isnan,
    kernel,
    kernel_signature,
    parse_kernel,
    plane_broadcast,
    plane_max,
    plane_sum,
    rsqrt,
    select,
    shared,
    sync_cube,
    u32,
    u64,
)

E = ir.Elem
C = ir.Const
V = ir.Var


def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


def error(fn: Callable[..., Any], comptime: dict[str, object] | None = None
          ) -> KernelSyntaxError:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, comptime or {})
    assert info.value.file == __file__
    return info.value


def nodes(k: ir.Kernel, cls: type) -> list[Any]:
    return [n for n in ir.walk(k.body) if isinstance(n, cls)]


# ---------------------------------------------------------------- shared memory


def k_shared(x: Array[f32], *, N: Comptime[int]) -> None:
    tile = shared(f32, N * 2)
    tile[UNIT_POS] = x[ABSOLUTE_POS]
    sync_cube()
    x[ABSOLUTE_POS] = tile[N * 2 - 1 - UNIT_POS] + f32(len(tile))


def test_shared_array_is_declared_and_indexed() -> None:
    k = parse_kernel(k_shared, {"N": 8})
    assert k.shared == (ir.SharedArray("tile", E.F32, 16),)
    assert "tile" not in {loc.name for loc in k.locals}
    store, barrier, last = k.body
    assert store == ir.Store("tile", ir.Builtin(ir.BuiltinName.UNIT_POS),
                             ir.Load("x", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), E.F32))
    assert barrier == ir.Barrier()
    assert isinstance(last, ir.Store) and ir.Load("tile", last.value.lhs.index, E.F32) == \
        last.value.lhs
    # len() of a shared array is its constant size.
    assert last.value.rhs == C(16.0, E.F32)
    assert parse_kernel(k_shared, {"N": 4}).digest != k.digest


def k_shared_size_runtime(x: Array[f32], n: u32) -> None:
    tile = shared(f32, n)  # <shared-size>


def k_shared_size_zero(x: Array[f32]) -> None:
    tile = shared(f32, 0)  # <shared-zero>


def k_shared_twice(x: Array[f32]) -> None:
    tile = shared(f32, 4)
    tile = shared(f32, 8)  # <shared-twice>


def k_shared_divergent(x: Array[f32]) -> None:
    if UNIT_POS < 4:  # <shared-div-cause>
        tile = shared(f32, 4)  # <shared-div>


def k_shared_assign(x: Array[f32]) -> None:
    tile = shared(f32, 4)
    tile = 1.0  # <shared-assign>


def k_shared_in_expr(x: Array[f32]) -> None:
    v = shared(f32, 4)[0]  # <shared-expr>


def k_shared_bad_type(x: Array[f32]) -> None:
    tile = shared(float, 4)  # <shared-type>


def k_shared_read_bare(x: Array[f32]) -> None:
    tile = shared(f32, 4)
    y = tile  # <shared-bare>


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (k_shared_size_runtime, "shared-size", "must be an integer constant"),
    (k_shared_size_zero, "shared-zero", "must be positive"),
    (k_shared_twice, "shared-twice", "declared twice"),
    (k_shared_divergent, "shared-div", "shared array `tile` is declared under control flow"),
    (k_shared_assign, "shared-assign", "cannot assign to shared array `tile`"),
    (k_shared_in_expr, "shared-expr", "whole right-hand side"),
    (k_shared_bad_type, "shared-type", "must be a scalar type"),
    (k_shared_read_bare, "shared-bare", "can only be indexed"),
])
def test_shared_array_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    err = error(fn)
    assert err.line == marked(tag)
    assert fragment in err.message


def test_shared_divergence_names_its_cause() -> None:
    assert f"line {marked('shared-div-cause')}" in error(k_shared_divergent).message


# ---------------------------------------------------------------- barriers


def k_barrier_uniform(x: Array[f32], n: u32) -> None:
    stride = CUBE_DIM // 2
    while stride > 0:
        if UNIT_POS < stride:
            x[UNIT_POS] += x[UNIT_POS + stride]
        sync_cube()
        stride = stride // 2
    if CUBE_POS < n and PLANE_DIM > 1:
        sync_cube()
    for i in range(n):
        sync_cube()
        if i == 3:
            break


def test_barriers_under_uniform_control_are_accepted() -> None:
    k = parse_kernel(k_barrier_uniform)
    assert len(nodes(k, ir.Barrier)) == 3


def k_barrier_if(x: Array[f32]) -> None:
    if ABSOLUTE_POS < len(x):  # <bar-if-cause>
        sync_cube()  # <bar-if>


def k_barrier_else(x: Array[f32]) -> None:
    if UNIT_POS_PLANE == 0:
        pass
    else:
        sync_cube()  # <bar-else>


def k_barrier_loop_bound(x: Array[f32]) -> None:
    for i in range(UNIT_POS):  # <bar-loop-cause>
        sync_cube()  # <bar-loop>


def k_barrier_tainted_local(x: Array[f32]) -> None:
    flag = False
    if UNIT_POS == 0:
        flag = True
    if flag:
        sync_cube()  # <bar-local>


def k_barrier_loaded(x: Array[f32]) -> None:
    if x[0] > 0.0:
        sync_cube()  # <bar-load>


def k_barrier_after_return(x: Array[f32]) -> None:
    if ABSOLUTE_POS >= len(x):
        return  # <bar-return-cause>
    x[ABSOLUTE_POS] = 1.0
    sync_cube()  # <bar-return>


def k_barrier_after_break(x: Array[f32], n: u32) -> None:
    for i in range(n):
        sync_cube()  # <bar-break>
        if x[i] > 0.0:
            break


def k_barrier_atomic(hist: Array[i32]) -> None:
    old = atomic_add(hist, 0, 1)
    while old > 0:
        sync_cube()  # <bar-atomic>
        old = old - 1


def k_barrier_in_expr(x: Array[f32]) -> None:
    y = sync_cube()  # <bar-expr>


@pytest.mark.parametrize(("fn", "tag"), [
    (k_barrier_if, "bar-if"), (k_barrier_else, "bar-else"), (k_barrier_loop_bound, "bar-loop"),
    (k_barrier_tainted_local, "bar-local"), (k_barrier_loaded, "bar-load"),
    (k_barrier_after_return, "bar-return"), (k_barrier_after_break, "bar-break"),
    (k_barrier_atomic, "bar-atomic"),
])
def test_barriers_under_divergent_control_are_reported(fn: Callable[..., Any], tag: str
                                                       ) -> None:
    err = error(fn)
    assert err.line == marked(tag)
    assert "sync_cube() is reached under control flow that depends on the unit" in err.message


def test_barrier_errors_name_the_cause() -> None:
    assert f"`if` condition on line {marked('bar-if-cause')}" in error(k_barrier_if).message
    assert f"`for` bounds or step on line {marked('bar-loop-cause')}" in \
        error(k_barrier_loop_bound).message
    assert f"`return` on line {marked('bar-return-cause')}" in \
        error(k_barrier_after_return).message
    assert "`break`" in error(k_barrier_after_break).message


def test_sync_cube_has_no_value() -> None:
    err = error(k_barrier_in_expr)
    assert err.line == marked("bar-expr") and "is a statement" in err.message


# ---------------------------------------------------------------- atomics


def k_atomics(hist: Array[u32], f: Array[f32], big: Array[i64], n: u32) -> None:
    old = atomic_add(hist, 0, 1)
    atomic_sub(hist, 1, n)
    atomic_max(big, 0, 5)
    atomic_min(big, 1, -5)
    prev = atomic_exchange(hist, 2, old)
    seen = atomic_compare_exchange(hist, 3, 0, 7)
    total = atomic_add(hist, 4, 1) + atomic_add(hist, 5, 2)
    atomic_add(f, 0, 0.5)
    tile = shared(i32, 4)
    atomic_add(tile, UNIT_POS % 4, 1)


def test_atomics_lower_to_atomic_statements() -> None:
    k = parse_kernel(k_atomics)
    ats = nodes(k, ir.AtomicStmt)
    z = lambda v, t=E.U32: C(v, t)  # noqa: E731
    assert ats[0] == ir.AtomicStmt(ir.AtomicOp.ADD, "hist", C(0, E.I32), z(1), None, "old")
    assert ats[1] == ir.AtomicStmt(ir.AtomicOp.SUB, "hist", C(1, E.I32), V("n", E.U32), None,
                                   None)
    assert ats[2].op is ir.AtomicOp.MAX and ats[2].value == C(5, E.I64)
    assert ats[3].op is ir.AtomicOp.MIN and ats[3].value == C(-5, E.I64)
    assert ats[4] == ir.AtomicStmt(ir.AtomicOp.EXCHANGE, "hist", C(2, E.I32), V("old", E.U32),
                                   None, "prev")
    assert ats[5] == ir.AtomicStmt(ir.AtomicOp.COMPARE_EXCHANGE, "hist", C(3, E.I32), z(7),
                                   z(0), "seen")
    # Inside a larger expression each atomic is hoisted into a fresh local, in order.
    t1, t2 = ats[6].result, ats[7].result
    assert t1 and t2 and t1 != t2 and {t1, t2}.isdisjoint({"old", "prev", "seen", "total"})
    total = next(s for s in k.body if isinstance(s, ir.Assign) and s.name == "total")
    assert total.value == ir.Binary(ir.BinOp.ADD, V(t1, E.U32), V(t2, E.U32), E.U32)
    assert k.body.index(total) == k.body.index(ats[7]) + 1
    assert ats[8].array == "f" and ats[8].value == C(0.5, E.F32)
    assert ats[9].array == "tile" and ats[9].result is None
    locals_ = dict((loc.name, loc.elem) for loc in k.locals)
    assert locals_["old"] is E.U32 and locals_[t1] is E.U32
    assert k.written_arrays == {"hist", "f", "big"}


def k_atomic_f32_cas(f: Array[f32]) -> None:
    atomic_compare_exchange(f, 0, 1.0, 2.0)  # <atomic-f32>


def k_atomic_f64(f: Array[f64]) -> None:
    old = atomic_add(f, 0, 1.0)  # <atomic-f64>


def k_atomic_not_array(hist: Array[i32]) -> None:
    x = 1
    atomic_add(x, 0, 1)  # <atomic-local>


def k_atomic_value_type(hist: Array[i32], v: u32) -> None:
    atomic_add(hist, 0, v)  # <atomic-value>


def k_atomic_arity(hist: Array[i32]) -> None:
    atomic_compare_exchange(hist, 0, 1)  # <atomic-arity>


def k_atomic_result_type(hist: Array[i32]) -> None:
    old = 1.0
    old = atomic_add(hist, 0, 1)  # <atomic-result>


def k_atomic_in_while(hist: Array[i32]) -> None:
    while atomic_add(hist, 0, 1) < 10:  # <atomic-while>
        pass


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (k_atomic_f32_cas, "atomic-f32", "atomic_compare_exchange() needs an array of i32, u32, "
                                     "i64, u64, but `f` holds f32"),
    (k_atomic_f64, "atomic-f64", "or f32, but `f` holds f64"),
    (k_atomic_not_array, "atomic-local", "must be an array parameter or a shared array"),
    (k_atomic_value_type, "atomic-value", "cast the value"),
    (k_atomic_arity, "atomic-arity", "takes 4 positional arguments"),
    (k_atomic_result_type, "atomic-result", "`old` is f32"),
    (k_atomic_in_while, "atomic-while", "condition of `while` cannot use atomics"),
])
def test_atomic_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    err = error(fn)
    assert err.line == marked(tag)
    assert fragment in err.message


# ---------------------------------------------------------------- comptime


def k_dtype(x: Array["T"], y: "Array[T]", s: "T", *, T: Comptime[dtype],  # noqa: F821, UP037
            N: Comptime[int] = 4) -> None:
    tile = shared(T, N)
    tile[UNIT_POS] = x[ABSOLUTE_POS] * s
    v: T = T(UNIT_POS)
    y[ABSOLUTE_POS] = tile[0] + v


def test_comptime_dtype_specialises_types() -> None:
    k = parse_kernel(k_dtype, {"T": f64})
    assert k.params == (ir.Param("x", E.F64, True), ir.Param("y", E.F64, True),
                        ir.Param("s", E.F64, False))
    assert k.shared == (ir.SharedArray("tile", E.F64, 4),)
    assert k.comptime == (("T", "f64"), ("N", 4))
    assert ir.Cast(ir.Builtin(ir.BuiltinName.UNIT_POS), E.F64) in list(ir.walk(k.body))
    # Spellings of one type are one kernel; each type is a distinct kernel.
    same = [parse_kernel(k_dtype, {"T": t}).digest for t in (f64, np.float64, "float64",
                                                             np.dtype("f8"), E.F64)]
    assert set(same) == {k.digest}
    assert parse_kernel(k_dtype, {"T": i32}).params[0] == ir.Param("x", E.I32, True)
    assert parse_kernel(k_dtype, {"T": i32}).digest != k.digest


def test_generic_signature_lists_comptime_dtype_params() -> None:
    sig = kernel_signature(k_dtype)
    assert sig.comptime == {"T": dtype, "N": int}
    assert sig.generic == {"x": "T", "y": "T", "s": "T"}
    assert sig.specialise({"T": "u64"})[2] == ir.Param("s", E.U64, False)
    with pytest.raises(TypeError, match="`T` of kernel `k_dtype` is Comptime\\[dtype\\]"):
        sig.bind_comptime({"T": 3})
    with pytest.raises(TypeError, match="needs a value for its comptime parameter `T`"):
        sig.bind_comptime({})


U = TypeRef("U")


def k_dtype_global_ref(x: Array[U], *, U: Comptime[dtype] = i32) -> None:
    x[0] = U(1)


def k_dtype_bad_ref(x: Array[U], *, T: Comptime[dtype]) -> None:  # <dtype-ref>
    pass


def k_dtype_as_value(x: Array[f32], *, T: Comptime[dtype]) -> None:
    y = T  # <dtype-value>


def test_comptime_dtype_from_a_type_ref_and_default() -> None:
    assert parse_kernel(k_dtype_global_ref).params == (ir.Param("x", E.I32, True),)
    assert kernel_signature(k_dtype_global_ref).params == (ir.Param("x", E.I32, True),)
    err = error(k_dtype_bad_ref, {"T": f32})
    assert err.line == marked("dtype-ref") and "names `U`" in err.message
    err = error(k_dtype_as_value, {"T": f32})
    assert err.line == marked("dtype-value") and "is a comptime dtype" in err.message


def k_unroll(x: Array[f32], n: u32, *, N: Comptime[int], UNROLL: Comptime[bool]) -> None:
    for i in range(N, unroll=UNROLL):
        x[i] = 0.0
    for j in range(n):
        x[j] = 1.0


def k_unroll_runtime(x: Array[f32], n: u32) -> None:
    for i in range(n, unroll=True):  # <unroll-runtime>
        x[i] = 0.0


def k_unroll_bad_kw(x: Array[f32]) -> None:
    for i in range(4, step=1):  # <unroll-kw>
        pass


def k_unroll_nonconst(x: Array[f32], flag: bool_) -> None:
    for i in range(4, unroll=flag):  # <unroll-flag>
        pass


def test_for_unroll() -> None:
    first, second = parse_kernel(k_unroll, {"N": 4, "UNROLL": True}).body
    assert isinstance(first, ir.For) and first.unroll and first.stop == C(4, E.I32)
    assert isinstance(second, ir.For) and not second.unroll
    assert not parse_kernel(k_unroll, {"N": 4, "UNROLL": False}).body[0].unroll
    for fn, tag, fragment in ((k_unroll_runtime, "unroll-runtime", "needs constant bounds"),
                              (k_unroll_bad_kw, "unroll-kw", "only the keyword argument"),
                              (k_unroll_nonconst, "unroll-flag", "must be a constant bool")):
        err = error(fn)
        assert err.line == marked(tag) and fragment in err.message


@kernel
def launch_checked(a: Array[f32], *, N: Comptime[int], T: Comptime[dtype] = f32,
                   SCALE: Comptime[float] = 1.0) -> None:
    # Invalid on purpose: a launch-time TypeError must come before parsing.
    with N:
        pass


def test_launch_comptime_type_errors_come_before_anything_compiles() -> None:
    c = create_client("cpu")
    buf = c.create(np.zeros(4, np.float32))
    cases = [({}, "needs a value for its comptime parameter `N`"),
             ({"N": 1, "M": 2}, "has no comptime parameter `M`"),
             ({"N": 1.5}, "`N` of kernel `launch_checked` is Comptime\\[int\\]"),
             ({"N": True}, "Comptime\\[int\\]"),
             ({"N": 1, "T": "complex"}, "`T` of kernel `launch_checked` is Comptime\\[dtype\\]"),
             ({"N": 1, "SCALE": "x"}, "`SCALE`")]
    for comptime, pattern in cases:
        with pytest.raises(TypeError, match=pattern):
            launch_checked.launch(c, CubeCount(1), CubeDim(4), buf, **comptime)
    # With valid values the body is parsed, and its error is a KernelSyntaxError.
    with pytest.raises(KernelSyntaxError):
        launch_checked.launch(c, CubeCount(1), CubeDim(4), buf, N=1)


# ---------------------------------------------------------------- helpers


@cube_fn
def h_square_plus(v: f32, k: f32 = 1.0) -> f32:
    """A docstring is allowed."""
    t = v * v
    return t + k


@cube_fn
def h_abs(v: Any) -> Any:
    if v < 0:
        return -v
    else:
        return v


@cube_fn
def h_store(dst: Array[f32], tile: Any, i: u32, N: int) -> None:
    t = tile[i % N]
    dst[i] = t


@cube_fn
def h_nested(v: f32) -> f32:
    t = h_square_plus(v)
    return h_abs(t - 10.0)


def k_helpers(x: Array[f32], y: Array[f32]) -> None:
    t = x[ABSOLUTE_POS]
    a = h_square_plus(t)
    b = h_square_plus(t, k=2.0) + h_abs(a)
    tile = shared(f32, 8)
    h_store(y, tile, ABSOLUTE_POS, 8)
    y[0] = h_nested(b)


def test_cube_fn_calls_are_inlined() -> None:
    k = parse_kernel(k_helpers)
    names = [loc.name for loc in k.locals]
    assert len(names) == len(set(names))
    # The helper's `t` never clobbers the kernel's `t`.
    assert names.count("t") == 1 and any(n.startswith("t_h_square_plus") for n in names)
    text = ir.format_kernel(k)
    assert "h_abs_result" in text  # branch returns go through a result local
    # The first call binds v to the kernel's t and k to the constant 1.0.
    sq = next(s for s in k.body if isinstance(s, ir.Assign) and s.name.startswith("t_h_sq"))
    assert sq.value == ir.Binary(ir.BinOp.MUL, V("t", E.F32), V("t", E.F32), E.F32)
    a = next(s for s in k.body if isinstance(s, ir.Assign) and s.name == "a")
    assert a.value == ir.Binary(ir.BinOp.ADD, V(sq.name, E.F32), C(1.0, E.F32), E.F32)
    # Arrays and shared arrays pass by reference; the constant N folds.
    store = next(s for s in k.body if isinstance(s, ir.Store) and s.array == "y"
                 and isinstance(s.value, ir.Var))
    loads = [n for n in ir.walk(k.body) if isinstance(n, ir.Load) and n.array == "tile"]
    copy = next(s for s in k.body if isinstance(s, ir.Assign) and s.name.startswith("i_h_"))
    assert copy.value == ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
    assert loads and loads[0].index == ir.Binary(
        ir.BinOp.REM, V(copy.name, E.U32), C(8, E.U32), E.U32)


@cube_fn
def h_annotated(v: f32) -> f32:
    t: f32 = v * 2.0
    return t


def k_annotated_helper(x: Array[f32]) -> None:
    t: f32 = 1.0
    x[ABSOLUTE_POS] = h_annotated(x[ABSOLUTE_POS]) + t


def test_cube_fn_annotated_local_is_its_own() -> None:
    # `t: f32 = ...` in a helper declares the helper's fresh local, never the caller's.
    k = parse_kernel(k_annotated_helper)
    writes = [s for s in k.body if isinstance(s, ir.Assign)]
    assert [s.name for s in writes if s.name == "t"] == ["t"]
    own = next(s for s in writes if s.name.startswith("t_h_annotated"))
    assert isinstance(own.value, ir.Binary) and own.value.op is ir.BinOp.MUL


def test_cube_fn_outside_a_kernel_raises() -> None:
    with pytest.raises(KernelOnlyError, match="h_abs"):
        h_abs(1.0)


@cube_fn
def h_rec_a(v: f32) -> f32:
    return h_rec_b(v)


@cube_fn
def h_rec_b(v: f32) -> f32:
    return h_rec_a(v)  # <rec>


@cube_fn
def h_early(v: f32) -> f32:
    if v < 0.0:
        return 0.0  # <early>
    v = v * 2.0
    return v


@cube_fn
def h_partial(v: f32) -> f32:  # <partial>
    if v < 0.0:
        return 0.0
    elif v > 1.0:
        return 1.0


@cube_fn
def h_nothing(x: Array[f32]) -> None:
    x[0] = 1.0


@cube_fn
def h_bad_body(x: Array[f32]) -> None:
    x[0] = "no"  # <helper-bad>


def k_rec(x: Array[f32]) -> None:
    x[0] = h_rec_a(1.0)


def k_early(x: Array[f32]) -> None:
    x[0] = h_early(x[1])


def k_partial(x: Array[f32]) -> None:
    x[0] = h_partial(x[1])


def k_nothing(x: Array[f32]) -> None:
    y = h_nothing(x)  # <nothing>


def k_bad_body(x: Array[f32]) -> None:
    h_bad_body(x)


def k_bad_call(x: Array[f32]) -> None:
    y = h_square_plus(x[0], 1.0, 2.0)  # <bad-call>


def k_wrong_arg(x: Array[f32]) -> None:
    y = h_square_plus(1)  # works: a weak int becomes f32
    z = h_square_plus(i32(1))  # <wrong-arg>


@kernel
def other_kernel(x: Array[f32]) -> None:
    pass


def k_calls_kernel(x: Array[f32]) -> None:
    other_kernel(x)  # <kernel-call>


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (k_rec, "rec", "recursive call to cube_fn `h_rec_a` (h_rec_a -> h_rec_b -> h_rec_a)"),
    (k_early, "early", "must be its last statement"),
    (k_partial, "partial", "returns a value on some paths only"),
    (k_nothing, "nothing", "returns no value"),
    (k_bad_body, "helper-bad", "string constants"),
    (k_bad_call, "bad-call", "bad call to cube_fn `h_square_plus`"),
    (k_wrong_arg, "wrong-arg", "is f32"),
    (k_calls_kernel, "kernel-call", "kernels cannot call kernels"),
])
def test_cube_fn_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    err = error(fn)
    assert err.line == marked(tag)
    assert fragment in err.message


@cube_fn
def h_barrier(tile: Any) -> None:
    sync_cube()  # <helper-barrier>


def k_helper_barrier_divergent(x: Array[f32]) -> None:
    tile = shared(f32, 4)
    if UNIT_POS == 0:
        h_barrier(tile)


def test_uniformity_sees_through_helpers() -> None:
    err = error(k_helper_barrier_divergent)
    assert err.line == marked("helper-barrier") and "sync_cube()" in err.message


# ---------------------------------------------------------------- plane ops, shapes


def k_plane(x: Array[f32], y: Array[u32]) -> None:
    v = x[ABSOLUTE_POS]
    s = plane_sum(v)
    m = plane_max(v)
    b = plane_broadcast(v, 3)
    c = plane_broadcast(UNIT_POS_PLANE, PLANE_DIM - 1)
    w = plane_sum(1)


def test_plane_ops() -> None:
    k = parse_kernel(k_plane)
    ops = nodes(k, ir.PlaneOp)
    v = V("v", E.F32)
    assert ops[0] == ir.PlaneOp(ir.PlaneFn.SUM, v, None, E.F32)
    assert ops[1] == ir.PlaneOp(ir.PlaneFn.MAX, v, None, E.F32)
    assert ops[2] == ir.PlaneOp(ir.PlaneFn.BROADCAST, v, C(3, E.U32), E.F32)
    assert ops[3].value == ir.Builtin(ir.BuiltinName.UNIT_POS_PLANE) and ops[3].type is E.U32
    assert ops[4].value == C(1, E.I32)


def k_plane_bool(x: Array[f32]) -> None:
    s = plane_sum(x[0] > 0.0)  # <plane-bool>


def k_plane_lane(x: Array[f32]) -> None:
    s = plane_broadcast(x[0], 1.5)  # <plane-lane>


def k_shape(a: Array[f32], b: Array[i32]) -> None:
    n = a.shape[0] * a.stride[1]
    b[0] = i32(b.shape[2])


def k_shape_runtime(a: Array[f32], d: u32) -> None:
    n = a.shape[d]  # <shape-runtime>


def k_shape_shared(a: Array[f32]) -> None:
    t = shared(f32, 4)
    n = t.shape[0]  # <shape-shared>


def test_shapes_and_strides() -> None:
    k = parse_kernel(k_shape)
    assert k.body[0] == ir.Assign("n", ir.Binary(ir.BinOp.MUL, ir.Shape("a", 0),
                                                 ir.Stride("a", 1), E.U32))
    assert ir.Shape("b", 2) in list(ir.walk(k.body))


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (k_plane_bool, "plane-bool", "needs a number, got bool"),
    (k_plane_lane, "plane-lane", "must be a non-negative integer"),
    (k_shape_runtime, "shape-runtime", "must be a constant, non-negative integer"),
    (k_shape_shared, "shape-shared", "needs an array parameter"),
])
def test_plane_and_shape_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    err = error(fn)
    assert err.line == marked(tag)
    assert fragment in err.message


# ---------------------------------------------------------------- types and ops


def k_types(h: Array[f16], w: Array[u64], s: Array[i64], f: Array[f32], flags: Array[bool_]
            ) -> None:
    i = ABSOLUTE_POS
    h[i] = h[i] * f16(2.0)
    w[i] = (w[i] << 3) | (w[i] >> u64(60)) ^ ~w[i] & u64(0xFF)
    s[i] = s[i] // -3 + s[i] % 7
    x = f[i]
    f[i] = clamp(erf(x) + rsqrt(x), -1.0, 1.0)
    flags[i] = (isnan(x) or isinf(x)) == flags[i]
    f[i] = select(flags[i] != True, x, 0.0)  # noqa: E712


def test_more_types_and_ops() -> None:
    k = parse_kernel(k_types)
    ops = {n.op for n in nodes(k, ir.Binary)}
    assert {ir.BinOp.SHL, ir.BinOp.SHR, ir.BinOp.BITOR, ir.BinOp.BITXOR, ir.BinOp.BITAND,
            ir.BinOp.IDIV, ir.BinOp.REM, ir.BinOp.EQ, ir.BinOp.NE} <= ops
    fns = {n.fn for n in nodes(k, ir.Math)}
    assert {ir.MathFn.ERF, ir.MathFn.RSQRT, ir.MathFn.CLAMP, ir.MathFn.ISNAN,
            ir.MathFn.ISINF} <= fns
    assert nodes(k, ir.Select) and any(
        isinstance(n, ir.Unary) and n.op is ir.UnOp.BITNOT for n in ir.walk(k.body))
    eq = next(n for n in nodes(k, ir.Binary) if n.op is ir.BinOp.EQ)
    assert eq.lhs.type is E.BOOL and eq.type is E.BOOL
    assert [p.elem for p in k.params] == [E.F16, E.U64, E.I64, E.F32, E.BOOL]
