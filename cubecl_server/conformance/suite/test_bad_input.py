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
        assert err.kernel == "reads_a_missing_array", err.kernel
        assert err.backend == cubecl_client.backend
        assert "reads_a_missing_array" in str(err)
        assert isinstance(err.log, str)

    @pytest.mark.compile_only
    def test_f64_without_the_capability_is_a_compilation_error(
            self, cubecl_client: ComputeClient) -> None:
        if cubecl_client.capabilities.f64:
            pytest.skip("the backend supports f64: nothing to refuse")
        with pytest.raises(CompilationError) as info:
            cubecl_client.prepare(kernels.f64_kernel, CubeDim(32))
        assert info.value.kernel == "f64_kernel"
        assert "f64" in str(info.value) or "double" in str(info.value), (
            "the CompilationError should say that f64 is what the device lacks: "
            f"{info.value}")
