"""Tensor maps: the hardware's rules with clear errors, the capability off on cpu, the
language and the checker, and the launch's checks. (The CUDA side, on for sm_90 and
compile-checked through NVRTC, is plugins/cubecl-cuda/tests/test_tma.py.)"""

from __future__ import annotations

import pytest

import cubecl_server.lang as cl
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


def test_capability_is_off_on_cpu() -> None:
    # CUDA's, on sm_90 only: plugins/cubecl-cuda/tests/test_tma.py.
    assert CAPABILITIES.tma is False


# ---------------------------------------------------------------- the kernel language


@cl.kernel
def copy_tiles(m: cl.TensorMap[cl.f32], out: cl.Array[cl.f32], cols: cl.u32) -> None:
    """The 16 x 16 box at the cube's position, written to ``out``."""
    tile = cl.shared(cl.f32, 256)
    cl.tma_load(m, tile, cl.i32(cl.CUBE_POS_X * 16), cl.i32(cl.CUBE_POS_Y * 16))
    out[(cl.CUBE_POS_Y * 16 + cl.UNIT_POS // 16) * cols + cl.CUBE_POS_X * 16
        + cl.UNIT_POS % 16] = tile[cl.UNIT_POS]


@cl.kernel
def divergent(m: cl.TensorMap[cl.f32], out: cl.Array[cl.f32]) -> None:
    """Coordinates of each unit's own."""
    tile = cl.shared(cl.f32, 16)
    cl.tma_load(m, tile, cl.i32(cl.UNIT_POS))
    out[cl.UNIT_POS] = tile[cl.UNIT_POS]


@cl.kernel
def read(m: cl.TensorMap[cl.f32], out: cl.Array[cl.f32]) -> None:
    """A tensor map read as a value."""
    out[cl.UNIT_POS] = m


@cl.kernel
def into_an_array(m: cl.TensorMap[cl.f32], out: cl.Array[cl.f32]) -> None:
    """A load into global memory."""
    cl.tma_load(m, out, 0)


def test_a_tensor_map_parameter_and_its_load_become_ir() -> None:
    from cubecl_server import ir

    k = copy_tiles.ir()
    m = k.param("m")
    assert m.tensor_map and not m.array and m.elem is Elem.F32
    (load,) = [n for n in ir.walk(k.body) if isinstance(n, ir.TensorMapLoad)]
    assert (load.map, load.shared, len(load.coords)) == ("m", "tile", 2)
    assert {c.type for c in load.coords} == {Elem.I32}
    assert "m: TensorMap[f32]" in ir.format_kernel(k) and "tma_load(m, tile, " in \
        ir.format_kernel(k)
    assert ir.kernel_from_json(ir.kernel_to_json(k)) == k
    # The field is left out at its default: every kernel without one keeps its digest.
    assert "tensor_map" not in ir.to_json(ir.Param("x", Elem.F32, True))
    assert '"tensor_map":true' in ir.to_json(m)


def _kernel(params: tuple, body: tuple, shared: tuple = ()):  # type: ignore[no-untyped-def]
    from cubecl_server import ir

    return ir.Kernel("k", params, (), shared, body)


@pytest.mark.parametrize("what, message", [
    ("elem", "holds f32, but shared array 'tile' holds i32"),
    ("rank", "loaded with 1 coordinates here and 2 elsewhere"),
    ("coord", "coordinate is u32, not i32"),
    ("var", "'m' is a tensor map"),
    ("array", "'a' is not a tensor map parameter"),
])
def test_the_checker_holds_tensor_maps_to_their_rules(what: str, message: str) -> None:
    from cubecl_server import ir
    from cubecl_server.errors import CompilationError
    from cubecl_server.ir_check import check_kernel

    m = ir.Param("m", Elem.F32, False, tensor_map=True)
    a = ir.Param("a", Elem.F32, True)
    zero = ir.Const(0, Elem.I32)
    good = ir.TensorMapLoad("m", "tile", (zero, zero))
    tile = ir.SharedArray("tile", Elem.I32 if what == "elem" else Elem.F32, 16)
    body: tuple = {
        "elem": (good,),
        "rank": (good, ir.TensorMapLoad("m", "tile", (zero,))),
        "coord": (ir.TensorMapLoad("m", "tile", (zero, ir.Const(0, Elem.U32))),),
        "var": (ir.Store("a", ir.Const(0, Elem.U32), ir.Var("m", Elem.F32)),),
        "array": (ir.TensorMapLoad("a", "tile", (zero,)),),
    }[what]
    check_kernel(_kernel((m, a), (good,), (ir.SharedArray("tile", Elem.F32, 16),)), "cpu")
    with pytest.raises(CompilationError, match=message):
        check_kernel(_kernel((m, a), body, (tile,)), "cpu")


def test_the_language_refuses_misuse_of_a_tensor_map() -> None:
    from cubecl_server.errors import KernelSyntaxError

    for k, message in ((divergent, "coordinates that depend on the unit"),
                       (read, "tensor map `m` can only be passed to tma_load"),
                       (into_an_array, "second argument of tma_load.. must be a shared")):
        with pytest.raises(KernelSyntaxError, match=message):
            k.ir()
    with pytest.raises(TypeError, match="numeric scalar type"):
        cl.TensorMap[cl.bool_]


# ---------------------------------------------------------------- launches


def test_a_device_without_tma_refuses_the_launch_naming_the_capability() -> None:
    import numpy as np

    from cubecl_server.client import create_client
    from cubecl_server.errors import LaunchError
    from cubecl_server.tma import TensorMapArg

    c = create_client("cpu")
    src, out = c.create(np.zeros((16, 16), np.float32)), c.empty(256, np.float32)
    tmap = TensorMap(Elem.F32, (16, 16), (64,), (16, 16))
    with pytest.raises(LaunchError, match=r"`tma` capability \(Capabilities.tma is False"):
        copy_tiles.launch(c, (1, 1), 256, TensorMapArg(tmap, src), out, np.uint32(16))


def test_the_launch_checks_the_map_against_kernel_and_buffer() -> None:
    # A cpu client that claims tma gets as far as binding: the checks a CUDA launch
    # makes run for real; its compiler then refuses the kernel, naming the capability.
    import dataclasses

    import numpy as np

    from cubecl_server.client import create_client
    from cubecl_server.errors import CompilationError, LaunchError, TaintedBufferError
    from cubecl_server.tma import TensorMapArg

    c = create_client("cpu")
    c.server.capabilities = dataclasses.replace(c.server.capabilities, tma=True)
    k = copy_tiles
    src, out = c.create(np.zeros((16, 16), np.float32)), c.empty(256, np.float32)
    good = TensorMap(Elem.F32, (16, 16), (64,), (16, 16))

    def launch(arg: object) -> None:
        k.launch(c, (1, 1), 256, arg, out, np.uint32(16))

    with pytest.raises(TypeError, match=r"pass a cubecl_server\.tma\.TensorMapArg"):
        launch(src)
    with pytest.raises(TypeError, match="a map of i32 over a buffer of f32"):
        launch(TensorMapArg(dataclasses.replace(good, elem=Elem.I32), src))
    with pytest.raises(LaunchError, match="loads it with 2 coordinates, the map has rank 1"):
        launch(TensorMapArg(TensorMap(Elem.F32, (256,), (), (256,)), src))
    with pytest.raises(LaunchError, match=r"box \(16, 8\) holds 128 elements.*holds 256"):
        launch(TensorMapArg(dataclasses.replace(good, box=(16, 8)), src))
    with pytest.raises(LaunchError, match="spans 1088 bytes, past its buffer of 1024"):
        launch(TensorMapArg(dataclasses.replace(good, shape=(16, 17)), src))
    with pytest.raises(TensorMapError, match="strides"):
        launch(TensorMapArg(dataclasses.replace(good, strides=(60,)), src))
    launch(TensorMapArg(good, src))
    with pytest.raises(TaintedBufferError) as err:
        c.read(out)
    assert isinstance(err.value.__cause__, CompilationError)
    assert "`tma` capability" in str(err.value.__cause__)
