"""Device events, and the two things built on them.

A :class:`DeviceEvent` marks a point in a server's stream of work: it is recorded
after a command, completes when everything before it has run, can be waited on, and
- when it was recorded with timing - carries the device's clock at that point.
Backends implement it with what their API has: OpenCL markers (event profiling for
the time), Vulkan submits and fences (a timestamp query for the time), CUDA events;
the cpu backend, which runs everything at once, with :class:`CompletedEvent`.

Built on them:

- **timing a stretch of work on the device's clock**: :func:`device_span` (what
  ``client.profile`` uses) records a timed event before and after the work and
  returns the device time between the two;
- **waiting for exactly the work a read depends on**: a launch that returns an event
  leaves it on the buffers it writes, and a read waits for that event instead of the
  whole queue (:class:`EventServer` ``read_after``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from cubecl_server.server import Binding

__all__ = ["CompletedEvent", "DeviceEvent", "EventServer", "device_span"]


@runtime_checkable
class DeviceEvent(Protocol):
    """A point in a server's work: complete once everything recorded before it has run."""

    def wait(self) -> None:
        """Block until the event is complete (submitting the work before it if held)."""
        ...

    def done(self) -> bool:
        """Whether the event is complete, without waiting."""
        ...

    def seconds_since(self, start: DeviceEvent) -> float | None:
        """The device's time from ``start`` (an earlier event of the same server) to
        this one, both waited on; None unless both were recorded with timing."""
        ...


class CompletedEvent:
    """An event that is complete when made: a synchronous device's (the cpu backend's),
    or what a backend without events gives after a sync."""

    def wait(self) -> None:
        """Nothing to wait for."""

    def done(self) -> bool:
        """Always complete."""
        return True

    def seconds_since(self, start: DeviceEvent) -> float | None:
        """No device clock: None."""
        return None


@runtime_checkable
class EventServer(Protocol):
    """What a server implements to give events (optional: the client falls back to a
    ``sync`` and the host's clock without it)."""

    def record_event(self, timed: bool = False) -> DeviceEvent:
        """An event after every command recorded so far; with ``timed``, one that
        reads the device's clock when reached (where the device has one)."""
        ...

    def read_after(self, binding: Binding, event: DeviceEvent | None) -> np.ndarray:
        """A host copy of ``binding`` once ``event`` (the last write to it, or None
        when it has not been written since the last wait) is complete, without
        waiting for later work that does not write it."""
        ...


def device_span(server: EventServer, work: Callable[[], object]) -> float | None:
    """The device time of the work ``work`` records on ``server``, between a timed
    event before it and one after it; None when the device has no clock."""
    start = server.record_event(timed=True)
    work()
    end = server.record_event(timed=True)
    end.wait()
    start.wait()
    return end.seconds_since(start)
