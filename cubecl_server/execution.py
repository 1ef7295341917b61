"""What the process does with the work it is asked to run: the execution mode."""

from __future__ import annotations

import enum

__all__ = ["ExecutionMode"]


class ExecutionMode(enum.Enum):
    """Whether compiled kernels check their memory accesses.

    ``CHECKED`` (the default): a read outside an array gives 0 and a write outside
    it is dropped. ``UNCHECKED``: no check; an access outside is undefined behaviour
    on the device. The mode is part of what a launch adds to a kernel's id, so the
    two never share an artifact.
    """

    CHECKED = "checked"
    UNCHECKED = "unchecked"
