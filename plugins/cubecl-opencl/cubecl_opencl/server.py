"""The ``opencl`` compute server: one device, one context, one in-order queue."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyopencl as cl

from cubecl_server.backend import Binding, Capabilities, CubeCount, CubeDim, DeviceInfo
from cubecl_server.backend.features import DeviceEvent

from . import BACKEND
from .artifact import LoadedKernel
from .device import DeviceFeatures, capabilities_of
from .errors import cl_error
from .storage import OpenclStorage

__all__ = ["OpenclServer"]


class OpenclServer:
    """One OpenCL device: buffers in its context, kernels on its in-order queue.

    Reads and writes are blocking copies straight between the caller's NumPy array
    and the buffer (no staging copy); launches are asynchronous until ``sync`` or a
    read.

    A :class:`~cubecl_server.server.DeviceTimer` through OpenCL event profiling.
    Ordinary work runs on a queue without ``PROFILING_ENABLE`` (on PoCL a profiling
    queue costs every launch about 0.05 us, some 1-2 %); between ``start_timing`` and
    ``stop_timing`` every command goes to a second, profiling, in-order queue, made
    at the first ``start_timing``. Each switch finishes the queue it leaves, so
    commands still run in the order they were issued.
    """

    backend = BACKEND

    def __init__(self, info: DeviceInfo, device: cl.Device, features: DeviceFeatures) -> None:
        self.device = info
        self.cl_device = device
        self.features = features
        self.capabilities: Capabilities = capabilities_of(features)
        try:
            self.context = cl.Context([device])
            self.queue = cl.CommandQueue(self.context, device)
        except cl.Error as e:
            raise cl_error("clCreateContext", e) from e
        self.storage = OpenclStorage(self.context, features)
        self._plain_queue = self.queue
        self._profiling_queue: cl.CommandQueue | None = None
        self._events: list[cl.Event] | None = None
        """The launches' events while timing, else None."""
        self._read_queue: cl.CommandQueue | None = None
        """Where reads that wait for one event go (made on the first)."""

    def read(self, binding: Binding) -> np.ndarray:
        """A host copy of the binding's elements (waits for the work before it)."""
        return self._read(self.queue, binding, None)

    def _read(self, queue: cl.CommandQueue, binding: Binding,
              wait_for: list[cl.Event] | None) -> np.ndarray:
        """A blocking copy of the binding on ``queue``, after the events ``wait_for``."""
        out = np.empty(binding.size // (binding.elem.bits // 8), binding.elem.numpy_name)
        if out.size:
            try:
                cl.enqueue_copy(queue, out, binding.resource, src_offset=binding.offset,
                                wait_for=wait_for, is_blocking=True)
            except cl.Error as e:
                raise cl_error("clEnqueueReadBuffer", e) from e
        return out

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding (blocking: ``data`` may change right after)."""
        if data.nbytes > binding.size:
            raise ValueError(f"{data.nbytes} bytes do not fit a binding of {binding.size}")
        if data.nbytes:
            try:
                cl.enqueue_copy(self.queue, binding.resource, data, dst_offset=binding.offset,
                                is_blocking=True)
            except cl.Error as e:
                raise cl_error("clEnqueueWriteBuffer", e) from e

    def launch(self, kernel: LoadedKernel, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> OpenclEvent | None:
        """Set the kernel's arguments (buffers, offsets, lengths, shapes, scalars) and
        enqueue ``count`` work groups of ``dim``; the launch's event."""
        x, y, z = count.x, count.y, count.z
        if not (x and y and z):
            return None  # an empty grid runs nothing; OpenCL 1.2 refuses a zero global size
        dx, dy, dz = dim.x, dim.y, dim.z
        try:
            event = kernel.enqueue(self.queue, (x * dx, y * dy, z * dz), (dx, dy, dz),
                                   arrays, scalars)
        except cl.Error as e:
            raise cl_error("clEnqueueNDRangeKernel", e) from e
        if self._events is not None:
            self._events.append(event)
        return OpenclEvent(event, False)

    def sync(self) -> None:
        """Wait until every launched command has finished (and leave the profiling
        queue a timed event switched to, unless a DeviceTimer window is open)."""
        try:
            self.queue.finish()
        except cl.Error as e:
            raise cl_error("clFinish", e) from e
        if self._events is None:
            self.queue = self._plain_queue

    def fill(self, binding: Binding, value: np.generic) -> None:
        """``clEnqueueFillBuffer`` with ``value`` as the pattern."""
        if not binding.size:
            return
        try:
            cl.enqueue_fill_buffer(self.queue, binding.resource, np.asarray(value)[()],
                                   binding.offset, binding.size)
        except cl.Error as e:
            raise cl_error("clEnqueueFillBuffer", e) from e

    def copy(self, src: Binding, dst: Binding) -> None:
        """``clEnqueueCopyBuffer`` from ``src`` to ``dst``."""
        if not src.size:
            return
        try:
            cl.enqueue_copy(self.queue, dst.resource, src.resource, byte_count=src.size,
                            src_offset=src.offset, dst_offset=dst.offset)
        except cl.Error as e:
            raise cl_error("clEnqueueCopyBuffer", e) from e

    def record_event(self, timed: bool = False) -> DeviceEvent:
        """A marker after the work enqueued so far; ``timed`` moves the work to the
        profiling queue first (finishing the plain one, so the order holds) until the
        next ``sync``."""
        if timed and self.queue is not self._profiling():
            self.queue.finish()
            self.queue = self._profiling()
        try:
            return OpenclEvent(cl.enqueue_marker(self.queue), timed)
        except cl.Error as e:
            raise cl_error("clEnqueueMarkerWithWaitList", e) from e

    def read_after(self, binding: Binding, event: DeviceEvent | None) -> np.ndarray:
        """A host copy of the binding once ``event`` is complete: on a queue of its own
        that waits for that event alone, not for later work on the main queue. With
        no event, as :meth:`read`."""
        if not isinstance(event, OpenclEvent):
            return self.read(binding)
        if self._read_queue is None:
            self._read_queue = cl.CommandQueue(self.context, self.cl_device)
        return self._read(self._read_queue, binding, [event.event])

    def _profiling(self) -> cl.CommandQueue:
        if self._profiling_queue is None:
            try:
                self._profiling_queue = cl.CommandQueue(
                    self.context, self.cl_device,
                    properties=cl.command_queue_properties.PROFILING_ENABLE)
            except cl.Error as e:
                raise cl_error("clCreateCommandQueue", e) from e
        return self._profiling_queue

    def start_timing(self) -> None:
        """Time every launch from now on: finish the work before, then send commands
        to the profiling queue and keep each launch's event."""
        if self._events is not None:
            raise RuntimeError("start_timing while already timing")
        self.sync()
        self.queue = self._profiling()
        self._events = []

    def stop_timing(self) -> float:
        """Wait for the launches since :meth:`start_timing`, go back to the ordinary
        queue and return the sum of their kernels' execution times in seconds
        (``CL_PROFILING_COMMAND_END - _START`` of each launch): time the device spent
        running them, not the wall span from the first to the last, so gaps between
        launches (the host's time to issue them) are not counted."""
        events = self._events
        if events is None:
            raise RuntimeError("stop_timing without start_timing")
        try:
            self.sync()
            return sum(e.profile.end - e.profile.start for e in events) * 1e-9
        except cl.Error as e:
            raise cl_error("clGetEventProfilingInfo", e) from e
        finally:
            self._events = None
            self.queue = self._plain_queue


class OpenclEvent:
    """A :class:`~cubecl_server.backend.features.DeviceEvent`: an OpenCL event, with the
    device's clock when it was enqueued on a profiling queue."""

    __slots__ = ("event", "timed")

    def __init__(self, event: cl.Event, timed: bool) -> None:
        self.event = event
        self.timed = timed

    def wait(self) -> None:
        """``clWaitForEvents``."""
        try:
            self.event.wait()
        except cl.Error as e:
            raise cl_error("clWaitForEvents", e) from e

    def done(self) -> bool:
        """Whether the command reached ``CL_COMPLETE``."""
        return bool(self.event.command_execution_status == cl.command_execution_status.COMPLETE)

    def seconds_since(self, start: DeviceEvent) -> float | None:
        """``CL_PROFILING_COMMAND_END`` of this event less that of ``start``, both
        timed; else None."""
        if not (self.timed and isinstance(start, OpenclEvent) and start.timed):
            return None
        try:
            return (self.event.profile.end - start.event.profile.end) * 1e-9
        except cl.Error as e:
            raise cl_error("clGetEventProfilingInfo", e) from e
