"""Checked mode where the core's bounds pass leaves checks out (docs/ir.md, "Memory
access"; ``cubecl_server/lowering/bounds.py``): each kind of access it proves inside
its array gives the right values, and each look-alike it must not prove still reads 0
outside the array and drops its stores there. A backend that leaves out a check it
cannot prove reads past an end here (a wrong value, or a failed launch)."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

DIM = 64


def _checked(c: ComputeClient) -> None:
    assert c.mode is ExecutionMode.CHECKED, (
        f"a new client runs in {c.mode.value} mode, expected checked (the default)")


class TestProvenAccesses:
    """Accesses proven in range next to their look-alikes, in checked mode."""

    def test_guards_prove_only_what_they_bound(self, cubecl_client: ComputeClient,
                                                cubecl_rng: np.random.Generator,
                                                cubecl_seed: int) -> None:
        c = cubecl_client
        _checked(c)
        n = random_size(cubecl_rng, DIM)
        k = int(cubecl_rng.integers(3, DIM))
        short = n - int(cubecl_rng.integers(1, DIM))
        a = cubecl_rng.uniform(1, 100, n).astype(np.float32)
        b = cubecl_rng.uniform(1, 100, short).astype(np.float32)
        outs = [c.create(np.full(n + k, -7, np.float32)) for _ in range(4)]
        kernels.bounds_guards.launch(c, cubes_for(n + k, DIM), CubeDim(DIM), c.create(a),
                                     c.create(b), *outs, k)
        i = np.arange(n + k)
        pad = np.concatenate([a, np.zeros(k, np.float32)])
        want1 = np.where(i < short, np.concatenate([b, np.zeros(n + k - short)])[i], 0)
        check(c.read(outs[0]), want1.astype(np.float32),
              f"`if i < len(o1): o1[i] = b[i]` with o1 of {n + k}, b of {short} (b past its "
              "end reads 0: the guard bounds o1, not b)", cubecl_seed)
        check(c.read(outs[1]), np.where(i < n, pad + 1, -7).astype(np.float32),
              f"`m = len(a); if i < m: o2[i] = a[i] + 1` with a of {n}", cubecl_seed)
        check(c.read(outs[2]), np.where(i < n + k, pad, -7).astype(np.float32),
              f"`m = m + {k}; if i < m: o3[i] = a[i]` with a of {n} (m is past a's end: "
              "a reads 0 there)", cubecl_seed)
        want4 = np.where(i < n, np.concatenate([pad, np.zeros(k, np.float32)])[i + k], -7)
        check(c.read(outs[3]), want4.astype(np.float32),
              f"`if j < len(a): j = j + {k}; o4[i] = a[j]` with a of {n} (j moved past the "
              "guard: a reads 0 past its end)", cubecl_seed)

    @pytest.mark.requires("shared_memory:256", "barrier")
    def test_shared_and_local_arrays_by_unit_position_and_loop(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        _checked(c)
        cubes = int(cubecl_rng.integers(2, 5))
        units = cubes * DIM
        n = units - int(cubecl_rng.integers(1, DIM))  # the last cube reads past a's end
        a = cubecl_rng.uniform(1, 100, n).astype(np.float32)
        out, sums, picks = (c.create(np.full(units, -7, np.float32)) for _ in range(3))
        totals = c.create(np.full(cubes, -7, np.float32))
        kernels.bounds_shared.launch(c, CubeCount(cubes), CubeDim(DIM), c.create(a), out,
                                     sums, picks, totals)
        lanes = np.concatenate([a, np.zeros(units - n, np.float32)]).reshape(cubes, DIM)
        u = np.arange(DIM)
        nxt = np.concatenate([lanes[:, 1:], np.zeros((cubes, 1), np.float32)], axis=1)
        check(c.read(out), (lanes[:, 63 - u] * 2 + nxt).reshape(-1),
              "out[i] = tile[63 - u] * 2 + tile[u + 1] over a shared tile of 64 (unit 63's "
              "tile[64] is past the end and reads 0)", cubecl_seed)
        total = np.zeros_like(lanes)
        for t in range(8):  # the kernel's order, in f32: exact
            total = total + (lanes + np.float32(t))
        check(c.read(sums), total.reshape(-1),
              "the sum over `for t in range(8)` of own[t] = a[i] + t, a local array of 8",
              cubecl_seed)
        pick = np.where(u % 9 < 8, lanes + (u % 9), 0).reshape(-1).astype(np.float32)
        check(c.read(picks), pick, "own[u % 9] of a local array of 8 (index 8 reads 0)",
              cubecl_seed)
        tree = lanes.copy()
        for step in (32, 16, 8, 4, 2, 1):  # the kernel's order, in f32: exact
            tree[:, :step] = tree[:, :step] + tree[:, step:2 * step]
        check(c.read(totals), tree[:, 0],
              "a tree reduction `while step > 0: if u < step: tile[u] += tile[u + step]`",
              cubecl_seed)

    def test_loops_and_short_circuits(self, cubecl_client: ComputeClient,
                                      cubecl_rng: np.random.Generator,
                                      cubecl_seed: int) -> None:
        c = cubecl_client
        _checked(c)
        units = random_size(cubecl_rng, DIM)
        n = units - int(cubecl_rng.integers(1, DIM))
        stride = int(cubecl_rng.integers(DIM, 3 * DIM))
        a = cubecl_rng.uniform(-100, 100, n).astype(np.float32)
        outs = [c.empty(units, np.float32) for _ in range(5)]
        kernels.bounds_loops.launch(c, cubes_for(units, DIM), CubeDim(DIM), c.create(a),
                                    *outs, stride)
        acc, late, cont, scale = (np.zeros(units, np.float64) for _ in range(4))
        for i in range(units):
            for j in range(i, n, stride):
                acc[i] += a[j]
                late[i] += a[j + stride] if j + stride < n else 0.0
                scale[i] += abs(a[j]) * 4
            for t, j in enumerate(range(i, i + 4 * stride, stride)):
                cont[i] += a[j] * (t + 1) if j < n else 0.0
        inside = np.arange(units) < n
        at = np.concatenate([a, np.zeros(units - n, np.float32)])
        what = f"a of {n}, {units} units, stride {stride}"
        for h, want, text in [
                (outs[0], acc, "`while j < len(a): acc += a[j]; j += stride`"),
                (outs[1], late, "`...; late += a[j]` after j moved past the guard (reads 0 "
                                "past the end)"),
                (outs[2], cont, "`for t in range(4): if j >= len(a): continue; c += a[j] "
                                "* (t + 1); j += stride`")]:
            check(c.read(h), want, f"{text}, {what}", cubecl_seed, elem=ir.Elem.F32,
                  exact=False, scale=scale)
        check(c.read(outs[3]), np.where(inside & (at > 0), at, -1).astype(np.float32),
              f"`if i < len(a) and a[i] > 0: v = a[i]`, {what}", cubecl_seed)
        check(c.read(outs[4]), np.where(inside, at, -2).astype(np.float32),
              f"`select(i < len(a), a[i], -2)` (both sides evaluated: a[i] reads 0 past "
              f"the end), {what}", cubecl_seed)
