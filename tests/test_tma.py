"""Tensor maps: the hardware's rules with clear errors, the capability per backend, and
the CUDA side compile-checked through NVRTC (a kernel taking a CUtensorMap)."""

from __future__ import annotations

import pytest

from cubecl_server.backends.cpu.server import CAPABILITIES
from cubecl_server.ir import Elem
from cubecl_server.tma import TensorMap, TensorMapError, TmaFill, TmaInterleave, TmaSwizzle

GOOD = TensorMap(Elem.F32, shape=(1000, 300), strides=(4096,), box=(32, 16), address=256)


def test_a_map_within_the_rules_validates() -> None:
    assert GOOD.validate() is GOOD
    TensorMap(Elem.F16, (64,), (), (64,), swizzle=TmaSwizzle.B128).validate()


@pytest.mark.parametrize("change, message", [
    ({"shape": (4,) * 6, "strides": (16,) * 5, "box": (4,) * 6}, "rank 6"),
    ({"address": 8}, "not 16-byte aligned"),
    ({"strides": (4100,)}, r"strides\[0\].*multiple of\s+16"),
    ({"strides": (1 << 40,)}, "below 2\\^40"),
    ({"box": (512, 16)}, r"box\[0\] = 512"),
    ({"box": (3, 16)}, "multiple of 16 bytes"),
    ({"box": (64, 16), "swizzle": TmaSwizzle.B128}, "exceeds the 128-byte swizzle"),
    ({"shape": (0, 300)}, r"shape\[0\] = 0"),
    ({"element_strides": (1, 9)}, r"element_strides\[1\] = 9"),
    ({"box": (32,)}, "box has 1 entries, expected 2"),
    ({"interleave": TmaInterleave.B16}, "interleaved map needs rank >= 3"),
])
def test_each_rule_is_named_when_broken(change: dict, message: str) -> None:
    import dataclasses

    with pytest.raises(TensorMapError, match=message):
        dataclasses.replace(GOOD, **change).validate()


def test_nan_fill_is_for_floats_and_bool_is_no_tma_type() -> None:
    with pytest.raises(TensorMapError, match="only floating-point"):
        TensorMap(Elem.I32, (64,), (), (64,), fill=TmaFill.NAN).validate()
    with pytest.raises(TensorMapError, match="not one TMA moves"):
        TensorMap(Elem.BOOL, (64,), (), (64,)).validate()
    assert isinstance(TensorMapError("x"), ValueError)


def test_capability_is_off_on_cpu_and_on_for_cuda_sm90_only() -> None:
    assert CAPABILITIES.tma is False
    compile_only = pytest.importorskip("cubecl_cuda.compile_only")
    assert compile_only.CompileOnlyServer("sm_90").capabilities.tma is True
    assert compile_only.CompileOnlyServer("sm_80").capabilities.tma is False


def test_a_kernel_taking_a_tensor_map_compiles_for_sm90() -> None:
    tma = pytest.importorskip("cubecl_cuda.tma")
    out = tma.compile_tensor_map_kernel("sm_90")
    assert b"cp.async.bulk.tensor.2d" in out.ptx and out.cubin
    assert b".param .align 64 .b8 copy_tile_param_0[128]" in out.ptx
    with pytest.raises(ValueError, match="no tensor memory accelerator"):
        tma.compile_tensor_map_kernel("sm_80")
