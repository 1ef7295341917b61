"""Slices, workgroup_uniform_load and the plane operations built from others, in the
frontend: the IR they lower to, and the uses they refuse with a message naming what is
wrong."""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

import pytest

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_POS,
    UNIT_POS,
    Array,
    Line,
    atomic_add,
    bool_,
    f32,
    local_array,
    parse_kernel,
    plane_elect,
    plane_shuffle_down,
    plane_shuffle_up,
    shared,
    sync_cube,
    u32,
    u64,
    workgroup_uniform_load,
)


def refused(fn: Callable[..., Any], comptime: dict[str, object] | None = None) -> str:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, comptime or {})
    return str(info.value)


def test_a_slice_access_is_the_array_at_start_plus_index_inside_the_slice() -> None:
    def k(a: Array[f32], out: Array[f32], lo: u32) -> None:
        s = a[lo:lo + 4]
        out[0] = s[ABSOLUTE_POS]

    kern = parse_kernel(k, {})
    (load,) = [n for n in ir.walk(kern.body) if isinstance(n, ir.Load)]
    assert load.array == "a"
    index = load.index
    assert isinstance(index, ir.Select) and index.b == ir.Const(0xFFFFFFFF, ir.Elem.U32)
    assert ir.format_expr(index.cond) == "(ABSOLUTE_POS < s_len)"
    assert ir.format_expr(index.a) == "(s_start + ABSOLUTE_POS)"


def test_a_64_bit_index_is_tested_at_64_bits() -> None:
    def k(a: Array[f32], out: Array[f32], j: u64) -> None:
        s = a[1:]
        out[0] = s[j]

    (load,) = [n for n in ir.walk(parse_kernel(k, {}).body) if isinstance(n, ir.Load)]
    assert ir.format_expr(load.index.cond) == "(j < u64(s_len))"


def test_constant_bounds_give_a_constant_length() -> None:
    def k(a: Array[f32]) -> None:
        s = a[3:10]
        a[0] = f32(len(s))

    body = parse_kernel(k, {}).body
    assert ir.Assign("s_len_new", ir.Const(7, ir.Elem.U32)) in body


@pytest.mark.parametrize("src, message", [
    ("s = a[1:4:2]\n    a[0] = s[0]", "a slice takes no step"),
    ("s = a[1:4]\n    s = b[0:2]", "`s` is a slice of `a` (line 2)"),
    ("s = a[1:4]\n    s = 1.0", "`s` is a slice: assign it only another slice"),
    ("s = a[1:4]\n    a[0] = s", "slice `s` can only be indexed"),
    ("a[0] = a[1:4][0]", "a slice `a[lo:hi]` is a view to assign to a name"),
    ("x = 1.0\n    x = a[0:2]", "`x` is already a variable"),
    ("s = a[1:4]\n    a[0] = s[0, 1]", "slice `s` has one dimension"),
    ("s = a[1:4]\n    a[0] = f32(s.shape[0])", "`.shape` needs an array parameter"),
    ("s = l[0:2]", "read a line at a time: slices are of arrays of elements"),
    ("s = local_array(u32, 4)\n    t = s[0:2]\n    atomic_add(t, 0, u32(1))",
     "must be an array parameter or a shared array"),
])
def test_misuses_are_refused(src: str, message: str) -> None:
    # Each case is a kernel of its own source (a function parsed from a string).
    ns: dict[str, Any] = {"Array": Array, "f32": f32, "u32": u32, "Line": Line,
                          "local_array": local_array, "atomic_add": atomic_add}
    code = f"def k(a: Array[f32], b: Array[f32], l: Array[Line[f32]]) -> None:\n    {src}\n"
    path = f"<slices {abs(hash(src))}>"
    linecache.cache[path] = (len(code), None, code.splitlines(True), path)
    exec(compile(code, path, "exec"), ns)
    assert message in refused(ns["k"], {"line_size": 4})


def test_workgroup_uniform_load_is_a_load_between_two_barriers() -> None:
    def k(a: Array[u32]) -> None:
        tile = shared(u32, 8)
        n = workgroup_uniform_load(tile[CUBE_POS % 8])
        for _ in range(n):
            sync_cube()

    body = parse_kernel(k, {}).body
    assert [type(s) for s in body[:3]] == [ir.Barrier, ir.Assign, ir.Barrier]
    assert body[1].value == ir.Load("tile", ir.Binary(
        ir.BinOp.REM, ir.Builtin(ir.BuiltinName.CUBE_POS), ir.Const(8, ir.Elem.U32),
        ir.Elem.U32), ir.Elem.U32)


@pytest.mark.parametrize("src, message", [
    ("n = workgroup_uniform_load(t[UNIT_POS])", "reads an element chosen by the unit"),
    ("if UNIT_POS < 4:\n        n = workgroup_uniform_load(t[0])",
     "workgroup_uniform_load() is reached under control flow that depends on the unit"),
    ("n = workgroup_uniform_load(a[0])", "`a` is not a shared array or a slice of one"),
    ("n = workgroup_uniform_load(t)", "takes one element of a shared array"),
])
def test_workgroup_uniform_load_misuses(src: str, message: str) -> None:
    ns: dict[str, Any] = {"Array": Array, "u32": u32, "shared": shared, "UNIT_POS": UNIT_POS,
                          "workgroup_uniform_load": workgroup_uniform_load}
    code = f"def k(a: Array[u32]) -> None:\n    t = shared(u32, 8)\n    {src}\n"
    path = f"<uniform {abs(hash(src))}>"
    linecache.cache[path] = (len(code), None, code.splitlines(True), path)
    exec(compile(code, path, "exec"), ns)
    assert message in refused(ns["k"])


def test_shuffle_up_down_and_elect_need_no_node_of_their_own() -> None:
    def k(a: Array[u32], b: Array[bool_]) -> None:
        a[0] = plane_shuffle_up(a[1], 2) + plane_shuffle_down(a[2], 1)
        b[0] = plane_elect()

    text = ir.format_kernel(parse_kernel(k, {}))
    # A unit whose source is outside the plane reads its own lane: it keeps its value.
    assert ("plane_shuffle(a[1:i32], select((2:u32 <= UNIT_POS_PLANE), (UNIT_POS_PLANE - "
            "2:u32), UNIT_POS_PLANE))") in text
    assert ("plane_shuffle(a[2:i32], select((1:u32 < (PLANE_DIM - UNIT_POS_PLANE)), "
            "(UNIT_POS_PLANE + 1:u32), UNIT_POS_PLANE))") in text
    assert "(trailing_zeros(plane_ballot(True:bool)) == UNIT_POS_PLANE)" in text


def test_a_float_to_a_typed_integer_power_suggests_powi() -> None:
    def k(a: Array[f32], n: u32) -> None:
        a[0] = a[0] ** n

    assert "use powi(a[0], n)" in refused(k)
