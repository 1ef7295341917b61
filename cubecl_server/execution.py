"""What the process does with the work it is asked to run, and what that work triggered:
the execution mode, the execution policy, and the statistics of a run."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["ExecutionMode", "ExecutionPolicy", "ExecutionStats"]


class ExecutionMode(enum.Enum):
    """Whether compiled kernels check their memory accesses.

    ``CHECKED`` (the default): a read outside an array gives 0 and a write outside
    it is dropped. ``UNCHECKED``: no check; an access outside is undefined behaviour
    on the device. The mode is part of what a launch adds to a kernel's id, so the
    two never share an artifact.
    """

    CHECKED = "checked"
    UNCHECKED = "unchecked"


class ExecutionPolicy(enum.Enum):
    """When a client hands the work it is given to its server.

    ``IMMEDIATE`` (the default): each command goes to the server as it is made (a
    device backend still runs it asynchronously). ``DEFERRED``: launches are held by
    the client and submitted together, in order, when the program needs a result -
    a ``read``, a ``write``, a ``sync``, a ``profile`` - so a sequence of launches
    reaches the device as one batch (one command buffer and one queue submit on
    vulkan, enqueues back to back on opencl, one after another on cpu). Results are
    the same either way; a failure still taints exactly the outputs of the launch
    that failed (ERROR_HANDLING.md).
    """

    IMMEDIATE = "immediate"
    DEFERRED = "deferred"


@dataclass(frozen=True)
class ExecutionStats:
    """What the work run on one client triggered, counted from its creation (or the
    last ``reset``): what ``client.stats()`` returns and ``demo --stats`` prints.

    ``launches`` counts every launch the device ran; ``skipped`` those that did not
    run because an input was tainted, ``failed`` those that failed (compiling or on
    the device). ``compilations`` counts, by outcome (``compiled``, ``loaded`` from
    the store, ``rekeyed``, ``failed``), the kernels the loader had to obtain: a
    kernel already loaded is not counted. ``bytes_written`` and ``bytes_read`` are
    the bytes copied from and to the host, ``bytes_copied`` those copied or filled on
    the device. ``syncs`` counts the waits for the device (``sync``, reads and
    writes do not count); ``submissions`` the batches a deferred client handed over.
    """

    launches: int = 0
    skipped: int = 0
    failed: int = 0
    compilations: dict[str, int] = field(default_factory=dict)
    bytes_written: int = 0
    bytes_read: int = 0
    bytes_copied: int = 0
    syncs: int = 0
    submissions: int = 0

    def lines(self) -> list[str]:
        """The statistics as ``name: value`` lines, for a person to read."""
        compiled = ", ".join(f"{k} {v}" for k, v in sorted(self.compilations.items()))
        return [f"launches: {self.launches} ({self.skipped} skipped, {self.failed} failed)",
                f"compilations: {compiled or 'none'}",
                f"bytes: {self.bytes_written} written, {self.bytes_read} read, "
                f"{self.bytes_copied} copied or filled on the device",
                f"syncs: {self.syncs}, deferred submissions: {self.submissions}"]
