"""Memory: round trips of every dtype, empty and large buffers, reuse after free,
usage reported."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, values
from cubecl_server.kernel import CubeCount, CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")


class TestMemory:
    """Buffers as the client sees them."""

    @pytest.mark.parametrize("elem", [pytest.param(e, id=e.value) for e in ir.Elem])
    @pytest.mark.parametrize("shape", [(1,), (1000,), (7, 13), (3, 4, 5)], ids=str)
    def test_round_trip(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                        cubecl_seed: int, elem: ir.Elem, shape: tuple[int, ...]) -> None:
        c = cubecl_client
        data = values(cubecl_rng, elem, int(np.prod(shape))).reshape(shape)
        h = c.create(data)
        assert h.shape == shape and h.dtype == data.dtype, (
            f"create gave a handle of {h.shape} {h.dtype}, expected {shape} {data.dtype}")
        check(c.read(h), data, f"create/read of {elem.value}{list(shape)}", cubecl_seed)
        other = values(cubecl_rng, elem, int(np.prod(shape))).reshape(shape)
        c.write(h, other)
        check(c.read(h), other, f"write/read of {elem.value}{list(shape)}", cubecl_seed)

    @pytest.mark.parametrize("shape", [(0,), (0, 5)], ids=str)
    def test_empty_arrays(self, cubecl_client: ComputeClient, shape: tuple[int, ...]) -> None:
        c = cubecl_client
        h = c.create(np.zeros(shape, np.float32))
        got = c.read(h)
        assert got.shape == shape and got.dtype == np.float32, (
            f"reading an empty array gave {got.shape} {got.dtype}, expected {shape} float32")
        c.write(h, np.zeros(shape, np.float32))
        e = c.empty(shape, np.int32)
        assert c.read(e).shape == shape, (
            f"reading an empty array made by empty() gave shape {c.read(e).shape}, "
            f"expected {shape}")

    def test_large_array(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                         cubecl_seed: int) -> None:
        c = cubecl_client
        n = 64 * 1024 * 1024 // 4 + 17
        data = cubecl_rng.standard_normal(n, dtype=np.float32)
        h = c.create(data)
        check(c.read(h), data, "64 MiB round trip", cubecl_seed)
        out = c.empty(n, np.float32)
        cubes = cubes_for(n, 256).x
        # Past the device's x limit, fold onto y: ABSOLUTE_POS counts every unit.
        most = c.capabilities.max_cube_count[0]
        grid = CubeCount(cubes) if cubes <= most else CubeCount(most, -(-cubes // most))
        kernels.scale.launch(c, grid, CubeDim(256), h, out, 2.0)
        got = c.read(out)
        check(got[-1000:], data[-1000:] * 2, "scale over 64 MiB (the last elements)",
              cubecl_seed)
        check(got[:1000], data[:1000] * 2, "scale over 64 MiB (the first elements)",
              cubecl_seed)

    def test_one_buffer_may_be_passed_to_several_parameters(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        # docs/ir.md: parameters may alias; each unit reads its element through two
        # parameters and writes it through a third, all one buffer.
        c = cubecl_client
        n = 1000 + int(cubecl_rng.integers(1, 64))
        data = cubecl_rng.standard_normal(n, dtype=np.float32)
        buf = c.create(data)
        kernels.saxpy.launch(c, cubes_for(n, 64), CubeDim(64), buf, buf, buf, 3.0)
        check(c.read(buf), data * np.float32(3.0) + data,
              "saxpy(x, x, x): one buffer as both inputs and the output", cubecl_seed)

    def test_usage_reported_and_memory_reused_after_free(self,
                                                         cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        before = c.memory_usage()
        handles = [c.empty(1 << 20, np.float32) for _ in range(4)]
        during = c.memory_usage()
        assert during.bytes_in_use >= before.bytes_in_use + 4 * (4 << 20), (
            f"four buffers of 4 MiB took {during.bytes_in_use - before.bytes_in_use} bytes "
            f"in use (before {before}, during {during})")
        assert during.number_allocs >= before.number_allocs + 4, (
            f"four buffers counted {during.number_allocs - before.number_allocs} "
            "allocations")
        assert during.bytes_reserved >= during.bytes_in_use, (
            f"{during.bytes_in_use} bytes in use, more than the {during.bytes_reserved} "
            "reserved")
        for h in handles:
            h.free()
        after = c.memory_usage()
        assert after.bytes_in_use <= before.bytes_in_use, "freed buffers still count as in use"
        again = [c.empty(1 << 20, np.float32) for _ in range(4)]
        reused = c.memory_usage()
        assert reused.bytes_reserved <= during.bytes_reserved, (
            "allocating what was just freed reserved more device memory: freed memory "
            "is not reused")
        for i, h in enumerate(again):
            c.write(h, np.full(1 << 20, i, np.float32))
        for i, h in enumerate(again):
            assert np.all(c.read(h) == i), "buffers carved from reused memory overlap"
