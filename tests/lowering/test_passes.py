"""The lowering passes (``cubecl_server/lowering/passes``), each alone: what it leaves
in the core IR, and that the kernel it returns computes what the kernel it was given
means, on the cpu backend (the reference), at the values where its rule matters.

Every test draws fresh random data; the seed is in the assertion messages.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.passkit import (
    CHECKED,
    POS,
    UNCHECKED,
    B,
    E,
    Seeded,
    c,
    kern,
    ld,
    nodes,
    op,
    run,
    same_results,
    v,
)

from cubecl_server import ir
from cubecl_server.kernel import CubeDim
from cubecl_server.lowering.passes import GRID_BUILTINS, INT_FUNCTIONS, Native, lower
from cubecl_server.lowering.passes.atomics import loop_float_atomics
from cubecl_server.lowering.passes.bounds import in_bounds
from cubecl_server.lowering.passes.builtins import derive_builtins
from cubecl_server.lowering.passes.checked import check_accesses
from cubecl_server.lowering.passes.floats import order_nans
from cubecl_server.lowering.passes.integers import lower_integers
from cubecl_server.lowering.passes.lines import lower_lines
from cubecl_server.lowering.passes.logical import fix_evaluation
from cubecl_server.lowering.passes.loops import count_loops, is_canonical
from cubecl_server.lowering.passes.memory import clear_arrays

M = ir.MathFn
A = ir.AtomicOp
BN = ir.BuiltinName
BARE = Native()
"""A target that does nothing itself: every pass runs."""


@pytest.fixture
def rng() -> Seeded:
    return Seeded()


# ---------------------------------------------------------------- checked accesses


def test_checked_accesses_read_zero_and_drop_what_is_outside(rng: Seeded) -> None:
    n = 320  # five cubes of 64: every unit has an index
    idx = rng.gen.integers(-40, n + 40, n).astype(np.int32)
    a = rng.gen.standard_normal(n).astype(np.float32)
    i = ld("idx", POS, E.I32)
    k = kern([ir.Store("out", POS, ld("a", i, E.F32)),
              ir.Store("scattered", i, ld("a", POS, E.F32)),
              ir.AtomicStmt(A.ADD, "counts", i, c(1, E.I32), None, "old"),
              ir.Store("olds", POS, v("old", E.I32))],
             [("idx", "i32[]"), ("a", "f32[]"), ("out", "f32[]"), ("scattered", "f32[]"),
              ("counts", "i32[]"), ("olds", "i32[]")], local=[("old", E.I32)])
    lowered = check_accesses(k, in_bounds(k, CubeDim(64)), Native())
    assert len(nodes(lowered, ir.If)) == 9, "one check per access: none is guarded"
    outs = [np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.int32),
            np.full(n, -1, np.int32)]
    out, scattered, counts, olds = same_results(k, lowered, [idx, a], outs)
    inside = (idx >= 0) & (idx < n)
    np.testing.assert_array_equal(out, np.where(inside, a[np.clip(idx, 0, n - 1)], 0),
                                  str(rng))
    want = np.zeros(n, np.float32)
    for lane in np.flatnonzero(inside):  # the last lane storing to an element wins
        want[idx[lane]] = a[lane]
    np.testing.assert_array_equal(scattered, want, str(rng))
    np.testing.assert_array_equal(counts, np.bincount(idx[inside], minlength=n), str(rng))
    seen: dict[int, int] = {}
    for lane in range(n):  # lanes act in lane order; one outside reads 0 as its old value
        if inside[lane]:
            assert olds[lane] == seen.get(idx[lane], 0), (lane, rng)
            seen[idx[lane]] = seen.get(idx[lane], 0) + 1
        else:
            assert olds[lane] == 0, (lane, rng)


def test_a_partial_last_line_is_read_and_written_element_by_element(rng: Seeded) -> None:
    x = rng.gen.standard_normal(10).astype(np.float32)  # two lines of 4 and half a line
    line = ir.Line(E.F32, 4)
    k = kern([ir.Store("out", POS, ld("x", POS, line))], [("x", "f32[4]"), ("out", "f32[4]")])
    lowered = check_accesses(k, in_bounds(k, CubeDim(4)), Native())
    assert any(isinstance(n, ir.LineMake) for n in ir.walk(lowered.body))
    assert any(isinstance(n, ir.Load) and n.type is E.F32 for n in ir.walk(lowered.body)), \
        "the partial line is read through element loads of the line array"
    # Four units: the fourth line is wholly outside, the third half inside.
    [out] = same_results(k, lowered, [x], [np.full(10, -1, np.float32)], count=1, dim=4)
    np.testing.assert_array_equal(out, x, str(rng))


def test_proven_accesses_keep_no_check() -> None:
    k = kern([ir.If(op(B.LT, POS, ir.Len("out")), (
        ir.Store("out", POS, ld("a", POS, E.F32)),), ())], [("a", "f32[]"), ("out", "f32[]")])
    lowered = check_accesses(k, in_bounds(k, CubeDim(64)), Native())
    # The store is proven by its guard; the load of another array is not.
    assert [n.array for n in nodes(lowered, ir.BufferLen)] == ["a"]


# ---------------------------------------------------------------- loops


LOOPS = [
    (E.I32, 2**31 - 10, 2**31 - 1, 3), (E.I32, -2**31, -2**31 + 7, 2), (E.I32, 10, -10, -3),
    (E.I32, 0, 0, 1), (E.I32, 5, 0, 1), (E.I32, -5, 5, 1), (E.I32, 2**31 - 1, -2**31, -2**30),
    (E.U32, 2**32 - 5, 2**32 - 1, 2), (E.U32, 0, 2**32 - 1, 2**31), (E.U32, 3, 3, 7),
    (E.I64, 2**63 - 4, 2**63 - 1, 1), (E.U64, 2**64 - 9, 2**64 - 1, 4),
    (E.I8, -128, 127, 50), (E.U8, 250, 255, 2), (E.I16, 300, -300, -299),
]


@pytest.mark.parametrize(("t", "start", "stop", "step"), LOOPS,
                         ids=[f"{t.value}:{a}:{b}:{s}" for t, a, b, s in LOOPS])
@pytest.mark.parametrize("constant", [True, False], ids=["constant", "runtime"])
@pytest.mark.parametrize("step_known", [True, False], ids=["step", "runtime-step"])
def test_counted_loops_run_pythons_range_without_wrapping(t: E, start: int, stop: int,
                                                         step: int, constant: bool,
                                                         step_known: bool) -> None:
    count, final = _count_loop(t, start, stop, step, constant, step_known)
    values = range(start, stop, step)
    assert count == len(values)
    assert final == (values[-1] if values else 0)


@pytest.mark.parametrize("t", [E.I32, E.U32, E.I64])
def test_a_runtime_step_of_zero_runs_no_iterations(t: E) -> None:
    assert _count_loop(t, 0, 10, 0, False, False) == (0, 0)


def _count_loop(t: E, start: int, stop: int, step: int, constant: bool,
                step_known: bool) -> tuple[int, int]:
    """The trip count and last value of ``for i in range(start, stop, step)`` in ``t``
    after :func:`count_loops`, with the bounds and the step constants or parameters."""
    bounds = (c(start, t), c(stop, t)) if constant else (v("lo", t), v("hi", t))
    by = ir.Const(step, t) if step_known else v("by", t)
    k = kern([ir.For("i", bounds[0], bounds[1], by, (
                  ir.Assign("n", op(B.ADD, v("n", E.U32), c(1, E.U32))),
                  ir.Assign("last", v("i", t)))),
              ir.Store("count", c(0, E.U32), v("n", E.U32)),
              ir.Store("final", c(0, E.U32), v("last", t))],
             [("lo", t.value), ("hi", t.value), ("by", t.value), ("count", "u32[]"),
              ("final", f"{t.value}[]")],
             local=[("i", t), ("n", E.U32), ("last", t)])
    lowered = count_loops(k)
    assert all(is_canonical(f) for f in nodes(lowered, ir.For))
    count, final = np.zeros(1, np.uint32), np.zeros(1, t.numpy_name)
    dtype = np.dtype(t.numpy_name).type
    run(lowered, [count, final], [dtype(start), dtype(stop), dtype(step)], count=1, dim=1,
        mode=UNCHECKED)
    return int(count[0]), int(final[0])


# ---------------------------------------------------------------- evaluation


def test_a_right_side_that_loads_runs_only_where_the_left_side_does_not_decide() -> None:
    a = np.array([1.0, -1.0, 2.0], np.float32)
    k = kern([ir.If(op(B.AND, op(B.LT, POS, ir.Len("a")),
                       op(B.GT, ld("a", POS, E.F32), c(0.0, E.F32))),
                    (ir.Store("out", POS, c(1, E.U32)),), ())], [("a", "f32[]"), ("out", "u32[]")])
    lowered = fix_evaluation(k, BARE)
    assert not any(isinstance(n, ir.Binary) and n.op is B.AND for n in ir.walk(lowered.body))
    out = np.zeros(64, np.uint32)
    # Unchecked: a load past the end of `a` would fail the run (NumPy's index error).
    run(lowered, [a, out], count=1, dim=64, mode=UNCHECKED)
    np.testing.assert_array_equal(out[:4], [1, 0, 1, 0])
    short = fix_evaluation(k, Native(short_circuit=True))
    assert short.body == k.body, "a target whose `and` short-circuits keeps it"


def test_a_select_side_holding_a_plane_operation_is_computed_first() -> None:
    x = ld("a", POS, E.F32)
    plane = ir.PlaneOp(ir.PlaneFn.SUM, x, None, E.F32)
    k = kern([ir.Store("a", POS, ir.Select(op(B.GT, x, c(0.0, E.F32)), plane, x, E.F32))],
             [("a", "f32[]")])
    lowered = fix_evaluation(k, BARE)
    [select] = nodes(lowered, ir.Select)
    assert not any(isinstance(n, ir.PlaneOp) for n in ir.walk(select))
    assert isinstance(lowered.body[0], ir.Assign) and isinstance(lowered.body[0].value,
                                                                  ir.PlaneOp)


# ---------------------------------------------------------------- builtins


def test_derived_builtins_are_the_irs(rng: Seeded) -> None:
    names = [n for n in BN if n not in (BN.PLANE_DIM, BN.UNIT_POS_PLANE)]
    stores = [ir.Store("out", op(B.ADD, op(B.MUL, v("lin", E.U32), c(len(names), E.U32)),
                                 c(k, E.U32)), ir.Builtin(n)) for k, n in enumerate(names)]
    units = 4 * 2 * 2
    lin = op(B.ADD, ir.Builtin(BN.UNIT_POS), op(B.MUL, ir.Builtin(BN.CUBE_POS), c(units, E.U32)))
    k = kern([ir.Assign("lin", lin), *stores], [("out", "u32[]")], local=[("lin", E.U32)])
    lowered = derive_builtins(k, CubeDim(4, 2, 2), BARE, "test")
    left = {n.name for n in nodes(lowered, ir.Builtin)}
    assert left <= GRID_BUILTINS and BN.UNIT_POS_Y in left and BN.CUBE_COUNT_Z in left
    cubes = (3, 2, 2)
    out = np.zeros(math.prod(cubes) * units * len(names), np.uint32)
    same_results(k, lowered, [], [out], count=cubes, dim=(4, 2, 2))
    axis_of_one = derive_builtins(k, CubeDim(16), BARE, "test")
    assert BN.UNIT_POS_Y not in {n.name for n in nodes(axis_of_one, ir.Builtin)}, \
        "a position along an axis of one unit is 0"


# ---------------------------------------------------------------- integers


def _edges(t: E, rng: Seeded) -> np.ndarray:
    info = np.iinfo(t.numpy_name)
    edges = [0, 1, 2, 3, 7, info.max, info.max - 1, 1 << (t.bits - 2)]
    if t.is_signed:
        edges += [-1, -2, info.min, info.min + 1]
    rand = rng.gen.integers(info.min, info.max, 200, dtype=t.numpy_name, endpoint=True)
    return np.concatenate([np.array(edges, t.numpy_name), rand])


def _bits(x: int, t: E) -> int:
    return x & ((1 << t.bits) - 1)


def _signed(x: int, t: E) -> int:
    x = _bits(x, t)
    return x - (1 << t.bits) if t.is_signed and x >> (t.bits - 1) else x


REFERENCE = {
    M.COUNT_ONES: lambda x, y, t: bin(_bits(x, t)).count("1"),
    M.LEADING_ZEROS: lambda x, y, t: t.bits - _bits(x, t).bit_length(),
    M.TRAILING_ZEROS: lambda x, y, t: (
        t.bits if x == 0 else (_bits(x, t) & -_bits(x, t)).bit_length() - 1),
    M.FIND_FIRST_SET: lambda x, y, t: 0 if x == 0 else (
        _bits(x, t) & -_bits(x, t)).bit_length(),
    M.REVERSE_BITS: lambda x, y, t: _signed(int(f"{_bits(x, t):0{t.bits}b}"[::-1], 2), t),
    M.MUL_HI: lambda x, y, t: _signed((x * y) >> t.bits, t),
    M.SATURATING_ADD: lambda x, y, t: min(max(x + y, _range(t)[0]), _range(t)[1]),
    M.SATURATING_SUB: lambda x, y, t: min(max(x - y, _range(t)[0]), _range(t)[1]),
}


def _range(t: E) -> tuple[int, int]:
    info = np.iinfo(t.numpy_name)
    return int(info.min), int(info.max)


@pytest.mark.parametrize("t", [E.I32, E.U32, E.I64, E.U64], ids=lambda t: t.value)
@pytest.mark.parametrize("fn", sorted(REFERENCE, key=lambda f: f.value), ids=lambda f: f.value)
def test_integer_functions_in_shifts_and_masks(fn: ir.MathFn, t: E, rng: Seeded) -> None:
    x = _edges(t, rng)
    y = np.roll(x, 1)
    two = fn in (M.MUL_HI, M.SATURATING_ADD, M.SATURATING_SUB)
    rt = E.U32 if fn in (M.COUNT_ONES, M.LEADING_ZEROS, M.TRAILING_ZEROS,
                         M.FIND_FIRST_SET) else t
    args = (ld("x", POS, t), ld("y", POS, t)) if two else (ld("x", POS, t),)
    k = kern([ir.If(op(B.LT, POS, ir.Len("out")), (
        ir.Store("out", POS, ir.Math(fn, args, rt)),), ())],
        [("x", f"{t.value}[]"), ("y", f"{t.value}[]"), ("out", f"{rt.value}[]")])
    lowered = lower_integers(k, BARE)
    assert not any(isinstance(n, ir.Math) and n.fn in INT_FUNCTIONS for n in ir.walk(
        lowered.body))
    out = np.zeros(x.shape[0], rt.numpy_name)
    run(lowered, [x, y, out], mode=UNCHECKED)
    want = [REFERENCE[fn](int(a), int(b), t) for a, b in zip(x, y, strict=True)]
    np.testing.assert_array_equal(out, np.array(want, rt.numpy_name), f"{fn} {t} {rng}")
    native = lower_integers(k, Native(functions={t: frozenset({fn})}))
    assert native.body == k.body, "a function the target has is left to it"


def test_division_and_shifts_leave_nothing_for_the_target_to_trap_on() -> None:
    x, y = ld("x", POS, E.I32), ld("y", POS, E.I32)
    k = kern([ir.Store("q", POS, op(B.IDIV, x, y)), ir.Store("r", POS, op(B.REM, x, y)),
              ir.Store("s", POS, op(B.SHL, x, y)), ir.Store("k", POS, op(B.IDIV, x, c(3, E.I32))),
              ir.Store("z", POS, op(B.IDIV, x, c(0, E.I32)))],
             [("x", "i32[]"), ("y", "i32[]"), ("q", "i32[]"), ("r", "i32[]"), ("s", "i32[]"),
              ("k", "i32[]"), ("z", "i32[]")])
    lowered = lower_integers(k, BARE)
    for d in nodes(lowered, ir.Binary):
        if d.op in (B.IDIV, B.REM):  # a constant other than 0 and -1, or a select of one
            assert (isinstance(d.rhs, ir.Const) and d.rhs.value not in (0, -1)) or (
                isinstance(d.rhs, ir.Select) and d.rhs.a == c(1, E.I32)), ir.format_expr(d)
        if d.op is B.SHL:  # the amount modulo the width
            assert isinstance(d.rhs, ir.Binary) and d.rhs.op is B.BITAND \
                and d.rhs.rhs == c(31, E.I32), ir.format_expr(d)
    assert lowered.body[-1] == ir.Store("z", POS, c(0, E.I32)), "x // 0 is 0"
    lo = -(2**31)
    xs = np.array([7, -7, 7, lo, lo, 5, 9], np.int32)
    ys = np.array([2, 2, 0, -1, 0, 33, -1], np.int32)
    outs = [np.zeros(7, np.int32) for _ in range(5)]
    run(lowered, [xs, ys, *outs], count=1, dim=7, mode=UNCHECKED)
    np.testing.assert_array_equal(outs[0], [3, -3, 0, lo, 0, 0, -9])
    np.testing.assert_array_equal(outs[1], [1, -1, 0, 0, 0, 5, 0])
    np.testing.assert_array_equal(outs[2], [28, -28, 7, 0, lo, 10, lo])


def test_sign_clamp_and_integer_min_max_are_selects(rng: Seeded) -> None:
    x = ld("x", POS, E.F32)
    ix = ld("i", POS, E.I32)
    k = kern([ir.Store("s", POS, ir.Math(M.SIGN, (x,), E.F32)),
              ir.Store("c", POS, ir.Math(M.CLAMP, (ix, c(-3, E.I32), c(5, E.I32)), E.I32)),
              ir.Store("a", POS, ir.Math(M.ABS, (ix,), E.I32))],
             [("x", "f32[]"), ("i", "i32[]"), ("s", "f32[]"), ("c", "i32[]"), ("a", "i32[]")])
    lowered = lower_integers(k, BARE)
    assert not nodes(lowered, ir.Math)
    xs = np.array([0.0, -0.0, np.nan, 3.5, -2.0, np.inf, -np.inf, 1e-45], np.float32)
    ints = np.array([0, -1, 7, -7, 2**31 - 1, -(2**31), 4, -3], np.int32)
    s, cl, ab = (np.zeros(8, t) for t in (np.float32, np.int32, np.int32))
    run(lowered, [xs, ints, s, cl, ab], count=1, dim=8, mode=UNCHECKED)
    # 1 above 0, -1 below, else x itself: -0.0 and NaN keep their bits (docs/ir.md).
    sign = np.where(xs > 0, 1, np.where(xs < 0, -1, xs)).astype(np.float32)
    np.testing.assert_array_equal(s.view(np.uint32), sign.view(np.uint32))
    np.testing.assert_array_equal(cl, np.clip(ints, -3, 5))
    np.testing.assert_array_equal(ab, np.abs(ints))  # abs(MIN) wraps to MIN, as NumPy's


# ---------------------------------------------------------------- floats


def test_min_and_max_without_the_nan_rule_never_meet_a_nan(rng: Seeded) -> None:
    a = np.array([np.nan, 1.0, np.nan, -0.0, np.inf, 2.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 0.0, np.nan, -3.0], np.float32)
    x, y = ld("a", POS, E.F32), ld("b", POS, E.F32)
    k = kern([ir.Store("lo", POS, ir.Math(M.MIN, (x, y), E.F32)),
              ir.Store("hi", POS, ir.Math(M.MAX, (x, y), E.F32))],
             [("a", "f32[]"), ("b", "f32[]"), ("lo", "f32[]"), ("hi", "f32[]")])
    lowered = order_nans(k, BARE)
    assert not nodes(lowered, ir.Math) or all(
        n.fn is M.ISNAN for n in nodes(lowered, ir.Math))
    lo, hi = np.zeros(6, np.float32), np.zeros(6, np.float32)
    run(lowered, [a, b, lo, hi], count=1, dim=6, mode=UNCHECKED)
    np.testing.assert_array_equal(lo, np.fmin(a, b))
    np.testing.assert_array_equal(hi, np.fmax(a, b))
    assert order_nans(k, Native(nan_minmax=True)) is k


# ---------------------------------------------------------------- atomics


@pytest.mark.parametrize("atomic", [A.ADD, A.MAX, A.MIN], ids=lambda a: a.value)
def test_float_atomics_as_compare_exchange_loops(atomic: ir.AtomicOp, rng: Seeded) -> None:
    n, slots = 256, 5
    # Whole numbers: their sum is exact in any order, which the loops do not keep.
    vals = rng.gen.integers(-50, 50, n).astype(np.float32)
    vals[::17] = np.nan if atomic is not A.ADD else 0.0
    where = rng.gen.integers(0, slots, n).astype(np.uint32)
    k = kern([ir.AtomicStmt(atomic, "acc", ld("where", POS, E.U32), ld("vals", POS, E.F32),
                            None, "old"),
              ir.Store("olds", POS, v("old", E.F32))],
             [("where", "u32[]"), ("vals", "f32[]"), ("acc", "f32[]"), ("olds", "f32[]")],
             local=[("old", E.F32)])
    lowered = loop_float_atomics(k, BARE)
    [cas] = nodes(lowered, ir.AtomicStmt)
    assert cas.op is A.COMPARE_EXCHANGE and cas.value.type is E.U32
    start = np.array([np.nan, 0.0, -1.0, 3.0, 100.0], np.float32)
    acc, olds = start.copy(), np.zeros(n, np.float32)
    run(lowered, [where, vals, acc, olds], mode=UNCHECKED)
    fold = {A.ADD: np.add, A.MAX: np.fmax, A.MIN: np.fmin}[atomic]
    for s in range(slots):
        mine = vals[where == s]
        want = fold.reduce(np.concatenate([[start[s]], mine])) if mine.size else start[s]
        np.testing.assert_array_equal(acc[s], want, f"slot {s} {rng}")
        if atomic is A.ADD and not math.isnan(start[s]):
            # One chain of successes: each old value plus its lane's is the next one's
            # old value, or the final sum.
            old = olds[where == s]
            assert sorted([*(old + mine).tolist(), float(start[s])]) == sorted(
                [*old.tolist(), float(want)]), (s, rng)
    assert loop_float_atomics(k, Native(float_atomics=frozenset({atomic}))) is k


def test_a_float_exchange_as_a_compare_exchange_loop(rng: Seeded) -> None:
    n, slots = 256, 5
    vals = rng.gen.standard_normal(n).astype(np.float32)
    vals[::13] = -0.0
    where = rng.gen.integers(0, slots, n).astype(np.uint32)
    k = kern([ir.AtomicStmt(A.EXCHANGE, "acc", ld("where", POS, E.U32), ld("vals", POS, E.F32),
                            None, "old"),
              ir.Store("olds", POS, v("old", E.F32))],
             [("where", "u32[]"), ("vals", "f32[]"), ("acc", "f32[]"), ("olds", "f32[]")],
             local=[("old", E.F32)])
    lowered = loop_float_atomics(k, BARE)
    assert [s.op for s in nodes(lowered, ir.AtomicStmt)] == [A.COMPARE_EXCHANGE]
    start = np.array([np.nan, 0.0, -1.0, 3.0, 100.0], np.float32)
    acc, olds = start.copy(), np.zeros(n, np.float32)
    run(lowered, [where, vals, acc, olds], mode=UNCHECKED)
    for s in range(slots):
        # One chain: each lane's old value is the start or another lane's value, and
        # the element ends holding the one value nobody took as old, bit for bit.
        mine, old = vals[where == s].view(np.uint32), olds[where == s].view(np.uint32)
        assert sorted([*old.tolist(), int(acc[s:s + 1].view(np.uint32)[0])]) == sorted(
            [*mine.tolist(), int(start[s:s + 1].view(np.uint32)[0])]), (s, rng)


# ---------------------------------------------------------------- memory and lines


def test_shared_and_local_arrays_are_cleared_before_the_body() -> None:
    k = kern([ir.Store("tile", c(0, E.U32), c(1.0, E.F32)), ir.Barrier(),
              ir.Store("out", POS, ld("tile", ir.Builtin(BN.UNIT_POS), E.F32)),
              ir.Store("mine", c(0, E.U32), c(2, E.I32))],
             [("out", "f32[]")], shared=[("tile", E.F32, 100)])
    k = ir.Kernel(k.name, k.params, k.locals, k.shared, k.body,
                  local_arrays=(ir.LocalArray("mine", E.I32, 3),))
    cleared = clear_arrays(k, CubeDim(64), BARE)
    loops = [s for s in cleared.body if isinstance(s, ir.For)]
    assert len(loops) == 2 and isinstance(cleared.body[2], ir.Barrier)
    assert cleared.body[3:] == k.body
    targets = {st.array for st in nodes(cleared, ir.Store)} - {"out"}
    assert targets == {"tile", "mine"}
    assert clear_arrays(k, CubeDim(64), Native(zeroed_shared=True,
                                               zeroed_local_arrays=True)) is k


def test_line_lengths_and_reductions_from_elements(rng: Seeded) -> None:
    line = ir.Line(E.I32, 4)
    x = ld("x", c(0, E.U32), line)
    k = kern([ir.Store("n", c(0, E.U32), ir.Len("x")),
              ir.Store("s", c(0, E.U32), ir.LineReduce(ir.ReduceFn.SUM, x, E.I32)),
              ir.Store("m", c(0, E.U32), ir.LineReduce(ir.ReduceFn.MAX, x, E.I32))],
             [("x", "i32[4]"), ("n", "u32[]"), ("s", "i32[]"), ("m", "i32[]")])
    lowered = lower_lines(k)
    assert not nodes(lowered, ir.LineReduce)
    # The core IR's len counts elements: the lines are worked out from it.
    assert len(nodes(lowered, ir.Len)) == 1
    assert any(isinstance(n, ir.Binary) and n.op is B.IDIV and n.rhs == c(4, E.U32)
               for n in ir.walk(lowered.body))
    xs = np.array([5, -9, 2**31 - 1, 10, 3, 3, 3, 3, 0, 7], np.int32)
    n, s, m = np.zeros(1, np.uint32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    # Run as the IR it was (the core IR is an emitter's input, not the passes' again).
    run(k, [xs, n, s, m], count=1, dim=1, mode=UNCHECKED)
    assert (n[0], s[0], m[0]) == (3, 5 - 9 + 2**31 - 1 + 10 - 2**32, 2**31 - 1)  # sum wraps


# ---------------------------------------------------------------- the pipeline


def test_the_pipeline_on_a_bare_target_computes_what_the_kernel_means(rng: Seeded) -> None:
    n = 512  # whole cubes: unchecked, no unit may load past the end
    a = rng.gen.integers(-20, 20, n).astype(np.int32)
    x = rng.gen.standard_normal(n).astype(np.float32)
    i = v("i", E.U32)
    body = [
        ir.Assign("i", POS),
        ir.For("j", c(0, E.I32), ld("a", i, E.I32), c(1, E.I32), (
            ir.Assign("acc", op(B.ADD, v("acc", E.I32), op(B.REM, v("j", E.I32),
                                                           c(3, E.I32)))),)),
        ir.If(op(B.AND, op(B.LT, i, ir.Len("out")),
                 op(B.GT, ld("x", i, E.F32), c(0.0, E.F32))), (
            ir.Store("out", i, ir.Math(M.CLAMP, (op(B.IDIV, v("acc", E.I32), ld("a", i, E.I32)),
                                                  c(-5, E.I32), c(5, E.I32)), E.I32)),), ()),
    ]
    k = kern(body, [("a", "i32[]"), ("x", "f32[]"), ("out", "i32[]")],
             local=[("i", E.U32), ("j", E.I32), ("acc", E.I32)])
    for mode in (CHECKED, UNCHECKED):
        lowered = lower(k, CubeDim(64), mode, BARE, "test")
        assert all(is_canonical(f) for f in nodes(lowered, ir.For))
        same_results(k, lowered, [a, x], [np.full(n, 99, np.int32)], mode=mode)


def test_accesses_at_the_position_are_left_to_a_target_that_checks_them() -> None:
    # With Native.checked_position, x[ABSOLUTE_POS] (directly or through a local set
    # once to it at the top) stays as it is; a local set twice, a computed index and
    # a line array are checked as ever.
    pos = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
    f32, u32 = ir.Elem.F32, ir.Elem.U32
    one = ir.Const(1, u32)
    body = (ir.Assign("i", pos), ir.Assign("j", pos),
            ir.Store("out", ir.Var("i", u32), ir.Load("x", pos, f32)),
            ir.Store("out", ir.Binary(ir.BinOp.ADD, ir.Var("i", u32), one, u32),
                     ir.Load("x", ir.Var("i", u32), f32)),
            ir.Assign("j", ir.Binary(ir.BinOp.ADD, pos, one, u32)),
            ir.Store("out", ir.Var("j", u32), ir.Const(0.0, f32)))
    k = ir.Kernel("k", (ir.Param("x", f32, True), ir.Param("out", f32, True)),
                  (ir.Local("i", u32), ir.Local("j", u32)), (), body)

    def checks(native: Native) -> int:
        lowered = check_accesses(k, in_bounds(k, CubeDim(64)), native)
        return sum(isinstance(n, ir.If) for n in ir.walk(lowered.body))

    assert checks(Native()) == 5  # both loads, all three stores
    assert checks(Native(checked_position=True)) == 2  # out[i + 1], out[j]
