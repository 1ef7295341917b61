"""The language's local arrays, bit casts, ``a[i, j]`` and the later math functions:
the IR they become and the errors a mistake gets, at the line it is on (found by a
``# <tag>`` comment). What they compute is the conformance suite's to check."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    atan2,
    atomic_add,
    atomic_load,
    atomic_max,
    atomic_store,
    atomic_xor,
    bitcast,
    count_ones,
    f32,
    f64,
    i32,
    local_array,
    mul_hi,
    parse_kernel,
    powi,
    shared,
    sign,
    tan,
    u32,
)

E = ir.Elem


def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


def refused(fn: Callable[..., Any], tag: str) -> str:
    """The message of the error ``fn`` gets, which must be at the line marked ``tag``."""
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn)
    assert (info.value.file, info.value.line) == (__file__, marked(tag)), info.value
    return info.value.message


# ---------------------------------------------------------------- local arrays


def local_sum(a: Array[f32], out: Array[f32]) -> None:
    acc = local_array(f32, 4)
    for j in range(4):
        acc[j] = a[ABSOLUTE_POS * 4 + j]
    out[ABSOLUTE_POS] = acc[0] + acc[3] + f32(len(acc))


def test_a_local_array_is_declared_in_the_kernel_and_indexed_by_name() -> None:
    k = parse_kernel(local_sum)
    assert k.local_arrays == (ir.LocalArray("acc", E.F32, 4),)
    assert k.shared == ()
    loads = [n for n in ir.walk(k.body) if isinstance(n, ir.Load) and n.array == "acc"]
    stores = [n for n in ir.walk(k.body) if isinstance(n, ir.Store) and n.array == "acc"]
    assert len(loads) == 2 and len(stores) == 1
    # len() of a local array is its constant size.
    assert ir.Const(4.0, E.F32) in list(ir.walk(k.body))


def local_twice(a: Array[f32]) -> None:
    acc = local_array(f32, 4)
    acc = local_array(f32, 8)  # <local-twice>
    a[0] = acc[0]


def local_size_not_constant(a: Array[f32], n: u32) -> None:
    acc = local_array(f32, n)  # <local-size>
    a[0] = acc[0]


def local_as_value(a: Array[f32]) -> None:
    acc = local_array(f32, 4)
    b = acc  # <local-value>
    a[0] = b


def local_in_expression(a: Array[f32]) -> None:
    a[0] = local_array(f32, 4)[0]  # <local-expr>


def local_atomic(a: Array[i32]) -> None:
    acc = local_array(i32, 4)
    atomic_add(acc, 0, 1)  # <local-atomic>


def local_like_param(a: Array[f32]) -> None:
    a = local_array(f32, 4)  # <local-param>
    a[0] = 1.0


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (local_twice, "local-twice", "local array `acc` is declared twice"),
    (local_size_not_constant, "local-size", "the size of a local array must be an integer "
                                            "constant"),
    (local_as_value, "local-value", "local array `acc` can only be indexed"),
    (local_in_expression, "local-expr", "local_array() must be the whole right-hand side "
                                        "of an assignment: `acc = local_array(f32, 8)`"),
    (local_atomic, "local-atomic", "the first argument of atomic_add() must be an array "
                                   "parameter or a shared array, not `acc`"),
    (local_like_param, "local-param", "`a` is already a variable or parameter; a local "
                                      "array needs a name of its own"),
], ids=lambda v: v if isinstance(v, str) and " " not in v else None)
def test_local_array_mistakes_are_refused_at_their_line(fn: Callable[..., Any], tag: str,
                                                        fragment: str) -> None:
    assert fragment in refused(fn, tag)


# ---------------------------------------------------------------- a[i, j]


def two_d(a: Array[f32], out: Array[f32], r: i32, c: u32) -> None:
    out[ABSOLUTE_POS, 1] = a[r, c]


def test_a_multi_index_is_a_sum_over_the_strides() -> None:
    k = parse_kernel(two_d)
    [store] = k.body
    assert isinstance(store, ir.Store)
    stride = ir.Stride
    # A signed index makes the sum signed: negative positions stay negative.
    want_load = ir.Binary(ir.BinOp.ADD,
                          ir.Binary(ir.BinOp.MUL, ir.Var("r", E.I32),
                                    ir.Cast(stride("a", 0), E.I32), E.I32),
                          ir.Binary(ir.BinOp.MUL, ir.Cast(ir.Var("c", E.U32), E.I32),
                                    ir.Cast(stride("a", 1), E.I32), E.I32), E.I32)
    assert store.value == ir.Load("a", want_load, E.F32)
    # All unsigned (the literal takes u32): no cast at all.
    assert store.index == ir.Binary(
        ir.BinOp.ADD,
        ir.Binary(ir.BinOp.MUL, ir.Builtin(ir.BuiltinName.ABSOLUTE_POS),
                  stride("out", 0), E.U32),
        ir.Binary(ir.BinOp.MUL, ir.Const(1, E.U32), stride("out", 1), E.U32), E.U32)


def multi_index_shared(a: Array[f32]) -> None:
    tile = shared(f32, 16)
    a[0] = tile[1, 2]  # <multi-shared>


def test_a_multi_index_needs_an_array_parameter() -> None:
    assert "`tile` has one dimension" in refused(multi_index_shared, "multi-shared")


# ---------------------------------------------------------------- bit casts


def bits_of(a: Array[f32], out: Array[u32], wide: Array[f64]) -> None:
    out[0] = bitcast(a[0], u32)
    out[1] = bitcast(1.0, u32)
    a[1] = bitcast(out[2], f32)
    out[3] = bitcast(out[4], u32)


def test_a_bit_cast_is_one_node_and_a_literal_takes_the_width() -> None:
    k = parse_kernel(bits_of)
    values = [s.value for s in k.body]
    assert values[0] == ir.Bitcast(ir.Load("a", ir.Const(0, E.I32), E.F32), E.U32)
    assert values[1] == ir.Bitcast(ir.Const(1.0, E.F32), E.U32)
    assert values[2] == ir.Bitcast(ir.Load("out", ir.Const(2, E.I32), E.U32), E.F32)
    assert values[3] == ir.Load("out", ir.Const(4, E.I32), E.U32)  # to its own type


def bitcast_width(a: Array[f32], out: Array[f64]) -> None:
    out[0] = bitcast(a[0], f64)  # <bitcast-width>


def bitcast_bool(a: Array[f32], out: Array[u32]) -> None:
    out[0] = bitcast(a[0], bool)  # <bitcast-type>


def test_bit_cast_mistakes_name_the_widths() -> None:
    msg = refused(bitcast_width, "bitcast-width")
    assert "bitcast() keeps the width: `a[0]` is f32 (32 bits) and f64 has 64" in msg
    msg = refused(bitcast_bool, "bitcast-type")
    assert "the second argument of bitcast() must be one of f32, i32, u32, f64, i64, u64, " \
           "not `bool`" in msg


# ---------------------------------------------------------------- math and atomics


def math_types(a: Array[f32], n: Array[i32]) -> None:
    a[0] = atan2(a[1], 2.0) + tan(a[2])
    n[0] = sign(n[1]) + sign(-3)


def test_the_new_math_functions_type_as_the_old_ones() -> None:
    k = parse_kernel(math_types)
    first, second = (s.value for s in k.body)
    assert ir.Math(ir.MathFn.ATAN2, (ir.Load("a", ir.Const(1, E.I32), E.F32),
                                     ir.Const(2.0, E.F32)), E.F32) in list(ir.walk(first))
    # sign works on integers, and folds on a constant.
    assert second == ir.Binary(ir.BinOp.ADD, ir.Math(ir.MathFn.SIGN, (
        ir.Load("n", ir.Const(1, E.I32), E.I32),), E.I32), ir.Const(-1, E.I32), E.I32)


def tan_of_int(n: Array[i32]) -> None:
    n[0] = tan(n[1])  # <tan-int>


def numpy_arctan2(a: Array[f32]) -> None:
    a[0] = np.arctan2(a[1], a[2])  # <np-arctan2>


def math_atan2(a: Array[f32]) -> None:
    a[0] = math.atan2(a[1], a[2])  # <math-atan2>


def test_math_mistakes_name_the_fix() -> None:
    assert "tan() needs floats, got i32" in refused(tan_of_int, "tan-int")
    for fn, tag in ((numpy_arctan2, "np-arctan2"), (math_atan2, "math-atan2")):
        assert "use `atan2` from cubecl_server.lang" in refused(fn, tag)


def float_max(a: Array[f32], best: Array[f32]) -> None:
    old = atomic_max(best, 0, a[ABSOLUTE_POS])
    a[ABSOLUTE_POS] = old


def float_xor(a: Array[f32]) -> None:
    atomic_xor(a, 0, 1.0)  # <f32-xor>


def test_atomic_max_takes_f32_and_xor_does_not() -> None:
    [atomic, _] = parse_kernel(float_max).body
    assert isinstance(atomic, ir.AtomicStmt) and atomic.op is ir.AtomicOp.MAX
    assert "atomic_xor() needs an array of i32, u32, i64, u64, but `a` holds f32" in \
        refused(float_xor, "f32-xor")


# ---------------------------------------------------------------- integer functions


def int_functions(a: Array[u32], b: Array[i32], f: Array[f32]) -> None:
    a[0] = count_ones(b[1]) + count_ones(7)
    b[0] = mul_hi(b[1], 3)
    f[0] = powi(f[1], 3) + powi(2.0, b[2])


def test_integer_functions_type_as_cubecl_has_them() -> None:
    k = parse_kernel(int_functions)
    first, second, third = (s.value for s in k.body)
    # The bit counts are u32 whatever they count; a literal's bits are an i32's.
    assert first == ir.Binary(ir.BinOp.ADD, ir.Math(ir.MathFn.COUNT_ONES, (
        ir.Load("b", ir.Const(1, E.I32), E.I32),), E.U32), ir.Math(
        ir.MathFn.COUNT_ONES, (ir.Const(7, E.I32),), E.U32), E.U32)
    assert second == ir.Math(ir.MathFn.MUL_HI, (ir.Load("b", ir.Const(1, E.I32), E.I32),
                                                 ir.Const(3, E.I32)), E.I32)
    # powi: a float base (a literal one is f32) and an i32 exponent.
    powis = [n for n in ir.walk(third) if isinstance(n, ir.Math)]
    assert [(m.args[0].type, m.args[1].type, m.type) for m in powis] == [
        (E.F32, E.I32, E.F32), (E.F32, E.I32, E.F32)]


def count_of_float(f: Array[f32], a: Array[u32]) -> None:
    a[0] = count_ones(f[0])  # <count-float>


def powi_of_int(a: Array[i32]) -> None:
    a[0] = powi(a[1], 2)  # <powi-int>


def powi_float_exponent(f: Array[f32]) -> None:
    f[0] = powi(f[1], f[2])  # <powi-float-n>


def test_integer_function_mistakes_are_refused() -> None:
    assert "count_ones() needs integers, got f32" in refused(count_of_float, "count-float")
    assert "powi() needs a float base, got i32" in refused(powi_of_int, "powi-int")
    assert "powi()'s exponent is i32" in refused(powi_float_exponent, "powi-float-n")


def load_and_store(a: Array[u32], flags: Array[u32]) -> None:
    atomic_store(flags, 0, 1)
    a[0] = atomic_load(flags, 1)


def store_as_value(flags: Array[u32]) -> None:
    x = atomic_store(flags, 0, 1)  # <store-value>
    flags[1] = x


def test_atomic_load_and_store_are_an_or_of_zero_and_an_exchange() -> None:
    store, load, use = parse_kernel(load_and_store).body
    assert store == ir.AtomicStmt(ir.AtomicOp.EXCHANGE, "flags", ir.Const(0, E.I32),
                                  ir.Const(1, E.U32), None, None)
    assert isinstance(load, ir.AtomicStmt) and load.op is ir.AtomicOp.OR
    assert load.value == ir.Const(0, E.U32) and load.result is not None
    assert isinstance(use, ir.Store) and use.value == ir.Var(load.result, E.U32)
    assert "atomic_store() has no value" in refused(store_as_value, "store-value")
