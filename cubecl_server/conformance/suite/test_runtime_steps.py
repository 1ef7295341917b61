"""Loops whose step is known at run time only (docs/ir.md, ``For``): the grid-stride
loop over ``CUBE_DIM * CUBE_COUNT``, the block-stride loop over ``CUBE_DIM``, and a
signed scalar step of either sign, against plain Python's ``range`` on random bounds
that do not divide evenly, a step larger than the range, empty ranges, a start beyond
the stop, bounds at the type's extremes and a step of 0 (no iterations)."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import ComputeClient
from cubecl_server.conformance.support import check, cubes_for, random_size
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_COUNT,
    CUBE_DIM,
    CUBE_POS,
    UNIT_POS,
    Array,
    CubeCount,
    CubeDim,
    f32,
    i32,
    kernel,
    u32,
)

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

DIM = 64


@kernel
def grid_stride(a: Array[f32], out: Array[f32]) -> None:
    """``out = 2 * a + 1`` by a grid smaller (or larger) than the array."""
    for b in range(ABSOLUTE_POS, len(out), CUBE_DIM * CUBE_COUNT):
        out[b] = a[b] * 2.0 + 1.0


@kernel
def block_stride(a: Array[f32], partial: Array[f32], cols: u32) -> None:
    """Cube ``r`` sums row ``r`` of ``a`` (``cols`` wide): unit ``u`` adds the columns
    ``u, u + CUBE_DIM, ...`` into ``partial[r * CUBE_DIM + u]``."""
    acc = f32(0.0)
    for j in range(UNIT_POS, cols, CUBE_DIM):
        acc += a[CUBE_POS * cols + j]
    partial[CUBE_POS * CUBE_DIM + UNIT_POS] = acc


@kernel
def signed_step(starts: Array[i32], stops: Array[i32], counts: Array[i32],
                sums: Array[i32], step: i32) -> None:
    """For each unit's bounds, the trip count and the (wrapping) sum of the values of
    ``range(starts[i], stops[i], step)``."""
    i = ABSOLUTE_POS
    if i < len(counts):
        n = 0
        s = 0
        for v in range(starts[i], stops[i], step):
            n += 1
            s += v
        counts[i] = n
        sums[i] = s


@kernel
def bounds_once(out: Array[i32], start: i32, stop: i32, step: i32) -> None:
    """Unit 0 stores ``range(s, e, st)`` while its body changes ``s``, ``e`` and
    ``st``: the bounds and the step were taken once, before the first iteration."""
    if ABSOLUTE_POS == 0:
        n = 0
        s = start
        e = stop
        st = step
        for v in range(s, e, st):
            out[n] = v
            n += 1
            s = s + 5
            e = e + 3
            st = st + 1
        out[len(out) - 1] = n


class TestRuntimeSteps:
    """A ``range`` step that is a value of the launch, not a constant."""

    @pytest.mark.parametrize("cubes", [1, 3, 40], ids=["one-cube", "three-cubes", "more-units"])
    def test_grid_stride_loop_covers_every_element_once(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, cubes: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        a = cubecl_rng.uniform(-100, 100, n).astype(np.float32)
        out = c.create(np.full(n, np.nan, np.float32))
        grid_stride.launch(c, CubeCount(cubes), CubeDim(DIM), c.create(a), out)
        check(c.read(out), a * np.float32(2) + np.float32(1), f"out = 2a + 1 by "
              f"range(ABSOLUTE_POS, {n}, CUBE_DIM * CUBE_COUNT) with {cubes} cube(s) of "
              f"{DIM}", cubecl_seed, inputs={"a": a})

    def test_block_stride_loop_sums_each_row(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        rows = int(cubecl_rng.integers(2, 6))
        cols = random_size(cubecl_rng, DIM)
        a = cubecl_rng.integers(-50, 50, (rows, cols)).astype(np.float32)
        partial = c.create(np.full(rows * DIM, np.nan, np.float32))
        block_stride.launch(c, CubeCount(rows), CubeDim(DIM), c.create(a.reshape(-1)),
                            partial, np.uint32(cols))
        padded = np.zeros((rows, -(-cols // DIM) * DIM), np.float32)
        padded[:, :cols] = a
        want = padded.reshape(rows, -1, DIM).sum(axis=1).reshape(-1)
        check(c.read(partial), want, f"unit u of cube r sums a[r, u::{DIM}] by "
              f"range(UNIT_POS, {cols}, CUBE_DIM)", cubecl_seed)

    @pytest.mark.parametrize("step", [1, 3, 7, -1, -4, 500, -500, 0])
    def test_signed_step_of_either_sign(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, step: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        starts = cubecl_rng.integers(-200, 200, n).astype(np.int32)
        stops = cubecl_rng.integers(-200, 200, n).astype(np.int32)
        stops[: n // 8] = starts[: n // 8]  # empty ranges
        self._run(c, starts, stops, step, cubecl_seed)

    @pytest.mark.parametrize("step", [2**30, -2**30, 2**31 - 1, -2**31])
    def test_steps_and_bounds_at_the_extremes_never_wrap(
            self, cubecl_client: ComputeClient, cubecl_seed: int, step: int) -> None:
        lo, hi = -2**31, 2**31 - 1
        bounds = [(lo, hi), (hi, lo), (lo, lo), (hi, hi), (0, hi), (hi, 0), (lo, 0),
                  (0, lo), (hi - 1, hi), (lo + 1, lo), (-5, 5), (5, -5)]
        starts = np.array([b[0] for b in bounds], np.int32)
        stops = np.array([b[1] for b in bounds], np.int32)
        self._run(cubecl_client, starts, stops, step, cubecl_seed)

    @staticmethod
    def _run(c: ComputeClient, starts: np.ndarray, stops: np.ndarray, step: int,
             seed: int) -> None:
        n = len(starts)
        counts, sums = c.empty(n, np.int32), c.empty(n, np.int32)
        signed_step.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(starts),
                           c.create(stops), counts, sums, np.int32(step))
        # Python's range, where a step of 0 (an error there) runs no iterations.
        ranges = [range(int(a), int(b), step) if step else range(0) for a, b in
                  zip(starts, stops, strict=True)]
        want_counts = np.array([len(r) for r in ranges], np.int64).astype(np.int32)
        want_sums = np.array([sum(r) for r in ranges], object)
        want_sums = np.array([(int(x) + 2**31) % 2**32 - 2**31 for x in want_sums], np.int32)
        inputs = {"start": starts, "stop": stops}
        check(c.read(counts), want_counts, f"the trip count of range(start, stop, {step}) "
              "with a step known at run time only", seed, inputs=inputs)
        check(c.read(sums), want_sums, f"the sum of range(start, stop, {step}) (wrapping in "
              "i32) with a step known at run time only", seed, inputs=inputs)

    @pytest.mark.parametrize("step", [4, -3])
    def test_bounds_and_step_are_taken_once(self, cubecl_client: ComputeClient,
                                            cubecl_seed: int, step: int) -> None:
        c = cubecl_client
        start, stop = (3, 40) if step > 0 else (30, -7)
        out = c.create(np.full(64, -1, np.int32))
        bounds_once.launch(c, CubeCount(1), CubeDim(1), out, np.int32(start), np.int32(stop),
                           np.int32(step))
        values = list(range(start, stop, step))
        want = np.full(64, -1, np.int32)
        want[: len(values)], want[-1] = values, len(values)
        check(c.read(out), want, f"range(s, e, st) from ({start}, {stop}, {step}) while "
              "the body adds to s, e and st (the loop must not see it)", cubecl_seed)
