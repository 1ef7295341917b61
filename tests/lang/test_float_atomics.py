"""f32 atomics past add/max/min: ``atomic_sub`` (the addition of the negation),
``atomic_exchange`` and ``atomic_store`` (an IR ``EXCHANGE``, a compare-exchange loop on
the bits where the target lacks it) and ``atomic_load`` (an addition of -0.0, which
changes no value), against NumPy on the cpu backend (tests/lowering/test_passes.py runs the
loop a target without an f32 exchange gets)."""

from __future__ import annotations

import numpy as np

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    CubeCount,
    CubeDim,
    atomic_exchange,
    atomic_load,
    atomic_store,
    atomic_sub,
    f32,
    kernel,
)


@kernel
def float_atomics(a: Array[f32], v: Array[f32], olds: Array[f32], loads: Array[f32],
                  swapped: Array[f32], total: Array[f32], slot: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < len(a):
        loads[i] = atomic_load(a, i)
        olds[i] = atomic_exchange(a, i, v[i])
        atomic_sub(total, 0, v[i])
        atomic_store(slot, i, v[i] * 2.0)
        swapped[i] = atomic_load(a, i)


def launch(client: ComputeClient, a: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    n = len(a)
    bufs = [client.create(a), client.create(v)] + [client.empty(n, np.float32)
                                                    for _ in range(3)]
    bufs += [client.create(np.zeros(1, np.float32)), client.create(np.zeros(n, np.float32))]
    float_atomics.launch(client, CubeCount(4), CubeDim(64), *bufs)
    return [client.read(b) for b in (bufs[0], *bufs[2:])]


def test_f32_load_exchange_store_and_sub() -> None:
    rng = np.random.default_rng()
    n = 231
    a = rng.standard_normal(n).astype(np.float32)
    a[:5] = [-0.0, 0.0, np.inf, -np.inf, np.nan]
    v = rng.integers(-8, 8, n).astype(np.float32)  # small integers: an exact sum
    after, olds, loads, swapped, total, slot = launch(create_client("cpu"), a, v)
    np.testing.assert_array_equal(loads.view(np.uint32), a.view(np.uint32))  # -0.0 kept
    np.testing.assert_array_equal(olds.view(np.uint32), a.view(np.uint32))
    np.testing.assert_array_equal(after, v)
    np.testing.assert_array_equal(swapped, v)
    np.testing.assert_array_equal(total, [-v.sum()])
    np.testing.assert_array_equal(slot, 2 * v)


def test_the_frontend_writes_sub_and_load_as_additions() -> None:
    ops = [(n.op, n.value) for n in ir.walk(float_atomics.ir().body)
           if isinstance(n, ir.AtomicStmt)]
    assert [op for op, _ in ops] == [ir.AtomicOp.ADD, ir.AtomicOp.EXCHANGE, ir.AtomicOp.ADD,
                                     ir.AtomicOp.EXCHANGE, ir.AtomicOp.ADD]
    assert str(ops[0][1].value) == "-0.0"
    assert isinstance(ops[2][1], ir.Unary) and ops[2][1].op is ir.UnOp.NEG
