"""What divergent units and bounds must do on every backend (docs/ir.md): signed
indices below 0 in checked mode, branches nested inside unit-dependent branches, plane
operations where only some units of a plane are active, grids whose last cube is one
unit past the bound, and loops whose trip counts differ per unit. Each against a
reference in NumPy or plain Python, on random data of sizes that do not divide evenly."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.lang import ABSOLUTE_POS, Array, kernel, u32

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

DIM = 64


class TestSignedIndices:
    """Checked mode with an index below 0: the load reads 0, the store is dropped."""

    def test_negative_index_reads_zero_and_drops_the_write(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        assert c.mode is ExecutionMode.CHECKED, (
            f"a new client runs in {c.mode.value} mode, expected checked (the default)")
        n = random_size(cubecl_rng, DIM)
        off = int(cubecl_rng.integers(3, DIM + 5))
        neg = -int(cubecl_rng.integers(1, 4))
        data = cubecl_rng.uniform(1, 100, n).astype(np.float32)
        b_data = cubecl_rng.uniform(1, 100, 8).astype(np.float32)
        a, out, b, edge = (c.create(data), c.empty(n, np.float32), c.create(b_data),
                           c.create(np.full(1, 99.0, np.float32)))
        kernels.signed_index.launch(c, cubes_for(n, DIM), CubeDim(DIM), a, out, b, edge,
                                    off, neg)
        j = np.arange(n) - off
        want_out = np.where(j >= 0, data[np.clip(j, 0, n - 1)], 0).astype(np.float32)
        check(c.read(out), want_out, f"out[i] = a[i - {off}] in checked mode (units "
              f"below {off} index below 0 and must read 0, not wrap to the end)",
              cubecl_seed)
        want_a = data.copy()
        want_a[: n - off] = -1.0
        check(c.read(a), want_a, f"a[i - {off}] = -1 in checked mode (a store below 0 "
              "must be dropped, not wrap to the end of the array)", cubecl_seed)
        check(c.read(edge), np.zeros(1, np.float32), f"b[{neg}] read by unit 0 (an index "
              "the same in every unit, below 0: checked mode reads 0)", cubecl_seed)
        check(c.read(b), b_data, f"b[{neg}] = 7 by unit 0 (an index the same in every "
              "unit, below 0: checked mode drops the store)", cubecl_seed)

    @pytest.mark.requires("atomics:i32")
    def test_atomic_outside_the_array_changes_nothing(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        slots = random_size(cubecl_rng, DIM)
        off = int(cubecl_rng.integers(3, 40))
        n = slots + off + int(cubecl_rng.integers(3, 40))  # past both ends of acc
        start = cubecl_rng.integers(-1000, 1000, slots).astype(np.int32)
        acc = c.create(start)
        kernels.signed_atomic.launch(c, cubes_for(n, DIM), CubeDim(DIM), acc, n, off)
        j = np.arange(n) - off
        want = start + np.bincount(j[(j >= 0) & (j < slots)], minlength=slots).astype(
            np.int32)
        check(c.read(acc), want, f"atomic_add(acc, i - {off}, 1) by {n} units on "
              f"{slots} slots in checked mode (atomics below 0 or past the end must do "
              "nothing)", cubecl_seed)


class TestNestedBranches:
    """A branch inside a unit-dependent branch runs only where both conditions hold."""

    def test_nested_unit_dependent_branches(self, cubecl_client: ComputeClient,
                                            cubecl_rng: np.random.Generator,
                                            cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        data = cubecl_rng.integers(-100, 100, n).astype(np.int32)
        out, marks = c.empty(n, np.int32), c.create(np.zeros(n, np.int32))
        kernels.nested_branches.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(data),
                                       out, marks)
        want = np.array([kernels.nested_branches_reference(int(x), i)
                         for i, x in enumerate(data)], np.int32)
        check(c.read(out), want[:, 0], "if/else nested three deep on the unit's value "
              "(an inner branch must run only where the outer conditions hold)",
              cubecl_seed, inputs={"a": data})
        check(c.read(marks), want[:, 1], "stores inside nested unit-dependent branches "
              "(a store must happen only where every enclosing condition holds)",
              cubecl_seed, inputs={"a": data})


class TestPlaneUnderBranch:
    """Plane operations combine the active units of the plane only."""

    @pytest.mark.requires("plane")
    def test_plane_ops_inside_a_unit_dependent_branch(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        size = c.capabilities.plane_size
        assert size is not None, "the plane marker let a backend without planes through"
        dim = 2 * size
        cubes = int(cubecl_rng.integers(2, 5))
        n = cubes * dim  # whole planes: a short plane is the backend's business
        lane = np.arange(n) % size
        active = lane % kernels.PLANE_BRANCH_SKIP != 1
        # Active units hold -1..-50; the inactive ones hold more than any of them, so
        # an inactive unit that contributes (its value, or 0) changes sum and max.
        data = np.where(active, -cubecl_rng.integers(1, 51, n), -0.5).astype(np.float32)
        outs = [c.empty(n, np.float32) for _ in range(3)]
        kernels.plane_branch.launch(c, CubeCount(cubes), CubeDim(dim), c.create(data), *outs)
        planes = np.where(active, data, 0).reshape(-1, size)
        sums = np.repeat(planes.sum(axis=1), size)
        maxes = np.repeat(np.where(active, data, -np.inf).reshape(-1, size).max(axis=1),
                          size)
        firsts = np.repeat(data.reshape(-1, size)[:, 0], size)
        what = (f"under `if UNIT_POS_PLANE % 3 != 1` (planes of {size}; the units outside "
                "must contribute nothing and keep -1)")
        check(c.read(outs[0]), np.where(active, sums, -1).astype(np.float32),
              f"plane_sum {what}", cubecl_seed)
        check(c.read(outs[1]), np.where(active, maxes, -1).astype(np.float32),
              f"plane_max {what}", cubecl_seed)
        check(c.read(outs[2]), np.where(active, firsts, -1).astype(np.float32),
              f"plane_broadcast(x, 0) {what}", cubecl_seed)


class TestBoundByOne:
    """The last cube has exactly one unit past the bound: that unit has no effect."""

    def test_stores_under_the_bound(self, cubecl_client: ComputeClient,
                                    cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        cubes = int(cubecl_rng.integers(2, 6))
        n = cubes * DIM - 1
        data = cubecl_rng.integers(1, 1000, n + 8).astype(np.int32)
        outs = [c.create(np.full(n + 8, -7, np.int32)) for _ in range(4)]
        kernels.bounded_stores.launch(c, CubeCount(cubes), CubeDim(DIM), c.create(data),
                                      *outs, n)
        want = np.full(n + 8, -7, np.int32)
        want[:n] = data[:n]
        for h, spelled in zip(outs, ["i < n", "n > i", "i <= n - 1", "n - 1 >= i"],
                              strict=True):
            check(c.read(h), want, f"store under `if {spelled}` with n = {n}, one unit "
                  f"fewer than the {cubes} cubes of {DIM} (elements from n on must keep "
                  "-7)", cubecl_seed)

    @pytest.mark.requires("atomics:u32")
    def test_atomics_under_the_bound(self, cubecl_client: ComputeClient,
                                     cubecl_rng: np.random.Generator) -> None:
        c = cubecl_client
        cubes = int(cubecl_rng.integers(2, 6))
        n = cubes * DIM - 1
        count = c.create(np.zeros(6, np.uint32))
        kernels.bounded_atomics.launch(c, CubeCount(cubes), CubeDim(DIM), count, n)
        got = c.read(count).tolist()
        want = [n, n, n, n, 1, 1]
        spelled = ["i < n", "n > i", "i <= n - 1", "n - 1 >= i", "i >= n", "i > n - 1"]
        wrong = [f"`if {s}`: {g} units, expected {w}" for s, g, w in
                 zip(spelled, got, want, strict=True) if g != w]
        assert not wrong, (f"atomic_add counting the units on each side of n = {n} "
                           f"({cubes} cubes of {DIM}, the last unit past n): "
                           + "; ".join(wrong))

    @pytest.mark.requires("atomics:u32")
    def test_histogram_one_unit_short(self, cubecl_client: ComputeClient,
                                      cubecl_rng: np.random.Generator,
                                      cubecl_seed: int) -> None:
        c = cubecl_client
        cubes = int(cubecl_rng.integers(2, 8))
        n = cubes * DIM - 1
        data = cubecl_rng.integers(0, 16, n).astype(np.uint32)
        bins = c.create(np.zeros(16, np.uint32))
        kernels.histogram.launch(c, CubeCount(cubes), CubeDim(DIM), c.create(data), bins)
        check(c.read(bins), np.bincount(data, minlength=16).astype(np.uint32),
              f"histogram of {n} values in {cubes} cubes of {DIM} (the unit past the end "
              "must add nothing, not a 0 to bin 0)", cubecl_seed)


class TestLoops:
    """Loops whose trip counts differ from unit to unit."""

    def test_loop_shapes(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                         cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        data = cubecl_rng.integers(0, 45, n).astype(np.int32)
        out = c.empty(n, np.int32)
        kernels.loop_shapes.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(data), out)
        want = np.array([kernels.loop_shapes_reference(int(x)) for x in data], np.int32)
        check(c.read(out), want, "range(x, -5, -3), range(x, 50, 7) with continue and "
              "break, and a while inside a branch, per unit", cubecl_seed,
              inputs={"a": data})


class TestSharedBounds:
    """Checked mode holds for a cube's shared array as for a global one."""

    @pytest.mark.requires("shared_memory:256")
    def test_shared_reads_past_either_end_read_zero(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        data = cubecl_rng.uniform(1, 100, n).astype(np.float32)
        left, right = c.empty(n, np.float32), c.empty(n, np.float32)
        kernels.shared_neighbours.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(data),
                                         left, right, BLOCK=DIM)
        padded = np.zeros(-(-n // DIM) * DIM, np.float32)
        padded[:n] = data
        cubes = padded.reshape(-1, DIM)
        want_right = np.concatenate([cubes[:, 1:], np.zeros((len(cubes), 1), np.float32)],
                                    axis=1).reshape(-1)[:n]
        want_left = np.concatenate([np.zeros((len(cubes), 1), np.float32), cubes[:, :-1]],
                                   axis=1).reshape(-1)[:n]
        check(c.read(right), want_right, f"s[UNIT_POS + 1] in cubes of {DIM} (the last "
              f"unit reads index {DIM}, past the shared array: 0, not the next cube's)",
              cubecl_seed)
        check(c.read(left), want_left, f"s[UNIT_POS - 1] in cubes of {DIM} (the first "
              "unit reads index -1: 0, not the previous cube's)", cubecl_seed)


class TestClampOrder:
    """``clamp(x, lo, hi)`` is ``min(max(x, lo), hi)`` (docs/ir.md), bounds in any order."""

    def test_clamp_with_crossed_bounds_gives_hi(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        x = cubecl_rng.uniform(-100, 100, n).astype(np.float32)
        lo = cubecl_rng.uniform(-100, 100, n).astype(np.float32)
        hi = np.where(cubecl_rng.random(n) < 0.5, lo - cubecl_rng.uniform(1, 50, n),
                      lo + cubecl_rng.uniform(1, 50, n)).astype(np.float32)
        out = c.empty(n, np.float32)
        kernels.math3("clamp", ir.Elem.F32).launch(
            c, cubes_for(n, DIM), CubeDim(DIM), c.create(x), c.create(lo), c.create(hi), out)
        check(c.read(out), np.minimum(np.maximum(x, lo), hi), "clamp(x, lo, hi) on f32, "
              "half of them with lo > hi (then min(max(x, lo), hi) is hi)", cubecl_seed,
              inputs={"x": x, "lo": lo, "hi": hi})


@kernel
def constant_loops(out: Array[u32]) -> None:
    """Loops with constant bounds whose steps do not divide their ranges, both ways, and
    an empty one: each unit adds up the variable's values plus its own position."""
    i = ABSOLUTE_POS
    if i < len(out):
        acc = u32(0)
        for k in range(1, 20, 3):
            acc += u32(k)
        for k in range(17, 2, -4):
            acc += u32(k) * u32(100)
        for k in range(5, 5, 2):
            acc += u32(k) * u32(10000)
        for k in range(9, 0, 5):
            acc += u32(k) * u32(100000)
        out[i] = acc + i


class TestConstantLoops:
    """A counted loop with constant bounds runs ``ceil((stop - start) / step)`` times,
    its last iteration included when the step does not divide the range."""

    def test_steps_that_do_not_divide(self, cubecl_client: ComputeClient,
                                      cubecl_rng: np.random.Generator) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        out = c.empty(n, np.uint32)
        constant_loops.launch(c, cubes_for(n, DIM), CubeDim(DIM), out)
        per_unit = (sum(range(1, 20, 3)) + 100 * sum(range(17, 2, -4))
                    + 10000 * sum(range(5, 5, 2)) + 100000 * sum(range(9, 0, 5)))
        check(c.read(out), np.arange(n, dtype=np.uint32) + np.uint32(per_unit),
              "for over range(1, 20, 3), range(17, 2, -4), range(5, 5, 2), range(9, 0, 5)", 0)
