"""CUDA arrays (CuPy arrays, PyTorch CUDA tensors: ``__cuda_array_interface__``) as
launch arguments, used in place. Without a GPU a stand-in object speaks the interface
(no memory behind its address: nothing is launched); with one (the device check) real
CuPy arrays and, where installed, torch tensors run through a kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cubecl_cuda.server import CudaServer, device_binding
from cuda_support import gpu_present

from cubecl_server import ir
from cubecl_server.arrays import CudaArrayServer, UserArrays, cuda_array
from cubecl_server.client import create_client
from cubecl_server.conformance import kernels
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.memory_management import MemoryManagement
from cubecl_server.storage import BytesStorage

OUT = ir.Param("out", ir.Elem.F32, True)


class _StandIn:
    """An object in CUDA device memory as CuPy describes one (a stand-in: this machine
    has no GPU, so the address is never dereferenced)."""

    def __init__(self, shape: tuple[int, ...], typestr: str = "<f4", *,
                 readonly: bool = False, strides: tuple[int, ...] | None = None,
                 stream: int | None = 7) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (0x7F00_0000_1000, readonly),
            "strides": strides, "version": 3, "stream": stream}


def test_the_interface_is_checked_against_the_parameter() -> None:
    got = cuda_array("k", OUT, _StandIn((4, 8)), written=True)
    assert (got.ptr, got.shape, got.nbytes, got.stream) == (0x7F00_0000_1000, (4, 8), 128, 7)
    for bad, why in [(_StandIn((8,), "<f8"), "float64"),
                     (_StandIn((8,), readonly=True), "read-only"),
                     (_StandIn((4, 8), strides=(4, 16)), "C-contiguous")]:
        with pytest.raises(TypeError, match=why) as info:
            cuda_array("k", OUT, bad, written=True)
        assert "'out'" in str(info.value)
    # Strides that are C order's own are contiguous.
    assert cuda_array("k", OUT, _StandIn((4, 8), strides=(32, 4)), written=True).nbytes == 128


def test_a_cuda_array_is_bound_in_place() -> None:
    class _Server:
        # The real server's cuda_binding also orders its stream after the array's one,
        # which needs a GPU; the binding it returns is this one.
        def cuda_binding(self, array: Any, elem: ir.Elem) -> Any:
            return device_binding(array, elem)

    assert isinstance(_Server(), CudaArrayServer)
    made: list[object] = []
    users = UserArrays(MemoryManagement(BytesStorage()), _Server(),
                       lambda arr: made.append(arr))  # type: ignore[arg-type, return-value]
    a = _StandIn((16,))
    handle = users.bind("k", OUT, a, written=True)
    assert handle is not None and not made, "a CUDA array was copied"
    b = handle.binding()
    # What the server launches with: the array's own address.
    assert CudaServer._address(None, b) == 0x7F00_0000_1000  # type: ignore[arg-type]
    assert (b.size, b.shape, b.elem) == (64, (16,), ir.Elem.F32)
    assert users.bind("k", OUT, a, written=False) is handle


@pytest.mark.skipif(not gpu_present(), reason="no GPU here: the stand-in tests above "
                    "cover the binding; the device check runs this one")
def test_cupy_arrays_and_torch_tensors_run_in_place() -> None:
    import cupy

    c = create_client("cuda")
    rng = np.random.default_rng(3)
    n = 1000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    da, db, dout = cupy.asarray(a), cupy.asarray(b), cupy.zeros(n, cupy.float32)
    address = dout.data.ptr
    add = kernels.binary("add", ir.Elem.F32)
    add.launch(c, CubeCount(4), CubeDim(256), da, db, dout)
    c.sync()
    assert dout.data.ptr == address
    assert np.array_equal(cupy.asnumpy(dout), a + b)
    assert c.stats().bytes_written == 0, "a CUDA array went through the host"
    try:
        import torch
    except ImportError:
        return
    ta, tout = torch.from_numpy(a).cuda(), torch.zeros(n, device="cuda")
    kernels.scale.launch(c, CubeCount(4), CubeDim(256), ta, tout, 2.0)
    c.sync()
    assert np.array_equal(tout.cpu().numpy(), a * np.float32(2.0))
