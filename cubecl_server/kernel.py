"""Launch geometry, the compiled kernel a Compiler makes, and what a client launches.

A leaf of the core: it imports only the IR and ids, so that servers, compilers and
validation use launch geometry without reaching the kernel language
(``@kernel`` lives in :mod:`cubecl_server.lang`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from cubecl_server import ir
from cubecl_server.id import KernelId

__all__ = ["CubeCount", "CubeDim", "CompiledKernel", "Launchable"]


_G = TypeVar("_G", bound="_Geometry")


@dataclass(frozen=True)
class _Geometry:
    """Three axes of a launch geometry (what :class:`CubeCount` and :class:`CubeDim`
    share); a subclass names itself as an argument (``_argument``) and the least an
    axis may be (``_least``, with ``_rule`` its words)."""

    x: int
    y: int = 1
    z: int = 1

    _argument: ClassVar[str]
    _least: ClassVar[int]
    _rule: ClassVar[str]

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            v = getattr(self, axis)
            if not isinstance(v, int) or v < self._least:
                raise ValueError(f"{type(self).__name__}.{axis} must be a {self._rule} int, "
                                 f"got {v!r}")

    @property
    def total(self) -> int:
        """The product of the axes: the cubes in all of a CubeCount, the units in one
        cube of a CubeDim."""
        return self.x * self.y * self.z

    @classmethod
    def of(cls: type[_G], value: _G | int | tuple[int, ...]) -> _G:
        """``value`` as this geometry: one already, an int (``x``) or a tuple
        ``(x, y, z)`` of 1 to 3 ints; TypeError naming the argument (``cube_count``,
        ``cube_dim``) for anything else."""
        if type(value) is cls:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(value)
        if isinstance(value, tuple) and 1 <= len(value) <= 3 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            return cls(*value)
        raise TypeError(f"{cls._argument} must be a {cls.__name__}, an int or a tuple of 1 "
                        f"to 3 ints, got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class CubeCount(_Geometry):
    """How many cubes (work groups, blocks) a launch runs, per axis (each 0 or more)."""

    _argument: ClassVar[str] = "cube_count"
    _least: ClassVar[int] = 0
    _rule: ClassVar[str] = "non-negative"

    @classmethod
    def cover(cls, n: int, cube_dim: CubeDim | int | tuple[int, ...]) -> CubeCount:
        """Enough cubes of ``cube_dim`` along x for ``n`` units, one per element: the
        ceiling division every launch over ``n`` elements needs (its last cube is
        partly outside: guard with ``if ABSOLUTE_POS < len(out)``)."""
        return cls(-(-n // CubeDim.of(cube_dim).total))


@dataclass(frozen=True)
class CubeDim(_Geometry):
    """How many units (threads, work items) one cube has, per axis (each 1 or more)."""

    _argument: ClassVar[str] = "cube_dim"
    _least: ClassVar[int] = 1
    _rule: ClassVar[str] = "positive"


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
