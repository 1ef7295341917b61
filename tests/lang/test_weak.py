"""Weak locals: a local assigned only literals and comptime values, and the variable of a
``range()`` over such bounds, take the type of the first typed value they meet, so that
natural GPU code needs no cast; typed values of two types still mismatch. Errors are
checked with the lines they name (found by a ``# <tag>`` comment)."""

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
    UNIT_POS,
    UNIT_POS_Y,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    cube_fn,
    f16,
    f32,
    f64,
    i32,
    i64,
    kernel,
    parse_kernel,
    shared,
    sync_cube,
    u32,
    u64,
)

E = ir.Elem


def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


def refused(fn: Callable[..., Any], **comptime: Any) -> KernelSyntaxError:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, comptime)
    assert info.value.file == __file__
    return info.value


def local_types(fn: Callable[..., Any], **comptime: Any) -> dict[str, E]:
    return {loc.name: loc.elem for loc in parse_kernel(fn, comptime).locals}


# ---------------------------------------------------------------- the two shapes


def tree_reduction(a: Array[f32], out: Array[f32], *, block: Comptime[int]) -> None:
    s = shared(f32, block)
    t = UNIT_POS
    s[t] = a[ABSOLUTE_POS]
    sync_cube()
    stride = block // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        sync_cube()
        stride = stride // 2
    if t == 0:
        out[0] = s[0]


def tiled_loop(a: Array[f32], out: Array[f32], *, tile: Comptime[int]) -> None:
    ta = shared(f32, tile * tile)
    ty = UNIT_POS_Y
    acc = 0.0
    for e in range(tile):
        acc += ta[ty * tile + e]
    out[ty] = acc


def test_a_stride_from_comptime_values_takes_u32_from_unit_pos() -> None:
    types = local_types(tree_reduction, block=64)
    assert types["stride"] is E.U32
    k = parse_kernel(tree_reduction, {"block": 64})
    assert ir.Assign("stride", ir.Const(32, E.U32)) in k.body


def test_a_loop_over_a_comptime_bound_counts_in_the_type_it_meets() -> None:
    k = parse_kernel(tiled_loop, {"tile": 16})
    assert {loc.name: loc.elem for loc in k.locals}["e"] is E.U32
    [loop] = [s for s in ir.walk(k.body) if isinstance(s, ir.For)]
    assert (loop.start, loop.stop, loop.step) == (ir.Const(0, E.U32), ir.Const(16, E.U32),
                                                  ir.Const(1, E.U32))


# ---------------------------------------------------------------- what fixes the type


def never_meets(out: Array[i32], fout: Array[f32], *, n: Comptime[int]) -> None:
    x = n * 2
    y = 0.5
    out[UNIT_POS] = i32(x)
    fout[UNIT_POS] = f32(y)


def test_a_weak_local_that_meets_no_type_is_i32_or_f32() -> None:
    # A cast converts a weak local, it does not give it a type.
    types = local_types(never_meets, n=3)
    assert (types["x"], types["y"]) == (E.I32, E.F32)


def accumulate(a: Array[u64], out: Array[u64], fa: Array[f64], fout: Array[f64]) -> None:
    acc = 0
    facc = 0.0
    for i in range(len(a)):
        acc += a[i]
        facc = facc + fa[i]
    out[0] = acc
    fout[0] = facc


def test_an_accumulator_started_at_a_literal_takes_the_type_added_to_it() -> None:
    types = local_types(accumulate)
    assert (types["acc"], types["facc"], types["i"]) == (E.U64, E.F64, E.U32)


def test_accumulators_of_u64_and_f64_sum_like_numpy() -> None:
    rng = np.random.default_rng()
    n = int(rng.integers(5, 200))
    a = rng.integers(0, 2**63, n, dtype=np.uint64)
    fa = rng.standard_normal(n)
    c = create_client("cpu")
    out, fout = c.empty(1, np.uint64), c.empty(1, np.float64)
    kernel(accumulate).launch(c, CubeCount(1), CubeDim(1), c.create(a), out, c.create(fa),
                              fout)
    assert c.read(out)[0] == a.sum(dtype=np.uint64)  # both wrap modulo 2**64
    np.testing.assert_allclose(c.read(fout)[0], fa.sum(), rtol=1e-12)


def weak_float(a: Array[f16], out: Array[f16]) -> None:
    m = -60000.0
    for j in range(len(a)):
        m = max(m, a[j])
    out[0] = m


def test_a_weak_float_takes_the_float_type_it_meets() -> None:
    assert local_types(weak_float)["m"] is E.F16


def chained(out: Array[i64], *, n: Comptime[int]) -> None:
    half = n // 2
    quarter = half // 2
    for k in range(quarter, half):
        out[k] = i64(k)
    if out[0] < quarter:
        out[0] = half


def test_weak_locals_built_from_one_another_share_the_type_one_of_them_meets() -> None:
    types = local_types(chained, n=16)
    assert (types["half"], types["quarter"], types["k"]) == (E.I64, E.I64, E.I64)


@cube_fn
def below(x: Any, y: Any) -> Any:
    return x < y


def through_a_helper(out: Array[u32], *, n: Comptime[int]) -> None:
    limit = n - 1
    if below(UNIT_POS, limit):
        out[UNIT_POS] = limit


def test_a_weak_local_passed_to_a_helper_takes_the_type_it_meets_there() -> None:
    assert local_types(through_a_helper, n=8)["limit"] is E.U32


def wide_constant(a: Array[i64]) -> None:
    x = 3000000000
    if a[0] < x:
        a[0] = x


def wide_constant_alone(a: Array[i64]) -> None:
    x = 3000000000  # <wide>
    a[0] = i64(x)


def test_a_constant_needs_to_fit_only_the_type_met_later() -> None:
    assert local_types(wide_constant)["x"] is E.I64
    err = refused(wide_constant_alone)
    assert err.line == marked("wide")
    assert "3000000000 does not fit in i32" in err.message
    assert "i64(3000000000)" in err.message


# ---------------------------------------------------------------- still refused


def two_typed_ints(out: Array[u32], n: i32) -> None:
    if UNIT_POS < n:  # <typed>
        out[0] = u32(1)


def test_two_typed_integers_of_different_types_still_mismatch() -> None:
    err = refused(two_typed_ints)
    assert err.line == marked("typed")
    assert err.message.startswith("type mismatch in `UNIT_POS < n`: u32 vs i32")
    assert "cast one side, e.g. u32(n)" in err.message


def conflicting_uses(a: Array[i64], out: Array[u32], *, block: Comptime[int]) -> None:
    n = block // 2
    if UNIT_POS < n:  # <first-use>
        out[0] = u32(1)
    x = a[0]
    if x < n:  # <second-use>
        out[1] = u32(2)


def test_the_first_use_fixes_the_type_and_a_conflicting_one_names_both_lines() -> None:
    err = refused(conflicting_uses, block=8)
    assert err.line == marked("second-use")
    assert err.message.startswith("type mismatch in `x < n`: i64 vs u32")
    assert f"`n` is u32, from `UNIT_POS < n` on line {marked('first-use')}" in err.message


def negative_then_unsigned(out: Array[u32]) -> None:
    x = -1  # <negative>
    if UNIT_POS < x:  # <meets-u32>
        out[0] = u32(1)


def test_a_constant_that_does_not_fit_the_type_met_names_where_it_was_met() -> None:
    err = refused(negative_then_unsigned)
    assert err.line == marked("negative")
    assert "the constant -1 does not fit in u32" in err.message
    assert f"from `UNIT_POS < x` on line {marked('meets-u32')}" in err.message


def int_meets_float(a: Array[f32]) -> None:
    n = 4
    a[0] = a[0] * n  # <int-float>


def test_a_weak_integer_never_becomes_a_float() -> None:
    err = refused(int_meets_float)
    assert err.line == marked("int-float")
    assert err.message.startswith("type mismatch in `a[0] * n`: f32 vs i32")
    assert "the first integer type it meets fixes it" in err.message
    assert "f32(n)" in err.message


def counting_down(a: Array[f32], *, n: Comptime[int]) -> None:
    for i in range(n - 1, -1, -1):
        a[UNIT_POS + i] = 0.0  # <down>


def counting_down_alone(a: Array[f32], *, n: Comptime[int]) -> None:
    for i in range(n - 1, -1, -1):
        a[i] = 0.0


def test_a_loop_variable_counting_down_stays_signed() -> None:
    assert local_types(counting_down_alone, n=4)["i"] is E.I32
    err = refused(counting_down, n=4)
    assert err.line == marked("down")
    assert "u32 vs i32" in err.message
    assert "a loop variable counting down: it stays signed" in err.message


def assigned_in_its_loop(a: Array[f32], *, n: Comptime[int]) -> None:
    for i in range(n):
        i = UNIT_POS  # <in-loop>
        a[i] = 0.0


def test_a_weak_loop_variable_still_cannot_be_assigned_in_its_loop() -> None:
    err = refused(assigned_in_its_loop, n=4)
    assert err.line == marked("in-loop")
    assert "cannot assign to `i` inside the loop it counts" in err.message


def loop_variable_used_after(out: Array[u64], *, n: Comptime[int]) -> None:
    i = 0
    for i in range(n):
        out[i] = u64(0)
    out[0] = i


def test_a_loop_variable_assigned_before_its_loop_is_one_weak_local() -> None:
    assert local_types(loop_variable_used_after, n=3)["i"] is E.U64


def i32_unchanged(a: Array[i32], *, n: Comptime[int]) -> None:
    m = n + 1
    for j in range(m):
        a[j] = j * m


def test_code_that_met_only_i32_compiles_as_before() -> None:
    k = parse_kernel(i32_unchanged, {"n": 5})
    assert {loc.name: loc.elem for loc in k.locals} == {"m": E.I32, "j": E.I32}
    assert k.body[0] == ir.Assign("m", ir.Const(6, E.I32))
