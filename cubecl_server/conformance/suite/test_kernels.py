"""The kernel set: elementwise, 2-D, shared-memory reduction, tiled matrix product,
histogram with atomics, softmax, scan, comptime variants, helpers, atomics and plane
operations, each against NumPy on fresh random data."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size, values
from cubecl_server.kernel import CubeCount, CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem


class TestKernelSet:
    """Real kernels, the way programs write them."""

    def test_saxpy(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                   cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 64, at_least=20)
        x = cubecl_rng.standard_normal(n).astype(np.float32)
        y = cubecl_rng.standard_normal(n).astype(np.float32)
        a = np.float32(cubecl_rng.uniform(-3, 3))
        out = c.empty(n, np.float32)
        kernels.saxpy.launch(c, cubes_for(n, 64), CubeDim(64), c.create(x), c.create(y), out,
                             a)
        check(c.read(out), a * x + y, "saxpy", cubecl_seed, elem=E.F32, exact=False)

    def test_transpose_2d(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                          cubecl_seed: int) -> None:
        c = cubecl_client
        rows, cols = int(cubecl_rng.integers(17, 70)), int(cubecl_rng.integers(17, 70))
        a = cubecl_rng.standard_normal((rows, cols)).astype(np.float32)
        out = c.empty(rows * cols, np.float32)
        kernels.transpose.launch(c, CubeCount(-(-cols // 16), -(-rows // 16)),
                                 CubeDim(16, 16), c.create(a.reshape(-1)), out, rows, cols)
        check(c.read(out).reshape(cols, rows), a.T, f"transpose of {rows}x{cols}",
              cubecl_seed)

    @pytest.mark.requires("shared_memory:512")
    def test_reduction_shared_memory(self, cubecl_client: ComputeClient,
                                     cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 128, at_least=6)
        a = cubecl_rng.uniform(-1, 1, n).astype(np.float32)
        cubes = cubes_for(n, 128)
        out = c.empty(cubes.x, np.float32)
        kernels.reduce_sum.launch(c, cubes, CubeDim(128), c.create(a), out, BLOCK=128)
        padded = np.zeros(cubes.x * 128, np.float32)
        padded[:n] = a
        want = padded.reshape(-1, 128).astype(np.float64).sum(axis=1)
        check(c.read(out), want.astype(np.float32), "per-cube tree reduction", cubecl_seed,
              elem=E.F32, exact=False, scale=np.abs(padded.reshape(-1, 128)).sum(axis=1))

    @pytest.mark.requires("shared_memory:2048", "cube_dim:256")
    def test_tiled_matmul(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                          cubecl_seed: int) -> None:
        c = cubecl_client
        m, k, n = (int(v) for v in cubecl_rng.integers(17, 60, 3))
        a = cubecl_rng.standard_normal((m, k)).astype(np.float32)
        b = cubecl_rng.standard_normal((k, n)).astype(np.float32)
        out = c.empty(m * n, np.float32)
        kernels.matmul.launch(c, CubeCount(-(-n // 16), -(-m // 16)), CubeDim(16, 16),
                              c.create(a.reshape(-1)), c.create(b.reshape(-1)), out, m, n, k,
                              TILE=16)
        want = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        check(c.read(out).reshape(m, n), want.astype(np.float32),
              f"tiled matmul {m}x{k} @ {k}x{n}", cubecl_seed, elem=E.F32, exact=False,
              scale=scale * 4)

    @pytest.mark.requires("atomics:u32")
    def test_histogram_atomics(self, cubecl_client: ComputeClient,
                               cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 64, at_least=30)
        data = cubecl_rng.integers(0, 16, n).astype(np.uint32)
        bins = c.create(np.zeros(16, np.uint32))
        kernels.histogram.launch(c, cubes_for(n, 64), CubeDim(64), c.create(data), bins)
        check(c.read(bins), np.bincount(data, minlength=16).astype(np.uint32),
              "histogram of 16 bins", cubecl_seed)

    @pytest.mark.requires("shared_memory:256")
    def test_softmax(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int) -> None:
        c = cubecl_client
        rows, cols = int(cubecl_rng.integers(3, 9)), int(cubecl_rng.integers(65, 300))
        a = (cubecl_rng.standard_normal((rows, cols)) * 5).astype(np.float32)
        out = c.empty(rows * cols, np.float32)
        kernels.softmax.launch(c, CubeCount(rows), CubeDim(64), c.create(a.reshape(-1)), out,
                               cols, BLOCK=64)
        e = np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True))
        want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
        check(c.read(out).reshape(rows, cols), want, f"softmax of {rows}x{cols}", cubecl_seed,
              elem=E.F32, exact=False)

    @pytest.mark.requires("shared_memory:512")
    def test_inclusive_scan(self, cubecl_client: ComputeClient,
                            cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 128)
        a = cubecl_rng.integers(-1000, 1000, n).astype(np.int32)
        out = c.empty(n, np.int32)
        kernels.scan.launch(c, cubes_for(n, 128), CubeDim(128), c.create(a), out, BLOCK=128)
        want = np.concatenate([np.cumsum(a[s:s + 128], dtype=np.int32)
                               for s in range(0, n, 128)])
        check(c.read(out), want, "inclusive scan within each cube of 128", cubecl_seed)

    def test_data_dependent_loop(self, cubecl_client: ComputeClient,
                                 cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 256)
        # Starts up to 2**20 climb past 2**32 (the multiply wraps, as u32 does).
        x = cubecl_rng.integers(1, 1 << 20, n, dtype=np.uint32)
        x[:3] = (1, 2, 3)
        steps = c.empty(n, np.uint32)
        kernels.collatz.launch(c, cubes_for(n, 256), CubeDim(256), c.create(x), steps)
        check(c.read(steps), kernels.collatz_reference(x),
              "Collatz steps (at most 200) of each start", cubecl_seed)

    @pytest.mark.parametrize(("power", "negate", "factor"),
                             [(0, False, 1.0), (1, True, 1.0), (3, False, 0.5), (4, True, 2.0)])
    def test_comptime_variants(self, cubecl_client: ComputeClient,
                               cubecl_rng: np.random.Generator, cubecl_seed: int, power: int,
                               negate: bool, factor: float) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 64)
        a = cubecl_rng.uniform(-2, 2, n).astype(np.float32)
        out = c.empty(n, np.float32)
        kernels.comptime_poly.launch(c, cubes_for(n, 64), CubeDim(64), c.create(a), out,
                                     POWER=power, NEGATE=negate, SCALE=factor)
        want = (-1 if negate else 1) * np.float32(factor) * a.astype(np.float64) ** power
        check(c.read(out), want.astype(np.float32),
              f"comptime POWER={power} NEGATE={negate} SCALE={factor}", cubecl_seed,
              elem=E.F32, exact=False)

    def test_comptime_values_are_distinct_kernels(self, cubecl_client: ComputeClient) -> None:
        ids = {cubecl_client.artifact_id(kernels.comptime_poly, CubeDim(64),
                                         {"POWER": p, "NEGATE": neg, "SCALE": 1.0})
               for p in (1, 2) for neg in (False, True)}
        assert len(ids) == 4, (f"four sets of comptime values gave {len(ids)} distinct "
                               "artifact ids, expected 4")

    @pytest.mark.parametrize("count", [1, 4, 7])
    def test_unrolled_loop(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                           cubecl_seed: int, count: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 64)
        a = cubecl_rng.uniform(-1, 1, n * count).astype(np.float32)
        out = c.empty(n, np.float32)
        kernels.unrolled_sum.launch(c, cubes_for(n, 64), CubeDim(64), c.create(a), out,
                                    N=count)
        want = a.reshape(n, count).astype(np.float64).sum(axis=1).astype(np.float32)
        check(c.read(out), want, f"range({count}, unroll=True)", cubecl_seed, elem=E.F32,
              exact=False)

    def test_cube_fn_helpers(self, cubecl_client: ComputeClient,
                             cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 64)
        a = cubecl_rng.uniform(-3, 3, n).astype(np.float32)
        out = c.empty(n, np.float32)
        kernels.cube_fn_kernel().launch(c, cubes_for(n, 64), CubeDim(64), c.create(a), out)
        check(c.read(out), a * a + np.float32(3) * a + np.float32(1), "@cube_fn inlined",
              cubecl_seed, elem=E.F32, exact=False)

    def test_shape_and_stride(self, cubecl_client: ComputeClient,
                              cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        rows, cols = int(cubecl_rng.integers(2, 40)), int(cubecl_rng.integers(2, 40))
        a = c.create(np.zeros((rows, cols), np.float32))
        out = c.empty(5, np.uint32)
        kernels.shape_stride.launch(c, CubeCount(1), CubeDim(32), a, out)
        check(c.read(out), np.array([rows, cols, cols, 1, rows * cols], np.uint32),
              "a.shape[0], a.shape[1], a.stride[0], a.stride[1], len(a)", cubecl_seed)

    def test_transpose_by_shape(self, cubecl_client: ComputeClient,
                                cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        rows, cols = int(cubecl_rng.integers(17, 50)), int(cubecl_rng.integers(17, 50))
        a = cubecl_rng.standard_normal((rows, cols)).astype(np.float32)
        out = c.empty((cols, rows), np.float32)
        kernels.transpose_shape.launch(c, CubeCount(-(-cols // 16), -(-rows // 16)),
                                       CubeDim(16, 16), c.create(a), out)
        check(c.read(out), a.T, f"transpose of {rows}x{cols} by shape/stride", cubecl_seed)


ATOMIC_REF = {"add": np.add, "sub": np.subtract, "max": np.maximum, "min": np.minimum}


def _atomic_params() -> list[object]:
    return [pytest.param(op, e, id=f"{op}-{e.value}",
                         marks=pytest.mark.requires(f"atomics:{e.value}"))
            for op in (*ATOMIC_REF, "exchange") for e in (E.I32, E.U32)]


class TestAtomics:
    """Each atomic operation returns the old value and combines every unit's update."""

    @pytest.mark.parametrize(("op", "elem"), _atomic_params())
    def test_atomic(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                    cubecl_seed: int, op: str, elem: ir.Elem) -> None:
        c = cubecl_client
        n, slots = random_size(cubecl_rng, 64, at_least=4), 5
        v = values(cubecl_rng, elem, n, edges=False, low=0, high=1000)
        start = values(cubecl_rng, elem, slots, edges=False, low=0, high=1000)
        acc, old = c.create(start), c.empty(n, v.dtype)
        kernels.atomic_kernel(op, elem).launch(c, cubes_for(n, 64), CubeDim(64), acc,
                                               c.create(v), old, slots)
        got_acc, got_old = c.read(acc), c.read(old)
        slot = np.arange(n) % slots
        if op == "exchange":
            # Whatever the order, the old values and the final one are a permutation
            # of the starting value and every unit's value, per slot.
            for s in range(slots):
                mine = np.sort(np.concatenate([got_old[slot == s], [got_acc[s]]]))
                want = np.sort(np.concatenate([v[slot == s], [start[s]]]))
                check(mine, want, f"atomic_exchange on slot {s}", cubecl_seed)
            return
        want = start.copy()
        with np.errstate(all="ignore"):
            for s in range(slots):
                want[s] = ATOMIC_REF[op].reduce(np.concatenate([[start[s]], v[slot == s]])
                                                .astype(v.dtype))
        check(got_acc, want, f"atomic_{op} on {elem.value}: final values", cubecl_seed)
        if op in ("add", "sub"):
            # Each old value is a partial result: all distinct and containing the start.
            for s in range(slots):
                olds = got_old[slot == s]
                assert start[s] in olds, (f"atomic_{op}: no unit of slot {s} saw the "
                                          f"starting value {start[s]} (seed {cubecl_seed})")
                assert len(set(olds.tolist())) == len(olds) or not np.all(v[slot == s]), \
                    f"atomic_{op}: two units saw the same old value (seed {cubecl_seed})"

    @pytest.mark.parametrize("elem", [pytest.param(e, id=e.value,
                                                   marks=pytest.mark.requires(f"atomics:{e.value}"))
                                      for e in (E.I32, E.U32)])
    def test_compare_exchange_has_one_winner(self, cubecl_client: ComputeClient,
                                             elem: ir.Elem) -> None:
        c = cubecl_client
        n = 200
        acc, old = c.create(np.zeros(1, elem.numpy_name)), c.empty(n, elem.numpy_name)
        kernels.atomic_cas(elem).launch(c, cubes_for(n, 64), CubeDim(64), acc, old)
        got_acc, got_old = c.read(acc), c.read(old)
        winners = np.flatnonzero(got_old == 0)
        assert len(winners) == 1, f"{len(winners)} units saw 0 and stored (expected one)"
        assert got_acc[0] == winners[0] + 1, (
            f"compare_exchange: unit {winners[0]} won (saw 0), so the value must be "
            f"{winners[0] + 1}; it is {got_acc[0]}")
        losers = got_old[got_old != 0]
        assert np.all(losers == got_acc[0]), (
            f"compare_exchange: the units that lost must see the winner's value "
            f"{got_acc[0]}; they saw {sorted(set(losers.tolist()))[:8]}")

    @pytest.mark.requires("atomics:f32")
    def test_atomic_add_f32(self, cubecl_client: ComputeClient,
                            cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, 64, at_least=4)
        v = cubecl_rng.uniform(0, 1, n).astype(np.float32)
        acc, old = c.create(np.zeros(3, np.float32)), c.empty(n, np.float32)
        kernels.atomic_kernel("add", E.F32).launch(c, cubes_for(n, 64), CubeDim(64), acc,
                                                   c.create(v), old, 3)
        want = np.array([v[np.arange(n) % 3 == s].astype(np.float64).sum() for s in range(3)])
        check(c.read(acc), want.astype(np.float32), "atomic_add on f32", cubecl_seed,
              elem=E.F32, exact=False, scale=want * 8)


class TestPlane:
    """Plane (subgroup) operations over the backend's declared plane size."""

    @pytest.mark.requires("plane")
    def test_plane_ops(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                       cubecl_seed: int) -> None:
        c = cubecl_client
        size = c.capabilities.plane_size
        assert size is not None, "the plane marker let a backend without planes through"
        dim = 2 * size
        n = 3 * dim  # every plane full: partial planes are the backend's business
        a = cubecl_rng.integers(-50, 50, n).astype(np.float32)
        outs = [c.empty(n, np.float32) for _ in range(3)] + [c.empty(n, np.uint32)
                                                               for _ in range(2)]
        kernels.plane_kernel.launch(c, CubeCount(3), CubeDim(dim), c.create(a), *outs)
        planes = a.reshape(-1, size)
        check(c.read(outs[0]), np.repeat(planes.sum(axis=1), size), "plane_sum", cubecl_seed)
        check(c.read(outs[1]), np.repeat(planes.max(axis=1), size), "plane_max", cubecl_seed)
        check(c.read(outs[2]), np.repeat(planes[:, 0], size), "plane_broadcast(x, 0)",
              cubecl_seed)
        check(c.read(outs[3]), np.tile(np.arange(size, dtype=np.uint32), n // size),
              "UNIT_POS_PLANE", cubecl_seed)
        check(c.read(outs[4]), np.full(n, size, np.uint32), "PLANE_DIM", cubecl_seed)
