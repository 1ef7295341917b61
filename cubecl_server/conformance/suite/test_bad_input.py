"""Bad input: wrong arguments at launch name the parameter; a kernel the backend
cannot compile raises CompilationError naming the kernel, with the backend's log."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.errors import CompilationError, LaunchError
from cubecl_server.kernel import CubeCount, CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")


class TestBadInput:
    """What a caller gets wrong is reported before anything runs."""

    def test_wrong_buffer_dtype_names_the_parameter(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a, out = c.create(np.zeros(8, np.int32)), c.empty(8, np.float32)
        with pytest.raises(TypeError, match=r"'a'.*f32"):
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, 2.0)

    def test_wrong_scalar_type_names_the_parameter(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a = c.create(np.zeros(8, np.int32))
        with pytest.raises(TypeError, match="'out'"):
            kernels.add_const.launch(c, CubeCount(1), CubeDim(8), a, 3, C=1)

    def test_scalar_where_buffer_expected(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a, out = c.create(np.zeros(8, np.float32)), c.empty(8, np.float32)
        with pytest.raises(TypeError, match="'k'"):
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, a)

    def test_wrong_argument_count(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a = c.create(np.zeros(8, np.float32))
        with pytest.raises(TypeError, match=r"takes 3 argument"):
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, a)

    def test_missing_comptime_value(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a, out = c.create(np.zeros(8, np.int32)), c.empty(8, np.int32)
        with pytest.raises(TypeError, match="C"):
            kernels.add_const.launch(c, CubeCount(1), CubeDim(8), a, out)

    @pytest.mark.compile_only
    def test_cube_larger_than_the_device_allows_names_the_limit(
            self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        too_big = CubeDim(c.capabilities.max_cube_dim + 1)
        with pytest.raises(LaunchError, match=f"max_cube_dim of {c.capabilities.max_cube_dim}"):
            c.prepare(kernels.scale, too_big)

    @pytest.mark.compile_only
    def test_uncompilable_kernel_raises_compilation_error(self,
                                                          cubecl_client: ComputeClient) -> None:
        bad = kernels.uncompilable()
        with pytest.raises(CompilationError) as info:
            cubecl_client.prepare(bad, CubeDim(32))  # type: ignore[arg-type]
        err = info.value
        assert err.kernel == "reads_a_missing_array", (
            f"the CompilationError names kernel {err.kernel!r}, expected "
            "'reads_a_missing_array'")
        assert err.backend == cubecl_client.backend, (
            f"the CompilationError names backend {err.backend!r}, expected "
            f"{cubecl_client.backend!r}")
        assert "reads_a_missing_array" in str(err), (
            f"the CompilationError's message does not name the kernel: {err}")
        assert isinstance(err.log, str), (
            f"the CompilationError's log is {type(err.log).__name__}, expected str")

    @pytest.mark.compile_only
    def test_f64_without_the_capability_is_refused_at_prepare(
            self, cubecl_client: ComputeClient) -> None:
        if cubecl_client.capabilities.f64:
            pytest.skip("the backend supports f64: nothing to refuse")
        with pytest.raises(LaunchError) as info:
            cubecl_client.prepare(kernels.f64_kernel, CubeDim(32))
        assert "'f64_kernel' uses f64" in str(info.value), (
            f"the LaunchError should name the kernel and f64, what the device lacks (its "
            f"Capabilities.f64 is False): {info.value}")

    def test_cube_count_past_an_axis_limit_names_the_limit(
            self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a, out = c.create(np.zeros(8, np.float32)), c.empty(8, np.float32)
        limit = c.capabilities.max_cube_count
        for axis in range(3):
            grid = [1, 1, 1]
            grid[axis] = limit[axis] + 1
            with pytest.raises(LaunchError, match=r"max_cube_count|units, past") as info:
                kernels.scale.launch(c, CubeCount(*grid), CubeDim(1), a, out, 2.0)
            assert "scale" in str(info.value), info.value
        # Refused before anything ran: the output was not touched, and the client works.
        kernels.scale.launch(c, CubeCount(1), CubeDim(8), c.create(np.ones(8, np.float32)),
                             out, 2.0)
        np.testing.assert_array_equal(c.read(out), np.full(8, 2.0, np.float32))

    def test_more_units_than_positions_can_number_is_refused(
            self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        a, out = c.create(np.zeros(8, np.float32)), c.empty(8, np.float32)
        # Within every axis limit a device may declare, and more units in all than a
        # u32 ABSOLUTE_POS can tell apart.
        with pytest.raises(LaunchError, match=r"8589672450 units, past the 4294967295"):
            kernels.scale.launch(c, CubeCount(65535, 65535, 1), CubeDim(2), a, out, 2.0)

    def test_a_buffer_of_another_client_is_refused(self, cubecl_client: ComputeClient) -> None:
        from cubecl_server.client import create_client

        c = cubecl_client
        other = create_client(c.backend, c.device.index)
        foreign = other.create(np.ones(8, np.float32))
        out = c.empty(8, np.float32)
        with pytest.raises(TypeError, match=r"parameter 'a'.*another client"):
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), foreign, out, 2.0)
        with pytest.raises(TypeError, match="another client"):
            c.read(foreign)
        with pytest.raises(TypeError, match="another client"):
            c.write(foreign, np.zeros(8, np.float32))
        assert out.taint is None, "a refused launch must not taint anything"
