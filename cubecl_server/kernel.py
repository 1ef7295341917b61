"""Launch geometry, the compiled kernel a Compiler makes, and what a client launches.

A leaf of the core: it imports only the IR and ids, so that servers, compilers and
validation use launch geometry without reaching the kernel language
(``@kernel`` lives in :mod:`cubecl_server.lang`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cubecl_server import ir
from cubecl_server.id import KernelId

__all__ = ["CubeCount", "CubeDim", "CompiledKernel", "Launchable"]


def _axes(value: object, what: str) -> tuple[int, ...]:
    """``value`` as the axes of a launch geometry: an int, or a tuple of 1 to 3 ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, tuple) and 1 <= len(value) <= 3 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    raise TypeError(f"{what} must be a {what.title().replace('_', '')}, an int or a tuple "
                    f"of 1 to 3 ints, got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class CubeCount:
    """How many cubes (work groups, blocks) a launch runs, per axis."""

    x: int
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            v = getattr(self, axis)
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"CubeCount.{axis} must be a non-negative int, got {v!r}")

    @property
    def total(self) -> int:
        """The number of cubes in all."""
        return self.x * self.y * self.z

    @classmethod
    def of(cls, value: CubeCount | int | tuple[int, ...]) -> CubeCount:
        """``value`` as a CubeCount: one already, an int (``x``) or a tuple ``(x, y, z)``
        of 1 to 3 ints; TypeError naming ``cube_count`` for anything else."""
        return value if type(value) is cls else cls(*_axes(value, "cube_count"))

    @classmethod
    def cover(cls, n: int, cube_dim: CubeDim | int | tuple[int, ...]) -> CubeCount:
        """Enough cubes of ``cube_dim`` along x for ``n`` units, one per element: the
        ceiling division every launch over ``n`` elements needs (its last cube is
        partly outside: guard with ``if ABSOLUTE_POS < len(out)``)."""
        return cls(-(-n // CubeDim.of(cube_dim).total))


@dataclass(frozen=True)
class CubeDim:
    """How many units (threads, work items) one cube has, per axis."""

    x: int
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            v = getattr(self, axis)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"CubeDim.{axis} must be a positive int, got {v!r}")

    @property
    def total(self) -> int:
        """The number of units in one cube."""
        return self.x * self.y * self.z

    @classmethod
    def of(cls, value: CubeDim | int | tuple[int, ...]) -> CubeDim:
        """``value`` as a CubeDim: one already, an int (``x``) or a tuple ``(x, y, z)``
        of 1 to 3 ints; TypeError naming ``cube_dim`` for anything else."""
        return value if type(value) is cls else cls(*_axes(value, "cube_dim"))


@dataclass(frozen=True)
class CompiledKernel:
    """What a kernel becomes once a backend's ``Compiler`` has seen it.

    ``name`` is the IR kernel's name (what errors and records name it by);
    ``entry_point`` the symbol of the generated function the device calls;
    ``source`` the text the backend finalizes (OpenCL C, CUDA C++, NumPy Python) or a
    readable listing of what it does (SPIR-V); ``extension`` that text's file extension
    (``cl``, ``cu``, ``py``, ``spv.txt``), for whoever writes it to a file to read or
    build it by hand - the core does not read it; ``repr`` is the backend's own
    representation (a parameter layout, say), kept for finalize and never stored;
    ``core`` the kernel in the core IR the backend's emitter wrote
    (:func:`cubecl_server.lowering.lower`'s output, what ``cubecl-server source --core``
    prints), where it has one.
    """

    name: str
    entry_point: str
    source: str
    extension: str
    repr: Any = None
    core: ir.Kernel | None = None


class Launchable(Protocol):
    """What a client launches: a kernel that names its IR for a set of comptime
    values (a ``@kernel`` function, or IR given directly)."""

    def kernel_id(self, comptime: dict[str, Any]) -> KernelId:
        """The id of the kernel specialised with ``comptime``; ``TypeError`` naming
        the parameter for an unknown, missing or ill-typed comptime value."""
        ...
