"""The ``cuda`` backend's server: one GPU, one stream, launches through CuPy."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import cupy
import numpy as np
from cupy.cuda import runtime
from cupy.cuda.function import Module

from cubecl_cuda.artifact import LoadedCudaKernel
from cubecl_cuda.capabilities import capabilities
from cubecl_cuda.driver import MODULE_REJECTED, CudaError, cuda_error, status_name
from cubecl_cuda.storage import CudaStorage
from cubecl_cuda.tma import arch_has_tma, encode_tiled, tensor_map_value
from cubecl_server.backend import Binding, CubeCount, CubeDim, DeviceInfo
from cubecl_server.backend.features import BoundTensorMap, CudaArray, DeviceEvent
from cubecl_server.backend.support import ArtifactRejected
from cubecl_server.ir import Elem

__all__ = ["CudaServer", "device_arch", "device_binding"]


def device_arch(index: int) -> str:
    """The exact SM architecture of device ``index`` (``sm_90``), from its compute
    capability; two GPUs of one architecture run each other's cubins."""
    props = runtime.getDeviceProperties(index)
    return f"sm_{props['major']}{props['minor']}"


def _elements(b: Binding) -> int:
    n = b.size // (b.elem.bits // 8)
    if n > 0xFFFFFFFF:
        raise ValueError(f"an array of {n} elements is past what a u32 index reaches")
    return n


def _extent(dims: tuple[int, ...], axis: int) -> int:
    return dims[axis] if axis < len(dims) else 1


def _wire(value: np.generic, wire: str) -> np.generic:
    if wire == "uint16":  # an f16 scalar travels as its bits
        return np.asarray(value, dtype=np.float16).view(np.uint16)[()]
    if wire == "uint8":  # a bool scalar travels as one byte
        return np.uint8(bool(value))
    return np.dtype(wire).type(value)


@dataclass(frozen=True)
class _CallersMemory:
    """A binding's resource over memory a caller owns: its address, its owner kept."""

    ptr: int
    owner: Any


def device_binding(array: CudaArray, elem: Elem) -> Binding:
    """The binding of a caller's CUDA array: its address as the resource, whole."""
    return Binding(_CallersMemory(array.ptr, array.owner), 0, array.nbytes, elem, array.shape)


class CudaServer:
    """One GPU: its memory, a non-blocking stream every copy and launch is ordered on,
    and the modules loaded on its (primary) context.

    A :class:`~cubecl_server.server.DeviceTimer` through CUDA events: between
    ``start_timing`` and ``stop_timing`` each launch is bracketed by a pair of events
    on the stream, and ``stop_timing`` returns the sum of the pairs' elapsed times.
    That is the time the GPU spent on the launches themselves, not the wall span of
    the window: host time between launches (and copies made meanwhile) is left out,
    as with OpenCL's event profiling (a pair does hold the few microseconds a launch
    takes to reach a GPU that was idle). Outside a timing window a launch records
    nothing.
    """

    backend = "cuda"

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self.index = device.index
        self._device = cupy.cuda.Device(self.index)
        with self._device:
            props = runtime.getDeviceProperties(self.index)
            self.arch = f"sm_{props['major']}{props['minor']}"
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.capabilities = dataclasses.replace(
            capabilities(max_threads=int(props["maxThreadsPerBlock"]),
                         shared_bytes=int(props["sharedMemPerBlock"])),
            tma=arch_has_tma(self.arch))
        self.storage = CudaStorage(self.index)
        self._events: list[tuple[cupy.cuda.Event, cupy.cuda.Event]] | None = None
        """Each launch's (before, after) events while timing, else None."""

    def _address(self, b: Binding) -> int:
        return int(b.resource.ptr) + b.offset

    def cuda_binding(self, array: CudaArray, elem: Elem) -> Binding:
        """A binding over a caller's CUDA array (a CuPy array, a CUDA tensor) in place,
        this stream made to wait for the work its producer put on its own."""
        if array.stream is not None:
            with self._device:
                # The interface's own stream handles (1: legacy default, 2: per-thread
                # default, else a cudaStream_t) are what cudaEventRecord takes.
                done = cupy.cuda.Event(disable_timing=True)
                done.record(cupy.cuda.ExternalStream(array.stream))
                self.stream.wait_event(done)
        return device_binding(array, elem)

    def read(self, binding: Binding) -> np.ndarray:
        """A host copy of the binding's elements (waits for the work before it)."""
        host = np.empty(_elements(binding), dtype=binding.elem.numpy_name)
        if binding.size:
            with self._device:
                try:
                    runtime.memcpyAsync(host.ctypes.data, self._address(binding), binding.size,
                                        runtime.memcpyDeviceToHost, self.stream.ptr)
                    self.stream.synchronize()
                except CudaError as e:
                    raise cuda_error("cudaMemcpyAsync(DtoH)", e) from e
        return host

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding, ordered after the work launched before."""
        if data.nbytes != binding.size:
            raise ValueError(f"writing {data.nbytes} bytes into a binding of {binding.size}")
        if not binding.size:
            return
        src = np.ascontiguousarray(data)
        with self._device:
            try:
                # From pageable memory the call returns once the bytes are staged, so
                # ``src`` may go away as soon as it returns.
                runtime.memcpyAsync(self._address(binding), src.ctypes.data, binding.size,
                                    runtime.memcpyHostToDevice, self.stream.ptr)
            except CudaError as e:
                raise cuda_error("cudaMemcpyAsync(HtoD)", e) from e

    def load_module(self, image: bytes, entry: str) -> tuple[Module, Any]:
        """Load a cubin or PTX image and find ``entry`` in it.

        ``ArtifactRejected`` when the driver refuses the image; ``DriverError`` for
        any other failure.
        """
        with self._device:
            module = Module()
            try:
                module.load(image)
                return module, module.get_function(entry)
            except CudaError as e:
                if int(e.status) in MODULE_REJECTED:
                    raise ArtifactRejected(f"{status_name(e)}: {e}") from e
                raise cuda_error("cuModuleLoadData", e) from e

    def launch(self, kernel: LoadedCudaKernel, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        """Launch on the stream: a grid of ``count`` blocks of ``dim`` threads."""
        block = (dim.x, dim.y, dim.z)
        if block != kernel.cube_dim:
            raise ValueError(f"kernel {kernel.name!r} was compiled for cube dim "
                             f"{kernel.cube_dim}, launched with {block}")
        # The client refused a grid past MAX_GRID (the capabilities' max_cube_count).
        grid = (count.x, count.y, count.z)
        if count.total == 0:
            return
        args: list[np.generic] = []
        for p in kernel.params:
            if p.kind == "array":
                args.append(np.uint64(self._address(arrays[p.index])))
            elif p.kind == "scalar":
                args.append(_wire(scalars[p.index], p.wire))
            elif p.kind == "tensor_map":
                args.append(self._tensor_map(scalars[p.index]))
            elif p.kind == "buffer_len":
                args.append(np.uint32(_elements(arrays[p.index])))
            elif p.kind == "len":
                args.append(np.uint32(arrays[p.index].length))
            elif p.kind == "rank":
                args.append(np.uint32(len(arrays[p.index].shape)))
            elif p.kind == "shape":
                args.append(np.uint32(_extent(arrays[p.index].shape, p.dim)))
            else:
                args.append(np.uint32(_extent(arrays[p.index].element_strides, p.dim)))
        events = self._events
        with self._device:
            try:
                if events is None:
                    kernel.function(grid, block, tuple(args), stream=self.stream)
                else:
                    before, after = cupy.cuda.Event(), cupy.cuda.Event()
                    before.record(self.stream)
                    kernel.function(grid, block, tuple(args), stream=self.stream)
                    after.record(self.stream)
                    events.append((before, after))
            except CudaError as e:
                raise cuda_error(f"cuLaunchKernel({kernel.name})", e) from e

    def _tensor_map(self, bound: BoundTensorMap) -> np.void:
        """The launch argument of a tensor map: its ``CUtensorMap``, encoded by the
        driver over the binding's device address, as a 128-byte value."""
        with self._device:
            raw = encode_tiled(bound.map, self._address(bound.binding))
        return tensor_map_value(raw)

    def sync(self) -> None:
        """Wait for the stream; a kernel's asynchronous fault surfaces here."""
        with self._device:
            try:
                self.stream.synchronize()
            except CudaError as e:
                raise cuda_error("cudaStreamSynchronize", e) from e

    def start_timing(self) -> None:
        """Time every launch from now on, each between two events on the stream."""
        if self._events is not None:
            raise RuntimeError("start_timing while already timing")
        self._events = []

    def stop_timing(self) -> float:
        """Wait for the stream, stop timing and return the seconds the GPU spent on
        the launches since :meth:`start_timing`: the sum over them of the time from
        the event before each to the event after it."""
        events = self._events
        if events is None:
            raise RuntimeError("stop_timing without start_timing")
        self._events = None
        self.sync()
        with self._device:
            try:
                ms = sum(cupy.cuda.get_elapsed_time(b, a) for b, a in events)
            except CudaError as e:
                raise cuda_error("cudaEventElapsedTime", e) from e
        return float(ms) * 1e-3

    def record_event(self, timed: bool = False) -> DeviceEvent:
        """A CUDA event recorded on the stream after the work given so far (with
        timing only when asked: an untimed event is cheaper to record)."""
        with self._device:
            event = cupy.cuda.Event(disable_timing=not timed)
            event.record(self.stream)
        return CudaEvent(self, event, timed)

    def read_after(self, binding: Binding, event: DeviceEvent | None) -> np.ndarray:
        """A host copy of the binding; the copy is ordered on the stream, so it waits
        for the work before it there (one stream: the event adds nothing)."""
        return self.read(binding)

    def elapsed_ms(self, work: Callable[[], None]) -> float:
        """Device time of the work ``work`` puts on the stream, between two events."""
        with self._device:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(self.stream)
            work()
            end.record(self.stream)
            try:
                end.synchronize()
            except CudaError as e:
                raise cuda_error("cudaEventSynchronize", e) from e
            return float(cupy.cuda.get_elapsed_time(start, end))


class CudaEvent:
    """A :class:`~cubecl_server.backend.features.DeviceEvent` on a CUDA stream."""

    def __init__(self, server: CudaServer, event: Any, timed: bool) -> None:
        self._server = server
        self.event = event
        self.timed = timed

    def wait(self) -> None:
        """``cudaEventSynchronize``: a kernel's asynchronous fault surfaces here."""
        with self._server._device:
            try:
                self.event.synchronize()
            except CudaError as e:
                raise cuda_error("cudaEventSynchronize", e) from e

    def done(self) -> bool:
        """``cudaEventQuery``."""
        return bool(self.event.done)

    def seconds_since(self, start: DeviceEvent) -> float | None:
        """``cudaEventElapsedTime`` from ``start``, both timed; else None."""
        if not (self.timed and isinstance(start, CudaEvent) and start.timed):
            return None
        with self._server._device:
            return float(cupy.cuda.get_elapsed_time(start.event, self.event)) * 1e-3
