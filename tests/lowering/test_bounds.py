"""The bounds pass (``cubecl_server.lowering.passes.bounds.py``): which accesses it proves inside
their array, which look-alikes it leaves checked, and that emitters lower the proven
ones without their check. The values each access gives on every backend are the
conformance suite's (``suite/test_bounds.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.kernels import matmul, reduce_rows
from cubecl_server import ir
from cubecl_server.backend import CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.client import create_client
from cubecl_server.conformance import kernels as K
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_COUNT,
    CUBE_DIM,
    UNIT_POS,
    Array,
    KernelFunction,
    Line,
    buffer_len,
    f32,
    i32,
    kernel,
    shared,
    u32,
)
from cubecl_server.lowering.passes.bounds import in_bounds
from cubecl_server.lowering.passes.checked import check_accesses
from cubecl_server.lowering.passes.native import Native


def _verdicts(k: KernelFunction, dim: CubeDim, **comptime: object) -> list[tuple[str, bool]]:
    """Each access of ``k`` in program order, as text, and whether it is proven."""
    kernel_ir = k.ir(**comptime)
    proofs = in_bounds(kernel_ir, dim)
    out = []
    for n in ir.walk(kernel_ir.body):
        if isinstance(n, ir.Load):
            out.append((ir.format_expr(n), n in proofs))
        elif isinstance(n, (ir.Store, ir.AtomicStmt)):
            out.append((ir.format_stmt(n).split(" = ")[0], n in proofs))
    return out


def test_guards_and_their_look_alikes() -> None:
    assert _verdicts(K.bounds_guards, CubeDim(64)) == [
        ("o1[i]", True), ("b[i]", False),  # the guard bounds o1, not b
        ("o2[i]", False), ("a[i]", True),  # m = len(a)
        ("o3[i]", False), ("a[i]", False),  # m reassigned
        ("o4[i]", False), ("a[j]", False),  # j reassigned
    ]


def test_shared_local_and_loop_indices() -> None:
    got = dict.fromkeys([t for t, _ in _verdicts(K.bounds_shared, CubeDim(64))], True)
    for text, ok in _verdicts(K.bounds_shared, CubeDim(64)):
        got[text] = got[text] and ok
    assert got["tile[u]"] and got["tile[(63:u32 - u)]"] and got["tile[(u + step)]"]
    assert got["own[t]"] and got["tile[0:i32]"]
    assert not got["tile[(u + 1:u32)]"] and not got["own[(u % 9:u32)]"]
    # The same kernel with cubes of 65 units: unit 64 is past the tile of 64.
    wide = _verdicts(K.bounds_shared, CubeDim(65))
    assert wide[0] == ("tile[u]", False) and wide[3] == ("tile[(63:u32 - u)]", False)


def test_loops_short_circuits_and_select() -> None:
    assert [ok for _, ok in _verdicts(K.bounds_loops, CubeDim(64))] == [
        True, False,  # a[j] under the while guard; after j moved
        True,  # acc_out[i]
        False,
        True,  # a[j] after `if j >= len(a): continue`
        False,
        True, True,  # a[i] on the right of `and`, and in its branch
        False, False, False,  # and_out, sel_out and a[i] inside select
    ]


def test_matmul_and_reduction_keep_only_their_global_checks() -> None:
    mm = _verdicts(matmul, CubeDim(16, 16))
    assert [t for t, ok in mm if not ok] == [
        "a[(((row * n) + t) + tx)]", "b[(((t + ty) * n) + col)]", "c[((row * n) + col)]"]
    red = _verdicts(reduce_rows, CubeDim(256))
    assert [t for t, ok in red if not ok] == ["x[((row * cols) + j)]", "out[row]"]


@kernel
def _traps(a: Array[f32], out: Array[f32], k: u32) -> None:
    tile = shared(f32, 64)
    u = UNIT_POS
    tile[u - 1] = f32(1.0)  # u - 1 wraps for unit 0
    s = i32(u) - 1
    tile[u] = tile[s]  # -1 for unit 0
    i = ABSOLUTE_POS
    j = i
    if j < len(a):
        for t in range(u32(0), u32(3)):
            if t == 1:
                j = j + k
                break
        out[i] = a[j]  # j changed on the way out of the loop
    n = len(a)
    if i < n:
        if k > 2:
            n = k
        out[i] = a[n - 1]
        if i < n:
            out[i] = a[i]  # n is k here when k > 2


def test_traps_are_not_proven() -> None:
    assert _verdicts(_traps, CubeDim(64)) == [
        ("tile[(u - 1:u32)]", False), ("tile[u]", True), ("tile[s]", False),
        ("out[i]", False), ("a[j]", False),
        ("out[i]", False), ("a[(n - 1:u32)]", False),
        ("out[i]", False), ("a[i]", False),
    ]


@kernel
def _lines(x: Array[Line[f32]], out: Array[Line[f32]]) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i]


def test_line_arrays_are_never_proven() -> None:
    # len counts lines and the last one may be partial: a line access stays checked.
    assert _verdicts(_lines, CubeDim(64), line_size=4) == [("out[i]", False), ("x[i]", False)]


def test_the_checked_pass_leaves_out_the_checks_proven() -> None:
    kernel = matmul.ir()
    core = check_accesses(kernel, in_bounds(kernel, CubeDim(16, 16)), Native())
    # The four shared accesses stay unchecked; the global loads and the store are checked.
    assert sorted(n.array for n in ir.walk(core.body) if isinstance(n, ir.BufferLen)) == [
        "a", "b", "c"]
    ifs = [n for n in ir.walk(core.body) if isinstance(n, ir.If)]
    assert len(ifs) - len([n for n in ir.walk(kernel.body) if isinstance(n, ir.If)]) == 3
    unchecked = CpuCompiler().compile(kernel, CubeDim(16, 16), ExecutionMode.UNCHECKED).source
    assert "buffer_len" not in unchecked


def test_views_keep_the_guards_by_len_sound() -> None:
    # view_edges: a[i] and w[i] under i < len(out) are not proven (other arrays); under
    # i < len(w) it is, which holds for a view only because len <= buffer_len.
    assert _verdicts(K.view_edges, CubeDim(64)) == [
        ("out[i]", True), ("a[i]", False), ("w[i]", False), ("w[i]", True), ("w[i]", True)]
    assert _verdicts(_by_buffer_len, CubeDim(64)) == [
        ("a[i]", True), ("out[i]", True), ("a[i]", False)]
    c = create_client("cpu")
    buf = c.create(np.zeros(40, np.float32))
    # Every shape with strides that overlap is refused: len would pass buffer_len.
    for shape, strides in (((5, 4), (1, 1)), ((8,), (0,)), ((3, 3), (2, 1))):
        with pytest.raises(ValueError, match=r"overlap|positive"):
            c.view(buf, shape, strides, 1)
    view = c.view(buf, (3, 4), (9, 2), 5)  # len 12, buffer_len 25
    out = c.create(np.full(40, -1, np.float32))
    _by_buffer_len.launch(c, 1, 64, view, out)
    data = c.read(buf)
    assert (data[5:30] == np.arange(25) + 1).all() and (data[:5] == 0).all() \
        and (data[30:] == 0).all(), "a store proven by buffer_len left the view's span"
    got = c.read(out)
    assert (got[:25] == np.arange(25) + 1).all() and (got[25:] == 0).all(), (
        "checked mode read past the view's span")


@kernel
def _by_buffer_len(a: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < buffer_len(a):
        a[i] = f32(i) + 1.0
    if i < len(out):
        out[i] = a[i]


@kernel
def strided(a: Array[f32], out: Array[f32], step: i32) -> None:
    """A grid-stride loop (a step known at run time only, unsigned), and loops by a
    signed step of unknown sign over a shared array of 16."""
    for b in range(ABSOLUTE_POS, len(out), CUBE_DIM * CUBE_COUNT):
        out[b] = a[b]
    tile = shared(f32, 16)
    for k in range(0, 10, step):  # either sign: 0..9 (counting down runs nothing)
        tile[k] = 1.0
    for j in range(9, -1, step):  # either sign: 9 down to 0, or nothing
        tile[j] = 2.0
    for m in range(0, 20, step):  # up to 19: past the tile
        tile[m] = 3.0


def test_a_runtime_step_keeps_what_its_sign_proves() -> None:
    assert _verdicts(strided, CubeDim(64)) == [
        ("out[b]", True), ("a[b]", False),  # b < len(out) by an unsigned step
        ("tile[k]", True), ("tile[j]", True), ("tile[m]", False),
    ]
