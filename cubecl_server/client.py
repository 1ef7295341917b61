"""The compute client: what a user holds to put data on a device and run kernels.

The module itself is callable: ``cubecl_server.client(backend, device)`` is the
client of one device of one backend, made on first use and shared;
:func:`create_client` makes one of its own.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubecl_server import ir
from cubecl_server.arrays import UserArrays
from cubecl_server.command import Command, Copy, Fill, Write, execute, nbytes
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.compiler.record import CompilationBatchRecord, CompilationRecord, Recorder
from cubecl_server.config import config
from cubecl_server.device import MAX_UNITS, Capabilities, DeviceInfo
from cubecl_server.device_events import CompletedEvent, EventServer
from cubecl_server.errors import (
    ClientClosedError,
    LaunchError,
    TaintedBufferError,
    UnreadFailuresError,
)
from cubecl_server.execution import ExecutionMode, ExecutionPolicy, ExecutionStats
from cubecl_server.kernel import CubeCount, CubeDim, Launchable
from cubecl_server.logging import configure_logging
from cubecl_server.memory_management import (
    ErrorGraph,
    Handle,
    MemoryManagement,
    MemoryUsage,
    Taint,
    View,
    make_view,
)
from cubecl_server.plugins.registry import registry
from cubecl_server.runtime import EnvironmentRecorder, open_loader, open_server
from cubecl_server.server import Binding, ComputeServer
from cubecl_server.stream import ExecuteScope, Failures
from cubecl_server.timestamp_profiler import ProfileDuration, profile
from cubecl_server.tma import BoundTensorMap, TensorMapArg
from cubecl_server.validation import check_launch, cube_count_error

__all__ = ["ComputeClient", "create_client", "elem_of_dtype", "recording"]

_ELEMS = {np.dtype(e.numpy_name): e for e in ir.Elem if not e.is_minifloat}
_SCALAR_TYPES = {e: np.dtype(e.numpy_name).type for e in _ELEMS.values()}
_MINIFLOATS = {e.numpy_name: e for e in ir.Elem if e.is_minifloat}
"""The minifloats by the name of their ``ml_dtypes`` dtype, which NumPy knows only once
``ml_dtypes`` is imported (:func:`~cubecl_server.memory_management.handle.numpy_dtype`)."""


def elem_of_dtype(dtype: Any) -> ir.Elem:
    """The IR element type with the layout of a NumPy dtype; TypeError if none has."""
    mini = _MINIFLOATS.get(dtype if isinstance(dtype, str) else getattr(dtype, "__name__", ""))
    if mini is not None:
        return mini
    try:
        found = np.dtype(dtype)
        return _ELEMS.get(found) or _MINIFLOATS[found.name]
    except (KeyError, TypeError):
        names = ", ".join([*sorted(str(d) for d in _ELEMS), *_MINIFLOATS])
        raise TypeError(f"dtype {dtype!r} is not supported by kernels; use one of {names}") \
            from None


@dataclass(frozen=True)
class _Plan:
    """What every launch of one artifact needs to know, worked out on its first launch
    (per kernel, comptime values and cube dim), so that a launch only checks its
    arguments, follows taint and calls the server."""

    id: ArtifactId
    kernel: ir.Kernel
    params: tuple[ir.Param, ...]
    arrays: tuple[tuple[int, ir.Elem], ...]
    """Each array parameter, in order: its position among all parameters and its
    element type."""
    scalars: tuple[tuple[int, ir.Param, type], ...]
    """Each scalar parameter, in order: its position, itself, and the NumPy scalar type
    its argument is passed as."""
    reads: tuple[int, ...]
    """Among the array parameters, those the kernel reads (a tainted one stops the
    launch)."""
    writes: tuple[int, ...]
    """Among the array parameters, those the kernel writes (tainted if the launch
    fails)."""
    units: int
    """Units in one cube of the plan's cube dim."""
    maps: tuple[tuple[int, int, int], ...] = ()
    """Per tensor-map parameter: its position among all parameters, the rank and the
    box elements its loads need (0 where it is never loaded). Its buffer follows the
    array parameters' among a launch's handles (and is read)."""


_COMPLETED = CompletedEvent()
_DEFERRED = ExecutionPolicy.DEFERRED  # a module global: reading an Enum member costs a call


class _Counters:
    """The mutable counts behind :class:`ExecutionStats`, and the recorder that counts
    the loader's compilations by outcome before handing each record on."""

    __slots__ = ("bytes_copied", "bytes_read", "bytes_written", "compilations", "failed",
                 "launches", "skipped", "submissions", "syncs")

    def __init__(self) -> None:
        self.launches = self.skipped = self.failed = 0
        self.bytes_written = self.bytes_read = self.bytes_copied = 0
        self.syncs = self.submissions = 0
        self.compilations: dict[str, int] = {}

    def compiled(self, outcome: str) -> None:
        self.compilations[outcome] = self.compilations.get(outcome, 0) + 1

    def snapshot(self) -> ExecutionStats:
        return ExecutionStats(self.launches, self.skipped, self.failed, dict(self.compilations),
                              self.bytes_written, self.bytes_read, self.bytes_copied,
                              self.syncs, self.submissions)


class _CountingRecorder:
    """The loader's recorder on a client: counts each record's outcome, then passes it
    to the recorder the configuration asked for (if any)."""

    def __init__(self, counters: _Counters, inner: Recorder | None) -> None:
        self.counters = counters
        self.inner = inner

    def record(self, record: CompilationRecord) -> None:
        self.counters.compiled(record.outcome.value)
        if self.inner is not None:
            self.inner.record(record)

    def record_batch(self, batch: CompilationBatchRecord) -> None:
        if self.inner is not None:
            self.inner.record_batch(batch)


@dataclass(slots=True)
class _Held:
    """A launch a deferred client holds until the program needs a result."""

    plan: _Plan
    number: int
    count: CubeCount
    dim: CubeDim
    handles: list[Handle]
    arrays: tuple[Binding, ...]
    scalars: tuple[np.generic, ...]


class ComputeClient:
    """One device of one backend, as a user sees it: buffers in, kernels run, data out.

    Launches are asynchronous: a launch that fails does not raise, it taints the
    buffers it would have written, and reading one of them raises
    ``TaintedBufferError`` with the chain back to the failure (ERROR_HANDLING.md).
    Every request that reaches the device is a command (:mod:`cubecl_server.command`);
    with ``ExecutionPolicy.DEFERRED`` the launches, fills and copies are held and
    handed to the server together when a result is needed. ``stats()`` says what
    the work triggered. Use a client from one thread at a time; it is cheap to share
    across a program.
    """

    def __init__(self, server: ComputeServer, memory: MemoryManagement, loader: KernelLoader,
                 mode: ExecutionMode,
                 policy: ExecutionPolicy = ExecutionPolicy.IMMEDIATE) -> None:
        self.server = server
        self.memory = memory
        self.loader = loader
        self.mode = mode
        self.policy = policy
        self.errors = ErrorGraph()
        self.failures = Failures()
        self._launches = 0
        # (kernel, cube dim's sides, comptime items) -> plan: what lets a repeated
        # launch skip hashing anything but this tuple.
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        self._max_count = server.capabilities.max_cube_count
        self._held: list[_Held | tuple[Command, Handle, Handle | None, int]] = []
        self._counters = _Counters()
        loader.recorder = _CountingRecorder(self._counters, loader.recorder)
        self._events = isinstance(server, EventServer)
        self._traffic: int | None = None
        """Bytes the commands run so far have bound, while a profile counts them."""
        self._user_arrays = UserArrays(memory, server, self.create)
        self._closed = False
        memory.host_access = self._host_access

    def close(self) -> None:
        """Finish the work launched (as :meth:`sync`, its errors raised), then free
        the client's memory: every later call raises ``ClientClosedError``, and the
        process's shared client (``cubecl_server.client()``) is made anew by the next
        call. Closing again does nothing."""
        if self._closed:
            return
        try:
            self.sync()
        finally:
            self._closed = True
            self._held.clear()
            self._plans.clear()
            self.memory.close()
            _forget(self)

    def __enter__(self) -> ComputeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _host_access(self, handle: Handle) -> None:
        """Before ``handle.host()``: the work writing it done, its taint raised."""
        self._check_open()
        self.flush()
        self._user_arrays.deliver(self.read, _tainted)
        self.server.sync()
        if handle.taint is not None:
            raise _tainted(repr(handle), handle.taint)

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError(f"this {self.backend} client was closed; make another "
                                    "(cubecl_server.client() or create_client())")

    @property
    def backend(self) -> str:
        """The backend's name."""
        return self.server.backend

    @property
    def device(self) -> DeviceInfo:
        """The device this client runs on."""
        return self.server.device

    @property
    def capabilities(self) -> Capabilities:
        """What the device supports."""
        return self.server.capabilities

    def stats(self) -> ExecutionStats:
        """What the work run on this client triggered so far (see ExecutionStats)."""
        return self._counters.snapshot()

    def reset_stats(self) -> None:
        """Start counting :meth:`stats` from zero."""
        self._counters.__init__()  # type: ignore[misc]

    # ------------------------------------------------------------- memory

    def empty(self, shape: int | Sequence[int], dtype: Any) -> Handle:
        """A new buffer of ``shape`` and ``dtype`` with unspecified contents: what its
        memory held, often the data of a buffer freed before (the pool reuses memory)."""
        self._check_open()
        shape_t = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape_t):
            raise ValueError(f"shape {shape_t} has a negative extent")
        elem = elem_of_dtype(dtype)
        nbytes = int(np.prod(shape_t, dtype=np.int64)) * (elem.bits // 8)
        return Handle(self.memory, self.memory.reserve(nbytes), shape_t, elem)

    def create(self, data: Any) -> Handle:
        """A new buffer holding a copy of ``data`` (an array-like)."""
        arr = np.asarray(data)
        handle = self.empty(arr.shape, arr.dtype)
        self.write(handle, arr)
        return handle

    def view(self, handle: Handle, shape: int | Sequence[int],
             strides: Sequence[int] | None = None, offset: int = 0) -> View:
        """A view of ``handle`` for kernels: ``shape`` elements, axis ``k``
        ``strides[k]`` elements apart (C order where None), from element ``offset``.

        A kernel indexes it from its first element through ``a.shape``/``a.stride``,
        and touches nothing of the buffer outside what it indexes; checked mode bounds
        it by ``buffer_len`` (its first element to its last). ``ValueError`` when it
        reaches past the buffer, overlaps itself, or starts off the device's
        ``Capabilities.view_alignment``. Read, write, fill or copy the buffer itself.
        """
        self._own(handle, "view")
        shape_t = (shape,) if isinstance(shape, int) else tuple(shape)
        return make_view(handle, shape_t, None if strides is None else tuple(strides), offset,
                         self.capabilities.view_alignment)

    def write(self, handle: Handle, data: Any) -> None:
        """Overwrite the whole buffer with ``data``, which must have its shape and dtype;
        this clears any taint the buffer carried."""
        self._own(handle, "write")
        arr = np.asarray(data)
        if arr.dtype != handle.dtype or arr.shape != handle.shape:
            raise ValueError(f"cannot write {arr.dtype}{list(arr.shape)} into a buffer of "
                             f"{handle.dtype}{list(handle.shape)}")
        self.flush()
        flat = np.ascontiguousarray(arr).reshape(-1)
        if handle.elem.is_minifloat:
            flat = flat.view(np.uint8)  # its binding is of u8 (Binding)
        command = Write(handle.binding(), flat)
        execute(self.server, command)
        self._counters.bytes_written += command.binding.size
        handle.taint = None
        handle.event = _COMPLETED

    def fill(self, handle: Handle, value: Any) -> None:
        """Set every element of the buffer to ``value`` on the device; like a write,
        this clears any taint the buffer carried (a fill that fails taints it)."""
        self._own(handle, "fill")
        if handle.elem.is_minifloat:
            # Rounded as NumPy rounds it into the dtype, filled as the bits (a u8).
            scalar = np.asarray(value, handle.dtype).reshape(1).view(np.uint8)[0]
        else:
            scalar = _scalar("fill", ir.Param("value", handle.elem, False), value)
        self._device_command(Fill(handle.binding(), scalar), handle, None)

    def copy(self, src: Handle, dst: Handle) -> None:
        """Copy ``src`` into ``dst`` (the same dtype and size) on the device; ``dst``
        takes on ``src``'s taint, if it has one."""
        self._own(src, "copy")
        self._own(dst, "copy")
        if src.dtype != dst.dtype or src.nbytes != dst.nbytes:
            raise ValueError(f"cannot copy {src!r} into {dst!r}: dtype and size must match")
        self._device_command(Copy(src.binding(), dst.binding()), dst, src)

    def _device_command(self, command: Command, out: Handle, src: Handle | None) -> None:
        self._launches += 1
        held = (command, out, src, self._launches)
        if self.policy is ExecutionPolicy.DEFERRED:
            self._held.append(held)
        else:
            self._run_command(*held)

    def _run_command(self, command: Command, out: Handle, src: Handle | None,
                     number: int) -> None:
        kind = "fill" if type(command) is Fill else "copy"
        if src is not None and src.taint is not None:
            self._counters.skipped += 1
            out.taint = self.errors.propagate(kind, number, self.backend, [src.taint], kind)
            return
        with ExecuteScope(self.errors, self.failures, kind, number, self.backend, [out],
                          kind) as scope:
            execute(self.server, command)
            moved = nbytes(command)
            self._counters.bytes_copied += moved // (2 if src is not None else 1)
            if self._traffic is not None:
                self._traffic += moved
            out.taint = None
        out.event = None
        if scope.failed is not None:
            self._counters.failed += 1

    def read(self, handle: Handle, out: np.ndarray | None = None) -> np.ndarray:
        """A host copy of the buffer, with its shape and dtype - or, given ``out`` (an
        array of that shape and dtype), the buffer copied into it and ``out``
        returned; first, the caller's arrays that launches wrote hold their results
        (:mod:`cubecl_server.arrays`).

        Raises ``TaintedBufferError`` when the work meant to write it (or one of those
        arrays) failed.
        """
        if out is not None and (out.shape != handle.shape or out.dtype != handle.dtype):
            raise ValueError(f"cannot read {handle!r} into an array of {out.dtype}"
                             f"{list(out.shape)}")
        self._own(handle, "read")
        self.flush()
        self._user_arrays.deliver(self.read, _tainted)
        taint = handle.taint
        if taint is not None:
            raise _tainted(repr(handle), taint)
        binding = handle.binding()
        if self._events:
            data = self.server.read_after(binding, handle.event)  # type: ignore[attr-defined]
        else:
            data = self.server.read(binding)
        self._counters.bytes_read += binding.size
        if data.dtype != handle.dtype:
            data = data.view(handle.dtype)  # a minifloat's bytes (Binding)
        if out is not None:
            np.copyto(out, data.reshape(handle.shape))
            return out
        return data.reshape(handle.shape)

    def _own(self, handle: Handle, what: str) -> None:
        self._check_open()
        if type(handle) is not Handle:
            raise TypeError(f"{what} takes a buffer from client.create/empty, "
                            f"got {type(handle).__name__}")
        if handle.memory is not self.memory:
            raise TypeError(f"cannot {what} {handle!r}: it belongs to another client; "
                            "copy it through the host (client.read, then create)")

    def flush(self) -> None:
        """Hand every held command to the server, in order (a deferred client does
        this itself before a read, a write, a sync or a profile); nothing to do for
        an immediate client."""
        if not self._held:
            return
        held, self._held = self._held, []
        self._counters.submissions += 1
        for h in held:
            if type(h) is _Held:
                self._run_launch(h.plan, h.number, h.count, h.dim, h.handles, h.arrays,
                                 h.scalars)
            else:
                self._run_command(*h)  # type: ignore[misc]

    def sync(self) -> None:
        """Wait until all work launched on this client has finished, and put the
        results of the caller's arrays that launches wrote into them
        (:mod:`cubecl_server.arrays`; ``TaintedBufferError`` where one failed).

        Raises ``UnreadFailuresError`` for failed launches whose outputs nobody read
        and nobody can read any more, so that no failure goes unreported.
        """
        if self._closed:
            self._check_open()
        if self._held:
            self.flush()
        self.server.sync()
        self._counters.syncs += 1
        self._user_arrays.deliver(self.read, _tainted)
        lost, count = self.failures.take_lost()
        if count:
            shown = "\n".join(f"  {f.description}" for f in lost)
            more = f"\n  ... and {count - len(lost)} more" if count > len(lost) else ""
            raise UnreadFailuresError(f"{count} failed launch(es) whose outputs were never "
                                      f"read:\n{shown}{more}")

    def profile(self, work: Callable[[], object], *, flops: int = 0) -> ProfileDuration:
        """Run ``work`` (launches on this client) and say how long the device took:
        by its own clock where the backend has one (a timed event before the work and
        one after it), else by the host's clock around a sync
        (``ProfileDuration.method`` says which). The result also counts the commands
        the work ran and their minimum memory traffic, and with ``flops`` (the
        floating-point operations the work does, which only the caller knows) gives
        its ``throughput`` in GB/s and GFLOP/s."""
        self.flush()
        before = self._counters.launches
        self._traffic = 0

        def run() -> None:
            work()
            self.flush()

        try:
            took = profile(self.server, run)
            traffic = self._traffic
        finally:
            self._traffic = None
        return ProfileDuration(took.seconds, took.method, self._counters.launches - before,
                               traffic, flops)

    def memory_usage(self) -> MemoryUsage:
        """How much device memory this client's buffers use and reserve."""
        return self.memory.usage()

    # ------------------------------------------------------------- kernels

    def _plan(self, kernel: Launchable, cube_dim: CubeDim,
              comptime: dict[str, Any]) -> _Plan:
        # The cube dim's sides, not the CubeDim: a tuple of ints hashes without a call
        # (launch builds the same key for its cache hit).
        key = (kernel, cube_dim.x, cube_dim.y, cube_dim.z)
        if comptime:
            key += tuple(comptime.items())
        plan = self._plans.get(key)
        if plan is None:
            aid = ArtifactId(kernel.kernel_id(comptime), cube_dim, self.mode)
            k = aid.kernel.ir
            first_use = getattr(kernel, "first_use", None)
            check_launch(k, cube_dim, self.capabilities, None if first_use is None else
                         lambda test: first_use(comptime, test))
            read, written = k.array_access
            arrays = [p for p in k.params if p.array]
            maps = _map_loads(k)
            plan = self._plans[key] = _Plan(
                aid, k, k.params,
                tuple((i, p.elem) for i, p in enumerate(k.params) if p.array),
                tuple((i, p, _SCALAR_TYPES[p.elem]) for i, p in enumerate(k.params)
                      if not p.array),
                tuple(i for i, p in enumerate(arrays) if p.name in read)
                + tuple(range(len(arrays), len(arrays) + len(maps))),
                tuple(i for i, p in enumerate(arrays) if p.name in written),
                cube_dim.total, maps)
        return plan

    def artifact_id(self, kernel: Launchable, cube_dim: CubeDim | int | tuple[int, ...],
                    comptime: dict[str, Any]) -> ArtifactId:
        """The artifact a launch of ``kernel`` with ``cube_dim`` and ``comptime`` needs."""
        return self._plan(kernel, CubeDim.of(cube_dim), comptime).id

    def prepare(self, kernel: Launchable, cube_dim: CubeDim | int | tuple[int, ...],
                **comptime: Any) -> None:
        """Obtain (compile, or read from the store) and load ``kernel`` ahead of a launch.

        Unlike a launch, this raises ``CompilationError`` itself when compiling fails.
        """
        self._check_open()
        self.loader.get(self.artifact_id(kernel, cube_dim, comptime))

    def launch(self, kernel: Launchable, cube_count: CubeCount | int | tuple[int, ...],
               cube_dim: CubeDim | int | tuple[int, ...], args: Sequence[Any],
               comptime: dict[str, Any]) -> None:
        """Run ``kernel`` over ``cube_count`` cubes of ``cube_dim`` units (each a
        CubeCount/CubeDim, an int or a tuple of up to three ints).

        Wrong arguments (a buffer of another client among them) raise ``TypeError``
        at once, and a cube count, a cube or shared memory the device cannot hold
        raises ``LaunchError``. Anything that fails after that
        (compiling, the device) taints the buffers the kernel writes; a launch that
        reads a tainted buffer does not run and passes the taint on to its outputs.
        A deferred client checks all of this at once and holds the launch itself.
        """
        if self._closed:
            self._check_open()
        if type(cube_count) is not CubeCount:
            cube_count = CubeCount.of(cube_count)
        if type(cube_dim) is not CubeDim:
            cube_dim = CubeDim.of(cube_dim)
        # _plan's cache hit, inline: a launch repeated with one signature pays for a
        # tuple and a dict lookup, not a call.
        key = (kernel, cube_dim.x, cube_dim.y, cube_dim.z)
        if comptime:
            key += tuple(comptime.items())
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(kernel, cube_dim, comptime)
        limit = self._max_count
        x, y, z = cube_count.x, cube_count.y, cube_count.z
        if x > limit[0] or y > limit[1] or z > limit[2] or x * y * z * plan.units > MAX_UNITS:
            raise LaunchError(cube_count_error(plan.kernel, cube_count, cube_dim,
                                               self.capabilities))
        handles, arrays, scalars = _bind(plan, args, self.memory, self._user_arrays)
        self._launches += 1
        if self.policy is _DEFERRED:
            self._held.append(_Held(plan, self._launches, cube_count, cube_dim, handles,
                                    arrays, scalars))
        else:
            self._run_launch(plan, self._launches, cube_count, cube_dim, handles, arrays,
                             scalars)

    def _run_launch(self, plan: _Plan, number: int, count: CubeCount, dim: CubeDim,
                    handles: list[Handle], arrays: tuple[Binding, ...],
                    scalars: tuple[np.generic, ...]) -> None:
        """Carry out one launch: skipped when an input is tainted, else obtained and
        run; if anything fails, its outputs are tainted (as an ExecuteScope does)."""
        counters = self._counters
        causes = None
        for i in plan.reads:
            taint = handles[i].taint
            if taint is not None:
                causes = [t for t in (handles[j].taint for j in plan.reads) if t is not None]
                break
        if causes:
            counters.skipped += 1
            taint = self.errors.propagate(plan.kernel.name, number, self.backend, causes)
            for i in plan.writes:
                handles[i].taint = taint
            return
        try:
            try:
                loaded = self.loader.get(plan.id)
            except Exception:
                counters.compiled("failed")
                raise
            # The Launch command, carried out as execute() would, without the object.
            event = self.server.launch(loaded, count, dim, arrays, scalars)
        except Exception as exc:
            outputs = [handles[i] for i in plan.writes]
            ExecuteScope(self.errors, self.failures, plan.kernel.name, number, self.backend,
                         outputs).__exit__(type(exc), exc, exc.__traceback__)
            counters.failed += 1
            return
        counters.launches += 1
        if self._traffic is not None:
            self._traffic += sum(b.size for b in arrays)
        for i in plan.writes:
            # Its inputs were clean and it ran: what it wrote is valid again.
            h = handles[i]
            h.taint = None
            h.event = event


def _bind(plan: _Plan, args: Sequence[Any], memory: MemoryManagement, users: UserArrays
          ) -> tuple[list[Handle], tuple[Binding, ...], tuple[np.generic, ...]]:
    """The launch's buffers (the caller's arrays among them), their bindings and its
    scalars, each checked against its parameter (``TypeError`` naming it)."""
    params = plan.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"kernel {plan.kernel.name!r} takes {len(params)} argument(s) "
                        f"({names}), got {len(args)}")
    handles, bindings = [], []
    for i, elem in plan.arrays:
        h = args[i]
        if type(h) is Handle and h.elem is elem and h.memory is memory:
            # A live buffer's binding, made once (binding() itself raises once freed,
            # and free() drops it).
            b = h._binding
            bindings.append(h.binding() if b is None else b)
        else:
            h = _other_array(plan, i, h, elem, memory, users)
            bindings.append(h.binding())
        handles.append(h)
    scalars = []
    for i, p, t in plan.scalars:
        # The common case, a NumPy scalar of the right type, costs one comparison.
        a = args[i]
        if type(a) is t:
            scalars.append(a)
        else:
            maps = {m[0]: m for m in plan.maps}
            if i in maps:
                scalars.append(_tensor_map(plan.kernel.name, p, a, memory, *maps[i][1:]))
                handles.append(a.buffer)
            else:
                scalars.append(_scalar(plan.kernel.name, p, a))
    return handles, tuple(bindings), tuple(scalars)


def _other_array(plan: _Plan, i: int, a: Any, elem: ir.Elem, memory: MemoryManagement,
                 users: UserArrays) -> Handle:
    """The handle for argument ``a`` of array parameter ``i`` that is not a buffer of
    this client: a view of one, or the caller's own array."""
    p = plan.params[i]
    if not isinstance(a, Handle):
        written = plan.arrays.index((i, elem)) in plan.writes
        handle = users.bind(plan.kernel.name, p, a, written)
        if handle is not None:
            return handle
    _view_argument(plan.kernel.name, p, a, elem, memory)
    return a


def _view_argument(kernel: str, p: ir.Param, a: Any, elem: ir.Elem,
                   memory: MemoryManagement) -> None:
    """Accept a view of this client's buffers for a parameter of its type that is not
    a line array; raise as :func:`_bad_array` for anything else."""
    if type(a) is not View or a.elem is not elem or a.memory is not memory:
        _bad_array(kernel, p, a)
    if p.line > 1:
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is an array of lines "
                        f"of {p.line}, which a view cannot be passed as")


def _bad_array(kernel: str, p: ir.Param, a: Any) -> None:
    if not isinstance(a, Handle):
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is an "
                        f"Array[{p.elem.value}], got {type(a).__name__}; pass a NumPy "
                        "array (or one that speaks DLPack) or a buffer from "
                        "client.create/empty")
    if a.elem is not p.elem:
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is an "
                        f"Array[{p.elem.value}], got a buffer of {a.elem.value}")
    raise TypeError(f"kernel {kernel!r}: parameter {p.name!r}: {a!r} belongs to another "
                    "client; a kernel runs on its own client's buffers (copy it through "
                    "the host: client.read, then create)")


def _map_loads(k: ir.Kernel) -> tuple[tuple[int, int, int], ...]:
    """:attr:`_Plan.maps` of ``k``: each tensor-map parameter's position, and the rank
    and box elements of its loads."""
    if not any(p.tensor_map for p in k.params):
        return ()
    loads = {n.map: n for n in ir.walk(k.body) if isinstance(n, ir.TensorMapLoad)}
    shared = {sh.name: sh.size for sh in k.shared}
    out = []
    for i, p in enumerate(k.params):
        if p.tensor_map:
            load = loads.get(p.name)
            out.append((i, len(load.coords), shared[load.shared]) if load else (i, 0, 0))
    return tuple(out)


def _tensor_map(kernel: str, p: ir.Param, a: Any, memory: MemoryManagement, rank: int,
                box: int) -> BoundTensorMap:
    """The bound tensor map of argument ``a`` to tensor-map parameter ``p``, checked
    against the parameter, the kernel's loads of it and its buffer."""
    what = f"kernel {kernel!r}: parameter {p.name!r} is a TensorMap[{p.elem.value}]"
    if not isinstance(a, TensorMapArg):
        raise TypeError(f"{what}, got {type(a).__name__}; pass a "
                        "cubecl_server.tma.TensorMapArg(map, buffer)")
    h, tmap = a.buffer, a.map
    if type(h) is not Handle or h.memory is not memory:
        raise TypeError(f"{what}: its buffer must be a handle of this client (from "
                        f"client.create/empty), got {h!r}")
    if tmap.elem is not p.elem or h.elem is not p.elem:
        raise TypeError(f"{what}, got a map of {tmap.elem.value} over a buffer of "
                        f"{h.elem.value}")
    binding = h.binding()
    tmap = dataclasses.replace(tmap, address=binding.offset).validate()
    if rank and tmap.rank != rank:
        raise LaunchError(f"{what}: the kernel loads it with {rank} coordinates, the map "
                          f"has rank {tmap.rank}")
    if box and math.prod(tmap.box) != box:
        raise LaunchError(f"{what}: its box {tmap.box} holds {math.prod(tmap.box)} "
                          f"elements, the shared array the kernel loads it into holds {box}")
    if tmap.span_bytes > binding.size:
        raise LaunchError(f"{what}: the map spans {tmap.span_bytes} bytes, past its buffer "
                          f"of {binding.size}")
    return BoundTensorMap(tmap, binding)


def _tainted(what: str, taint: Taint) -> TaintedBufferError:
    """The error a read of something ``taint`` left unwritten raises: the chain back
    to the failure."""
    taint.mark_observed()
    chain = taint.chain()
    lines = [f"{what} holds no valid data:"]
    lines += [f"  {'caused by' if i else 'written by'} {t.describe()}"
              for i, t in enumerate(chain)]
    root = chain[-1].error
    err = TaintedBufferError("\n".join(lines), root)
    err.__cause__, err.__suppress_context__ = root, True
    return err


def _scalar(kernel: str, p: ir.Param, value: Any) -> np.generic:
    if isinstance(value, Handle):
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is a scalar "
                        f"{p.elem.value}, got a buffer")
    ok = (isinstance(value, (bool, np.bool_)) if p.elem is ir.Elem.BOOL
          else isinstance(value, (int, np.integer)) and not isinstance(value, bool)
          if p.elem.is_int
          else isinstance(value, (int, float, np.integer, np.floating)))
    if not ok:
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is {p.elem.value}, "
                        f"got {type(value).__name__} {value!r}")
    if p.elem.is_int:
        info = np.iinfo(p.elem.numpy_name)
        if not info.min <= int(value) <= info.max:
            raise TypeError(f"kernel {kernel!r}: parameter {p.name!r}: {value} does not fit "
                            f"in {p.elem.value}")
    return _SCALAR_TYPES[p.elem](value)


# ------------------------------------------------------------- making clients


def create_client(backend: str | None = None, device: int | None = None, *,
                  compile_only: bool = False) -> ComputeClient:
    """A new client, with its own server and loader, not shared with the one calling
    this module gives (``cubecl_server.client()``).

    ``backend`` defaults to ``CUBECL_BACKEND`` (or ``backend`` in ``cubecl.toml``),
    then ``"cpu"``; ``device`` to the backend's first device. ``compile_only`` asks
    the backend for its server that compiles without a device (its descriptor's
    ``compile_only_server``): kernels go through the whole compile path and the
    store, but it cannot hold memory or launch.
    """
    configure_logging()
    descriptor = registry().descriptor(backend or config().backend)
    server = open_server(descriptor, 0 if device is None else device, compile_only)
    return ComputeClient(server, MemoryManagement(server.storage),
                         open_loader(descriptor, server), config().execution_mode,
                         config().execution_policy)


_clients: dict[tuple[str, int], ComputeClient] = {}
_clients_lock = threading.Lock()


def _shared_client(backend: str | None, device: int | None) -> ComputeClient:
    name = backend or config().backend
    index = 0 if device is None else device
    with _clients_lock:
        existing = _clients.get((name, index))
        if existing is None:
            existing = _clients[(name, index)] = create_client(name, index)
        return existing


def _forget(c: ComputeClient) -> None:
    """Drop ``c`` from the shared clients (it was closed)."""
    with _clients_lock:
        for key in [k for k, v in _clients.items() if v is c]:
            del _clients[key]


class _ClientModule(types.ModuleType):
    """This module, callable: the name ``cubecl_server.client`` is both the module and
    how a program gets its client, whatever was imported before it."""

    def __call__(self, backend: str | None = None, device: int | None = None) -> ComputeClient:
        """The client for one device of one backend, created on first use and shared.

        ``backend`` defaults to ``CUBECL_BACKEND`` (or ``backend`` in
        ``cubecl.toml``), then ``"cpu"``; ``device`` to the backend's first device.
        """
        return _shared_client(backend, device)


sys.modules[__name__].__class__ = _ClientModule


class _Collecting(EnvironmentRecorder):
    def __init__(self, records: list[CompilationRecord]) -> None:
        super().__init__(keep=True)
        self.records = records

    def record(self, record: CompilationRecord) -> None:
        super().record(record)
        self.records.append(record)


@contextmanager
def recording(c: ComputeClient) -> Iterator[list[CompilationRecord]]:
    """Record every compilation ``c`` makes inside the block, whatever the config says:
    kept in the environment's database, broadcast, and collected in the list yielded."""
    records: list[CompilationRecord] = []
    before = c.loader.recorder
    c.loader.recorder = _CountingRecorder(c._counters, _Collecting(records))
    try:
        yield records
    finally:
        c.loader.recorder = before
