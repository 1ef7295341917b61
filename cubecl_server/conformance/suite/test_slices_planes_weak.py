"""The rest of CubeCL's kernel language: slices, workgroup_uniform_load and the rest of
the plane operations, and weak integer typing, against NumPy on fresh random data."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size, values
from cubecl_server.lang import CubeCount, CubeDim

DIM = 64


class TestForIn:
    """``for x in a`` over an array and over a slice written in place, with a
    ``continue``: the elements in order, each unit its own row."""

    def test_for_over_elements(self, cubecl_client: ComputeClient,
                               cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        rows, width = random_size(cubecl_rng, DIM), int(cubecl_rng.integers(1, 7))
        a = cubecl_rng.integers(-50, 50, rows * width).astype(np.float32)  # exact sums
        out, total = c.empty(rows, np.float32), c.empty(1, np.float32)
        kernels.for_in.launch(c, cubes_for(rows, DIM), CubeDim(DIM), c.create(a), out, total,
                              W=width)
        check(c.read(out), a.reshape(rows, width).sum(axis=1),
              f"for x in a[i * {width}:i * {width} + {width}]: acc += x", cubecl_seed)
        check(c.read(total), np.array([a[a >= 0].sum()], np.float32),
              "for v in a: (continue past negatives) t += v", cubecl_seed)


class TestSlices:
    """``s = a[lo:hi]`` of arrays, slices and shared memory, read, written, passed to a
    helper and updated atomically; outside the slice reads 0 and stores are dropped,
    also where the array goes on."""

    @pytest.mark.requires("shared_memory:256")
    @pytest.mark.requires("atomics:u32")
    def test_slices_read_write_and_refuse_outside(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        lo = int(cubecl_rng.integers(1, n // 3))
        hi = int(cubecl_rng.integers(n // 2, n - 1))
        a = values(cubecl_rng, ir.Elem.F32, n)
        before = values(cubecl_rng, ir.Elem.F32, n, edges=False)
        outs = {name: c.empty(n, np.float32) for name in ("view", "inner", "sums", "tiles")}
        written = c.create(before)
        counts, lens = c.create(np.zeros(6, np.uint32)), c.empty(4, np.uint32)
        kernels.slices.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(a), outs["view"],
                              outs["inner"], written, outs["sums"], outs["tiles"], counts,
                              lens, np.uint32(lo), np.uint32(hi))
        m = hi - lo
        s = np.zeros(n + 3, np.float32)
        s[:m] = a[lo:hi]
        check(c.read(outs["view"]), s[:n], f"s = a[{lo}:{hi}]; s[i] (0 past the slice)",
              cubecl_seed)
        inner = np.zeros(n, np.float32)
        inner[1:m - 2] = a[lo + 3:hi]
        check(c.read(outs["inner"]), inner, "t = s[3:]; t[i - 1] (0 at -1 and past t)",
              cubecl_seed)
        want = before.copy()
        want[lo:hi] = 1.0
        check(c.read(written), want, f"w = written[{lo}:{hi}]; w[i] = 1 (dropped outside)",
              cubecl_seed)
        with np.errstate(invalid="ignore", over="ignore"):
            sums = (s[:n] + s[1:n + 1]) + s[2:n + 2]
        check(c.read(outs["sums"]), sums, "a helper given a[lo:hi] sums w[i..i+2]",
              cubecl_seed)
        u = np.arange(n) % DIM
        tiles = np.where((u >= 16) & (u < 40), u - 16, -1).astype(np.float32)
        check(c.read(outs["tiles"]), tiles, "tile[16:40][UNIT_POS] = UNIT_POS (shared memory)",
              cubecl_seed)
        k = np.arange(n) % 5
        want_counts = np.zeros(6, np.uint32)
        want_counts[1:4] = np.bincount(k[k < 3], minlength=3)
        check(c.read(counts), want_counts, "atomic_add through counts[1:4] (3, 4 dropped)",
              cubecl_seed)
        check(c.read(lens), np.array([m, m - 3, 0, n - lo], np.uint32),
              "len of a[lo:hi], of s[3:], of a[hi:lo] and of a[lo:]", cubecl_seed)


class TestWorkgroupUniformLoad:
    """``workgroup_uniform_load(tile[3])`` gives every unit of a cube one value, which may
    bound a loop around a barrier."""

    @pytest.mark.requires("shared_memory:256")
    def test_a_loop_bounded_by_a_shared_value(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        a = cubecl_rng.integers(0, DIM, n).astype(np.uint32)
        out = c.empty(n, np.uint32)
        kernels.uniform_load.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(a), out)
        padded = np.zeros(-(-n // DIM) * DIM, np.uint32)
        padded[:n] = a
        tiles = padded.reshape(-1, DIM)
        per_cube = np.array([t[:t[3]].sum(dtype=np.uint32) for t in tiles], np.uint32)
        check(c.read(out), np.repeat(per_cube, DIM)[:n], "sum of tile[:n] in a loop of "
              "n = workgroup_uniform_load(tile[3]) around sync_cube()", cubecl_seed,
              inputs={"a": a})


class TestPlaneRest:
    """Shuffles by a lane per unit, up and down; product scans and plane_elect over the
    active units."""

    @pytest.mark.requires("plane")
    def test_shuffles_product_scans_and_elect(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        size = c.capabilities.plane_size
        assert size is not None, "the plane marker let a backend without planes through"
        n = random_size(cubecl_rng, DIM)  # the last cube's last units are out of range
        v = cubecl_rng.choice(np.array([-2, -1, 1, 2, 3], np.int32), n)
        v[cubecl_rng.choice(n, 2, replace=False)] = np.iinfo(np.int32).max  # wraps
        cond = cubecl_rng.random(n) < 0.7
        names = ("shuffled", "up", "down", "inc", "exc", "elected")
        dtypes = (np.int32,) * 5 + (np.bool_,)
        outs = [c.empty(n, d) for d in dtypes]
        kernels.plane_rest.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(v),
                                  c.create(cond), *outs)
        got = dict(zip(names, (c.read(o) for o in outs), strict=True))
        unit = np.arange(n) % DIM
        start = np.arange(n) - unit % size  # the first unit of each unit's plane
        end = np.minimum(np.minimum(start + size, np.arange(n) - unit + DIM), n)
        for name, src, what in (
                ("shuffled", start + (unit % size * 3 + 1) % size, "x, (3 * lane + 1) % size"),
                ("up", np.arange(n) - 1, "x, 1"), ("down", np.arange(n) + 2, "x, 2")):
            ok = (src >= start) & (src < end)  # the source is a unit of the plane, in range
            check(got[name][ok], v[src[ok]], f"plane_{name.replace('shuffled', 'shuffle')}"
                  f"({what}) (plane size {size})", cubecl_seed)
            if name != "shuffled":
                # No source in the plane: the unit keeps its own value (docs/language.md).
                edge = (src < start) | (src >= start + size)
                check(got[name][edge], v[edge], f"plane_shuffle_{name}({what}) at the units "
                      f"with no source in the plane (plane size {size}): their own value",
                      cubecl_seed)
        for s in np.unique(start):
            act = np.arange(s, end[s])[cond[s:end[s]]]
            if act.size == 0:
                continue
            with np.errstate(over="ignore"):
                cum = np.cumprod(v[act], dtype=np.int32)
            exc = np.concatenate([[1], cum[:-1]]).astype(np.int32)
            elected = act == act[0]
            for name, w in (("inc", cum), ("exc", exc), ("elected", elected)):
                label = {"inc": "plane_inclusive_prod", "exc": "plane_exclusive_prod",
                         "elected": "plane_elect"}[name]
                check(got[name][act], w, f"{label} over the active units of the plane at "
                      f"unit {s} (plane size {size})", cubecl_seed)


class TestWeakIntegers:
    """Locals assigned only literals and comptime integers, and loop variables over
    such bounds, take the type of the typed value they first meet: the tree
    reduction and the tiled loop compile with no cast and compute what NumPy does."""

    @pytest.mark.requires("shared_memory:256")
    def test_tree_reduction_with_a_comptime_stride(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        block = 64
        n = random_size(cubecl_rng, block)
        a = values(cubecl_rng, ir.Elem.I32, n)
        cubes = cubes_for(n, block)
        out = c.empty(cubes.x, np.int32)
        kernels.weak_tree_sum.launch(c, cubes, CubeDim(block), c.create(a), out, BLOCK=block)
        padded = np.zeros(cubes.x * block, np.int32)
        padded[:n] = a
        # Integer addition wraps, so the sum in any order is NumPy's int32 sum.
        want = padded.reshape(-1, block).sum(axis=1, dtype=np.int32)
        check(c.read(out), want, f"tree reduction of {n} i32 in cubes of {block}, "
              "`stride = BLOCK // 2` met by `t < stride`", cubecl_seed, inputs={"a": a})

    @pytest.mark.requires("shared_memory:512")
    def test_tiled_loop_over_a_comptime_tile(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        tile = 8
        m, k, n = (int(v) * tile + int(r) for v, r in zip(
            cubecl_rng.integers(1, 5, 3), cubecl_rng.integers(1, tile, 3), strict=True))
        a = cubecl_rng.standard_normal((m, k)).astype(np.float32)
        b = cubecl_rng.standard_normal((k, n)).astype(np.float32)
        out = c.empty(m * n, np.float32)
        kernels.weak_tiled_matmul.launch(
            c, CubeCount(-(-n // tile), -(-m // tile)), CubeDim(tile, tile),
            c.create(a.reshape(-1)), c.create(b.reshape(-1)), out, m, n, k, TILE=tile)
        want = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        check(c.read(out).reshape(m, n), want.astype(np.float32),
              f"tiled loop `for e in range(TILE)`, {m}x{k} @ {k}x{n}", cubecl_seed,
              elem=ir.Elem.F32, exact=False, scale=scale * 4)
