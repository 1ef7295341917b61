"""Errors that travel with the data (ERROR_HANDLING.md): a failed launch taints its
outputs, reads show the chain, a write clears it, sync reports what nobody read."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import errors, ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.kernel import CubeCount, CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

N = 64
ONE = (CubeCount(1), CubeDim(N))


def _fail_into(c: ComputeClient, out: object) -> None:
    """Launch a kernel that cannot compile, writing ``out``: the launch itself does not
    raise, its output is tainted."""
    a = c.create(np.ones(N, np.float32))
    kernels.uncompilable("fails_on_purpose").launch(c, *ONE, a, out)


class TestErrorHandling:
    """The taint model, through the client, on the backend under test."""

    def test_failed_launch_taints_its_output(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        out = c.empty(N, np.float32)
        _fail_into(c, out)
        with pytest.raises(errors.TaintedBufferError) as info:
            c.read(out)
        assert "fails_on_purpose" in str(info.value), str(info.value)

    def test_chain_of_three_launches(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        b, d, e = (c.empty(N, np.float32) for _ in range(3))
        _fail_into(c, b)
        kernels.scale.launch(c, *ONE, b, d, 2.0)
        kernels.scale.launch(c, *ONE, d, e, 2.0)
        for h in (b, d, e):
            with pytest.raises(errors.TaintedBufferError) as info:
                c.read(h)
            assert "fails_on_purpose" in str(info.value), (
                f"the error does not show the chain back to the root failure:\n{info.value}")

    def test_diamond_only_the_failed_branch(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        src = c.create(np.arange(N, dtype=np.float32))
        left, right, joined = (c.empty(N, np.float32) for _ in range(3))
        _fail_into(c, left)
        kernels.scale.launch(c, *ONE, src, right, 3.0)
        kernels.binary("add", ir.Elem.F32).launch(c, *ONE, left, right, joined)
        assert np.array_equal(c.read(right), np.arange(N, dtype=np.float32) * 3), (
            "the branch that did not fail computed a wrong result")
        with pytest.raises(errors.TaintedBufferError):
            c.read(joined)

    def test_write_clears_the_taint(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        out = c.empty(N, np.float32)
        _fail_into(c, out)
        c.write(out, np.full(N, 5.0, np.float32))
        assert np.array_equal(c.read(out), np.full(N, 5.0, np.float32)), (
            "a write over a tainted buffer did not store what was written")
        result = c.empty(N, np.float32)
        kernels.scale.launch(c, *ONE, out, result, 2.0)
        assert np.array_equal(c.read(result), np.full(N, 10.0, np.float32)), (
            "a launch reading a buffer whose taint a write cleared computed a wrong result")

    def test_a_launch_that_only_writes_a_tainted_buffer_clears_it(
            self, cubecl_client: ComputeClient) -> None:
        # The taint stops launches that read it; one that only writes the buffer runs,
        # and what it wrote is valid again.
        c = cubecl_client
        out = c.empty(N, np.float32)
        _fail_into(c, out)
        kernels.scale.launch(c, *ONE, c.create(np.arange(N, dtype=np.float32)), out, 3.0)
        try:
            got = c.read(out)
        except errors.TaintedBufferError as e:
            pytest.fail(f"a launch that wrote a tainted buffer without reading it did not "
                        f"clear the taint: {e}")
        assert np.array_equal(got, np.arange(N, dtype=np.float32) * 3), (
            f"a launch writing a once-tainted buffer computed {got[:6]}..., expected "
            "a * 3")

    def test_unrelated_buffers_and_the_client_keep_working(self,
                                                           cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        keep = c.create(np.arange(N, dtype=np.float32))
        out = c.empty(N, np.float32)
        _fail_into(c, out)
        other = c.empty(N, np.float32)
        kernels.scale.launch(c, *ONE, keep, other, 2.0)
        assert np.array_equal(c.read(keep), np.arange(N, dtype=np.float32)), (
            "a failed launch changed a buffer it does not write")
        assert np.array_equal(c.read(other), np.arange(N, dtype=np.float32) * 2), (
            "after a failed launch the next launch computed a wrong result")

    def test_sync_reports_failures_nobody_read(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        out = c.empty(N, np.float32)
        _fail_into(c, out)
        c.sync()  # the buffer is alive: whoever reads it will be told
        c.write(out, np.zeros(N, np.float32))  # now nobody can read the failure any more
        with pytest.raises(errors.UnreadFailuresError) as info:
            c.sync()
        assert "fails_on_purpose" in str(info.value), str(info.value)
        c.sync()  # reported once
