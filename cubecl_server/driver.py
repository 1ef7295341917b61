"""Turning a driver's status code into an error the runtime understands.

Each backend has one function that takes its API's status codes (OpenCL ``CL_*``,
Vulkan ``VK_*``, CUDA ``cudaError*``) to a :class:`DriverError` through
:func:`driver_error`, so every message names the code the driver gave.
"""

from __future__ import annotations

from collections.abc import Mapping

from cubecl_server.errors import CubeclError

__all__ = ["DriverError", "driver_error", "code_names"]


class DriverError(CubeclError):
    """A device driver reported a failure: the backend, the call, the code and its name."""

    def __init__(self, backend: str, call: str, code: int, name: str, detail: str = "") -> None:
        text = f"[{backend}] {call} failed: {name} ({code})"
        if detail:
            text += f": {detail}"
        super().__init__(text)
        self.backend = backend
        self.call = call
        self.code = code
        self.name = name
        self.detail = detail


def code_names(namespace: object, prefix: str) -> dict[int, str]:
    """The status codes an API module defines as integer constants named ``prefix*``,
    by value (the first name wins where two share a value)."""
    names: dict[int, str] = {}
    for attr in sorted(dir(namespace)):
        value = getattr(namespace, attr)
        if attr.startswith(prefix) and isinstance(value, int) and not isinstance(value, bool):
            names.setdefault(value, attr)
    return names


def driver_error(backend: str, call: str, code: int, names: Mapping[int, str],
                 detail: str = "") -> DriverError:
    """The error for status ``code`` of ``call``, named from ``names``."""
    return DriverError(backend, call, code, names.get(code, "unknown status"), detail)
