"""Lines in the kernel language: ``Array[Line[T]]``, the ``line_size`` launch keyword,
what each operation becomes in the IR, and the errors a misuse gets. (The conformance
suite's ``test_lines.py`` runs them on every backend.)"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import create_client
from cubecl_server.config import reload_config
from cubecl_server.errors import CompilationError, KernelSyntaxError, LaunchError
from cubecl_server.ir_check import check_kernel
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    Line,
    bitcast,
    dot,
    f32,
    i32,
    kernel,
    line,
    line_max,
    line_size,
    line_sum,
    parse_kernel,
    plane_ballot,
    select,
    sqrt,
    u32,
)

F32 = ir.Elem.F32


@kernel
def scaled(x: Array[Line[f32]], out: Array[Line[f32]], a: f32) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        v = x[i] * a + 1.0
        out[i] = select(v > 0.0, sqrt(v), line(line_sum(v) + v[0], line_size(x)))


@kernel
def scaled_plain(x: Array[f32], out: Array[f32], a: f32) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        v = x[i] * a + 1.0
        out[i] = select(v > 0.0, sqrt(v), v + v)


def test_line_size_one_is_the_plain_kernel() -> None:
    # A line of one is its element: the same IR, but for the name, as Array[f32].
    one, plain = scaled.ir(line_size=1), scaled_plain.ir()
    assert one == scaled.ir() and one.params == plain.params
    assert one.body == plain.body and one.locals == plain.locals


def test_each_line_size_is_a_kernel_of_its_own() -> None:
    four = scaled.ir(line_size=4)
    assert [p.line for p in four.params] == [4, 4, 1]
    assert four.param("x").value_type is ir.Line(F32, 4)
    assert {scaled.ir(line_size=n).digest for n in (1, 2, 4, 8, 16)}.__len__() == 5
    # A dict by name is the same kernel as the int for all.
    assert scaled.ir(line_size={"x": 4, "out": 4}) == four
    check_kernel(four, "test")
    text = ir.format_kernel(four)
    assert "x: Array[Line[f32, 4]]" in text and "line_sum(v)" in text
    assert "line(a, 4)" in text and "var v: Line[f32, 4]" in text


def test_line_params_keep_the_digest_of_kernels_without_lines() -> None:
    p = ir.Param("x", F32, True)
    assert ir.to_json(p) == '{"node":"Param","name":"x","elem":{"enum":"Elem","v":"f32"},' \
                            '"array":true}'
    four = ir.Param("x", F32, True, 4)
    assert ir.from_json(ir.to_json(four)) == four and '"line":4' in ir.to_json(four)


@pytest.mark.parametrize(("value", "error", "words"), [
    ({"x": 4}, TypeError, "leaves out `out`"),
    ({"x": 4, "out": 4, "y": 2}, TypeError, "names `y`, which is not a line array"),
    (3, ValueError, "line_size of `x` in kernel `scaled` is 3"),
    (2.0, TypeError, "must be an int"),
])
def test_bad_line_sizes_are_refused_naming_what(value: Any, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        scaled.ir(line_size=value)


def test_line_size_on_a_kernel_without_lines_is_refused() -> None:
    with pytest.raises(TypeError, match="has no line arrays"):
        scaled_plain.ir(line_size=4)


def test_reductions_dot_and_elements() -> None:
    @kernel
    def reduce(x: Array[Line[i32]], y: Array[Line[i32]], out: Array[i32]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = line_max(x[i]) + dot(x[i], y[i]) + x[i][line_size(x) - 1]

    k = reduce.ir(line_size=8)
    (store,) = [n for n in ir.walk(k.body) if isinstance(n, ir.Store)]
    kinds = {type(n) for n in ir.walk(store.value)}
    assert {ir.LineReduce, ir.LineElement} <= kinds
    fns = {n.fn for n in ir.walk(store.value) if isinstance(n, ir.LineReduce)}
    assert fns == {ir.ReduceFn.MAX, ir.ReduceFn.SUM}
    assert [n.index for n in ir.walk(store.value) if isinstance(n, ir.LineElement)] == [7]
    # At line size 1 the same code is plain scalar code.
    one = reduce.ir(line_size=1)
    assert not any(isinstance(n, (ir.LineReduce, ir.LineElement)) for n in ir.walk(one.body))


def _refused(fn: Any, size: int = 4) -> str:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, {"line_size": size})
    return str(info.value)


def test_a_line_of_bools_is_no_condition() -> None:
    def k(x: Array[Line[f32]], out: Array[Line[f32]]) -> None:
        if x[0] > 0.0:
            out[0] = x[0]
    assert "one bool per element" in _refused(k)


def test_lines_of_different_sizes_do_not_mix() -> None:
    def k(x: Array[Line[f32]], y: Array[Line[f32]], out: Array[Line[f32]]) -> None:
        out[0] = x[0] + y[0]
    with pytest.raises(KernelSyntaxError, match="lines of different sizes"):
        parse_kernel(k, {"line_size": {"x": 2, "y": 4, "out": 2}})


def test_misuses_name_the_fix() -> None:
    def short(x: Array[Line[f32]], out: Array[Line[f32]]) -> None:
        out[0] = select(x[0] > 0.0 and x[1] > 0.0, x[0], x[1])
    assert "use select() per element" in _refused(short)

    def bits(x: Array[Line[f32]], out: Array[u32]) -> None:
        out[0] = bitcast(x[0], u32)
    assert "holds u32 but the value is Line[u32, 4]" in _refused(bits)

    def past(x: Array[Line[f32]], out: Array[f32]) -> None:
        out[0] = x[0][4]
    assert "element 4 of `x[0]`, a line of 4" in _refused(past)

    def float_lane(x: Array[Line[f32]], out: Array[f32], k: f32) -> None:
        out[0] = x[0][k]
    assert "chosen by an integer, not `k` (f32)" in _refused(float_lane)

    def set_past(x: Array[Line[f32]]) -> None:
        v = x[0]
        v[4] = 1.0
    assert "element 4 of `v`, a line of 4" in _refused(set_past)

    def ballot(x: Array[Line[f32]], out: Array[u32]) -> None:
        out[0] = plane_ballot(x[0] > 0.0)
    assert "ballot each lane" in _refused(ballot)

    def sliced(x: Array[Line[f32]], out: Array[f32]) -> None:
        out[0] = line_sum(x[0][1:3])
    assert "take one lane" in _refused(sliced)

    def mismatch(x: Array[Line[f32]], out: Array[Line[f32]], n: i32) -> None:
        out[0] = x[0] + n
    assert "type mismatch" in _refused(mismatch)

    def two_d(x: Array[Line[f32]], out: Array[Line[f32]]) -> None:
        out[0] = x[0, 1]
    assert "index it with one integer" in _refused(two_d)


def test_malformed_line_ir_is_refused_by_the_checker() -> None:
    line4 = ir.Line(F32, 4)
    x = ir.Param("x", F32, True, 4)
    load = ir.Load("x", ir.Const(0, ir.Elem.U32), line4)

    def bad(value: ir.Expr, *params: ir.Param) -> str:
        k = ir.Kernel("bad", (x, *params), (), (), (ir.Store("x", ir.Const(0, ir.Elem.U32),
                                                            value),))
        with pytest.raises(CompilationError) as info:
            check_kernel(k, "test")
        return info.value.message

    assert "not one type" in bad(ir.Binary(ir.BinOp.ADD, load, ir.Const(1.0, F32), line4))
    assert "short-circuits" in bad(ir.Select(
        ir.Binary(ir.BinOp.AND, ir.Binary(ir.BinOp.LT, load, load, ir.Line(ir.Elem.BOOL, 4)),
                  ir.Binary(ir.BinOp.LT, load, load, ir.Line(ir.Elem.BOOL, 4)),
                  ir.Line(ir.Elem.BOOL, 4)), load, load, line4))
    assert "not a constant in 0..3" in bad(ir.LineFill(ir.LineElement(load, 4, F32), line4))
    assert "a line's size is one of" in bad(ir.LineFill(ir.Const(0.0, F32), ir.Line(F32, 3)))
    with pytest.raises(CompilationError, match="has line 4"):
        check_kernel(ir.Kernel("bad", (x, ir.Param("s", F32, False, 4)), (), (), ()), "test")


def test_unchecked_launch_refuses_a_partial_line(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Any) -> None:
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUBECL_EXECUTION_MODE", "unchecked")
    reload_config()
    try:
        c = create_client("cpu")
    finally:
        monkeypatch.delenv("CUBECL_EXECUTION_MODE")
        reload_config()
    x, out = c.create(np.ones(10, np.float32)), c.empty(12, np.float32)
    with pytest.raises(LaunchError, match="'x' holds 10 elements, not a whole number of "
                                          "lines of 4"):
        scaled.launch(c, 1, 64, x, out, np.float32(2), line_size=4)
    scaled.launch(c, 1, 64, x, out, np.float32(2), line_size=2)


def test_a_line_size_the_device_lacks_is_a_launch_error(tmp_path: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path))
    c = create_client("example")
    fewer = dataclasses.replace(c.capabilities, line_sizes=(1, 2))
    monkeypatch.setattr(type(c), "capabilities", property(lambda self: fewer))
    x, out = c.create(np.ones(8, np.float32)), c.empty(8, np.float32)
    with pytest.raises(LaunchError, match=r"line size 4 of 'x'.*line_sizes is \(1, 2\)"):
        scaled.launch(c, 1, 64, x, out, np.float32(2), line_size=4)


def test_a_dialect_without_the_size_refuses_the_kernel() -> None:
    from cubecl_server.backend import CubeDim
    from cubecl_server.backend.compiling import ExecutionMode
    from cubecl_server.backend.lowering import CEmitter, StandardC

    with pytest.raises(CompilationError, match=r"Line\[f32, 4\].*Capabilities.line_sizes"):
        CEmitter(scaled.ir(line_size=4), CubeDim(64), ExecutionMode.CHECKED,
                 StandardC()).program()
