"""The caller's own arrays as launch arguments (``cubecl_server.arrays``): NumPy arrays
and DLPack objects where a kernel takes a buffer, results in them after ``sync`` or a
``read``, launches in a row on them seeing each other's results, a failure raised at
delivery, and clear errors for arrays a kernel cannot use - against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubecl_server import errors, ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import cubes_for, random_size
from cubecl_server.kernel import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

DIM = 64
ADD = kernels.binary("add", ir.Elem.F32)


class _DLPackOnly:
    """An array that speaks only DLPack (as a tensor of another library does)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._a.__dlpack_device__()


def _random(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal(n).astype(np.float32)


class TestUserArrays:
    """Arrays in, results out, on the backend under test."""

    def test_launch_on_numpy_arrays(self, cubecl_client: ComputeClient) -> None:
        c, rng = cubecl_client, np.random.default_rng(41)
        n = random_size(rng, DIM)
        a, b = _random(rng, n), _random(rng, n)
        out = np.full(n, np.nan, np.float32)
        ADD.launch(c, cubes_for(n, DIM), CubeDim(DIM), a, b, out)
        c.sync()
        assert np.array_equal(out, a + b), (
            f"add on NumPy arrays of {n}: the output array holds {out[:4]} after sync, "
            f"want {(a + b)[:4]}")

    def test_results_delivered_by_a_read(self, cubecl_client: ComputeClient) -> None:
        c, rng = cubecl_client, np.random.default_rng(42)
        n = random_size(rng, DIM)
        a = _random(rng, n)
        out = np.zeros(n, np.float32)
        kernels.scale.launch(c, cubes_for(n, DIM), CubeDim(DIM), a, out, 3.0)
        other = c.create(np.arange(4, dtype=np.int32))
        c.read(other)
        assert np.array_equal(out, a * np.float32(3.0)), (
            "a read of another buffer did not deliver the array the launch wrote")

    def test_launches_in_a_row_see_each_other(self, cubecl_client: ComputeClient) -> None:
        # The second launch reads what the first wrote into the caller's array, with
        # no sync between them; and an array both read and written (out = out + b).
        c, rng = cubecl_client, np.random.default_rng(43)
        n = random_size(rng, DIM)
        a, b = _random(rng, n), _random(rng, n)
        mid, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
        grid = (cubes_for(n, DIM), CubeDim(DIM))
        kernels.scale.launch(c, *grid, a, mid, 2.0)
        ADD.launch(c, *grid, mid, b, out)
        ADD.launch(c, *grid, out, b, out)
        c.sync()
        want_mid = a * np.float32(2.0)
        assert np.array_equal(mid, want_mid), "the first launch's array is wrong after sync"
        assert np.array_equal(out, want_mid + b + b), (
            "a launch did not see what the launch before it wrote into the caller's array")

    def test_launches_in_a_row_each_take_their_own_scalar(
            self, cubecl_client: ComputeClient) -> None:
        # The same kernel on the same array three times with no sync, only its scalar
        # changing: a backend may keep what it bound for the launch before, but each
        # launch multiplies by its own scalar.
        c, rng = cubecl_client, np.random.default_rng(46)
        n = random_size(rng, DIM)
        out = _random(rng, n)
        want = out.copy()
        grid = (cubes_for(n, DIM), CubeDim(DIM))
        for k in (2.0, 3.0, 0.5):
            kernels.scale.launch(c, *grid, out, out, k)
            want = want * np.float32(k)
        c.sync()
        assert np.array_equal(out, want), (
            "out = out * k launched with k = 2, 3, 0.5 before one sync: "
            f"{np.count_nonzero(out != want)} of {n} elements wrong (a launch took "
            "another launch's scalar)")

    def test_buffers_and_arrays_mix(self, cubecl_client: ComputeClient) -> None:
        c, rng = cubecl_client, np.random.default_rng(44)
        n = random_size(rng, DIM)
        a, b = _random(rng, n), _random(rng, n)
        hb, hout = c.create(b), c.empty(n, np.float32)
        ADD.launch(c, cubes_for(n, DIM), CubeDim(DIM), a, hb, hout)
        assert np.array_equal(c.read(hout), a + b), "an array beside buffers was misread"

    def test_strided_input_and_dlpack(self, cubecl_client: ComputeClient) -> None:
        c, rng = cubecl_client, np.random.default_rng(45)
        n = random_size(rng, DIM)
        wide = _random(rng, 2 * n)
        b = _random(rng, n)
        out = np.zeros(n, np.float32)
        ADD.launch(c, cubes_for(n, DIM), CubeDim(DIM), wide[::2], _DLPackOnly(b),
                   _DLPackOnly(out))
        c.sync()
        assert np.array_equal(out, wide[::2] + b), (
            "a strided input or arrays passed through DLPack gave a wrong result")

    def test_failure_raised_where_results_are_delivered(
            self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        out = np.full(DIM, 5.0, np.float32)
        kernels.uncompilable("fails_on_purpose").launch(
            c, cubes_for(DIM, DIM), CubeDim(DIM), np.ones(DIM, np.float32), out)
        with pytest.raises(errors.TaintedBufferError) as info:
            c.sync()
        text = str(info.value)
        assert "'out'" in text and "fails_on_purpose" in text, (
            f"the error does not name the parameter and the failed kernel:\n{text}")
        assert np.array_equal(out, np.full(DIM, 5.0, np.float32)), (
            "a failed launch changed the caller's array")
        c.sync()  # delivered once: the next sync has nothing to report

    @pytest.mark.parametrize("bad, why", [
        (np.zeros(DIM, np.float64), "float64"),
        (np.zeros(2 * DIM, np.float32)[::2], "C-contiguous"),
        (np.broadcast_to(np.float32(0), (DIM,)), "read-only"),
        ([0.0] * DIM, "list"),
    ], ids=["dtype", "strided-output", "read-only-output", "list"])
    def test_unusable_output_refused(self, cubecl_client: ComputeClient, bad: Any,
                                     why: str) -> None:
        c = cubecl_client
        with pytest.raises(TypeError) as info:
            kernels.scale.launch(c, cubes_for(DIM, DIM), CubeDim(DIM),
                                 np.ones(DIM, np.float32), bad, 2.0)
        text = str(info.value)
        assert "'out'" in text and why in text, f"the TypeError does not say why:\n{text}"
