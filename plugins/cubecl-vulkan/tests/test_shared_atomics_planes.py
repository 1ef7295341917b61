"""Shared memory with barriers, atomics and plane (subgroup) operations, end to end.

These kernels are written as IR directly (the IR docstrings are their semantics),
so they test the backend without depending on how the kernel language spells them.
"""

from __future__ import annotations

import numpy as np
import pytest
from vk_support import run

from cubecl_server import ir
from cubecl_server.backend.lowering import fold_count
from cubecl_server.client import ComputeClient
from cubecl_server.kernel import CubeCount

E, B = ir.Elem, ir.BuiltinName
POS = ir.Builtin(B.ABSOLUTE_POS)
UNIT = ir.Builtin(B.UNIT_POS)


def u32(v: int) -> ir.Const:
    return ir.Const(v, E.U32)


def test_shared_memory_reduction(shared_client: ComputeClient) -> None:
    acc, k = ir.Var("acc", E.F32), ir.Var("k", E.U32)
    body = (
        ir.Store("sh", UNIT, ir.Load("x", POS, E.F32)),
        ir.Barrier(),
        ir.If(ir.Binary(ir.BinOp.EQ, UNIT, u32(0), E.BOOL), then=(
            ir.Assign("acc", ir.Const(0.0, E.F32)),
            ir.For("k", u32(0), u32(64), ir.Const(1, E.U32), body=(
                ir.Assign("acc", ir.Binary(ir.BinOp.ADD, acc, ir.Load("sh", k, E.F32),
                                           E.F32)),)),
            ir.Store("out", ir.Builtin(B.CUBE_POS), acc),
        ), orelse=()),
    )
    kernel = ir.Kernel("block_sum", (ir.Param("x", E.F32, True), ir.Param("out", E.F32, True)),
                       (ir.Local("acc", E.F32), ir.Local("k", E.U32)),
                       (ir.SharedArray("sh", E.F32, 64),), body)
    c = shared_client
    x = np.random.default_rng().standard_normal(64 * 10, dtype=np.float32)
    out = c.empty(10, np.float32)
    run(c, kernel, 10, 64, [c.create(x), out])
    np.testing.assert_allclose(c.read(out), x.reshape(10, 64).sum(axis=1), rtol=1e-5,
                               atol=1e-5)


def test_atomics(shared_client: ComputeClient) -> None:
    x_i = ir.Load("x", POS, E.I32)
    bucket = ir.Cast(ir.Binary(ir.BinOp.BITAND, x_i, ir.Const(15, E.I32), E.I32), E.U32)
    in_range = ir.Binary(ir.BinOp.LT, POS, ir.Len("x"), E.BOOL)
    body = (ir.If(in_range, then=(
        ir.AtomicStmt(ir.AtomicOp.ADD, "hist", bucket, u32(1), None, None),
        ir.AtomicStmt(ir.AtomicOp.MAX, "stats", ir.Const(0, E.I32), x_i, None, None),
        ir.AtomicStmt(ir.AtomicOp.MIN, "stats", ir.Const(1, E.I32), x_i, None, None),
        ir.AtomicStmt(ir.AtomicOp.SUB, "stats", ir.Const(2, E.I32), x_i, None, "old"),
        ir.AtomicStmt(ir.AtomicOp.COMPARE_EXCHANGE, "stats", ir.Const(3, E.I32),
                      ir.Cast(ir.Binary(ir.BinOp.ADD, POS, u32(1), E.U32), E.I32),
                      ir.Const(0, E.I32), "won"),
        ir.Store("olds", POS, ir.Var("won", E.I32)),
        ir.AtomicStmt(ir.AtomicOp.EXCHANGE, "stats", ir.Const(4, E.I32), ir.Const(9, E.I32),
                      None, None),
        # Checked mode: an atomic outside the array does nothing.
        ir.AtomicStmt(ir.AtomicOp.ADD, "hist", u32(1000), u32(1), None, None),
    ), orelse=()),)
    kernel = ir.Kernel(
        "atomics", (ir.Param("x", E.I32, True), ir.Param("hist", E.U32, True),
                    ir.Param("stats", E.I32, True), ir.Param("olds", E.I32, True)),
        (ir.Local("old", E.I32), ir.Local("won", E.I32)), (), body)
    c = shared_client
    n = 1000
    x = np.random.default_rng().integers(-10**6, 10**6, n, dtype=np.int32)
    hist, olds = c.create(np.zeros(16, np.uint32)), c.empty(n, np.int32)
    stats = c.create(np.array([-2**31, 2**31 - 1, 0, 0, 0], np.int32))
    run(c, kernel, -(-n // 64), 64, [c.create(x), hist, stats, olds])
    np.testing.assert_array_equal(c.read(hist), np.bincount(x & 15, minlength=16))
    s = c.read(stats)
    assert (s[0], s[1], s[2], s[4]) == (x.max(), x.min(), -x.astype(np.int64).sum(), 9)
    o = c.read(olds)
    assert np.count_nonzero(o == 0) == 1 and s[3] == np.flatnonzero(o == 0)[0] + 1


def test_f32_atomic_add(shared_client: ComputeClient) -> None:
    c = shared_client
    if E.F32 not in c.capabilities.atomics:
        pytest.skip("no f32 atomic add on this device")
    body = (ir.AtomicStmt(ir.AtomicOp.ADD, "total", u32(0), ir.Load("x", POS, E.F32), None,
                          None),)
    kernel = ir.Kernel("fsum", (ir.Param("x", E.F32, True), ir.Param("total", E.F32, True)),
                       (), (), body)
    x = np.random.default_rng().integers(0, 100, 512).astype(np.float32)
    total = c.create(np.zeros(1, np.float32))
    run(c, kernel, 8, 64, [c.create(x), total])
    assert c.read(total)[0] == x.sum()


def test_plane_operations(shared_client: ComputeClient) -> None:
    c = shared_client
    size = c.capabilities.plane_size
    if size is None:
        pytest.skip("no subgroup operations on this device")
    v = ir.Load("x", POS, E.F32)
    lane = ir.Binary(ir.BinOp.BITAND, ir.Binary(ir.BinOp.ADD, ir.Builtin(B.UNIT_POS_PLANE),
                                                u32(1), E.U32), u32(size - 1), E.U32)
    n = ir.Len("x")
    body = (
        ir.Store("out", POS, ir.PlaneOp(ir.PlaneFn.SUM, v, None, E.F32)),
        ir.Store("out", ir.Binary(ir.BinOp.ADD, POS, n, E.U32),
                 ir.PlaneOp(ir.PlaneFn.MAX, v, None, E.F32)),
        ir.Store("out", ir.Binary(ir.BinOp.ADD, POS, ir.Binary(ir.BinOp.MUL, n, u32(2), E.U32),
                                  E.U32), ir.PlaneOp(ir.PlaneFn.BROADCAST, v, lane, E.F32)),
        ir.Store("dims", POS, ir.Builtin(B.PLANE_DIM)),
    )
    kernel = ir.Kernel("planes", (ir.Param("x", E.F32, True), ir.Param("out", E.F32, True),
                                  ir.Param("dims", E.U32, True)), (), (), body)
    count = 256
    x = np.random.default_rng().integers(-50, 50, count).astype(np.float32)
    out, dims = c.empty(3 * count, np.float32), c.empty(count, np.uint32)
    run(c, kernel, 4, 64, [c.create(x), out, dims])
    got = c.read(out).reshape(3, count)
    planes = x.reshape(-1, size)
    np.testing.assert_array_equal(got[0], np.repeat(planes.sum(axis=1), size))
    np.testing.assert_array_equal(got[1], np.repeat(planes.max(axis=1), size))
    np.testing.assert_array_equal(got[2], np.roll(planes, -1, axis=1).reshape(-1))
    np.testing.assert_array_equal(c.read(dims), size)


@pytest.mark.parametrize("past", [1234, 2], ids=["exact-fold", "fold-with-surplus"])
def test_cube_count_past_the_device_limit(shared_client: ComputeClient, past: int) -> None:
    # More cubes on x than maxComputeWorkGroupCount allows: dispatched folded, with
    # each cube run once. 65,535 + 1,234 is 23 x 2,903: folded exactly (the pipeline
    # without the guard); 65,537 is prime: the surplus of the fold leaves before doing
    # anything (the pipeline with it).
    c = shared_client
    limit = c.server.physical.max_workgroup_count
    if limit[0] > 1 << 20:
        pytest.skip(f"the device dispatches {limit[0]} work groups on x: too many to launch "
                    "past it here")
    n = limit[0] + past
    gx, gy, gz = fold_count(CubeCount(n), limit)
    assert (gx * gy * gz == n) == (past == 1234)
    body = (
        ir.AtomicStmt(ir.AtomicOp.ADD, "counter", u32(0), u32(1), None, None),
        ir.Store("pos", POS, ir.Builtin(B.CUBE_POS_X)),
    )
    kernel = ir.Kernel("count_units", (ir.Param("counter", E.U32, True),
                                       ir.Param("pos", E.U32, True)), (), (), body)
    counter, pos = c.create(np.zeros(1, np.uint32)), c.empty(n, np.uint32)
    run(c, kernel, n, 1, [counter, pos])
    assert c.read(counter)[0] == n
    np.testing.assert_array_equal(c.read(pos), np.arange(n, dtype=np.uint32))
