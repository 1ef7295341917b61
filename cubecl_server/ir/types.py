"""The IR's types and declarations: element and line types, where a kernel was
written, and what a kernel declares (parameters, locals, shared and local arrays)."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = ["Elem", "LINE_SIZES", "Line", "Type", "elem_of", "line_size", "SourceLoc", "Param",
           "Local", "SharedArray", "LocalArray"]


class Elem(enum.Enum):
    """A scalar element type: what one value of an expression or an array holds.

    Its properties are worked out once per member (launches read them per argument).
    """

    F16 = "f16"
    F32 = "f32"
    F64 = "f64"
    I32 = "i32"
    I64 = "i64"
    U32 = "u32"
    U64 = "u64"
    BOOL = "bool"
    I8 = "i8"
    I16 = "i16"
    U8 = "u8"
    U16 = "u16"
    E4M3 = "e4m3"
    E5M2 = "e5m2"
    E2M3 = "e2m3"
    E3M2 = "e3m2"
    E2M1 = "e2m1"

    @functools.cached_property
    def is_float(self) -> bool:
        """Whether this is a floating-point type."""
        return self in (Elem.F16, Elem.F32, Elem.F64)

    @functools.cached_property
    def is_int(self) -> bool:
        """Whether this is an integer type (signed or unsigned, not bool)."""
        return self in (Elem.I32, Elem.I64, Elem.U32, Elem.U64, Elem.I8, Elem.I16, Elem.U8,
                        Elem.U16)

    @functools.cached_property
    def is_narrow(self) -> bool:
        """Whether this is an 8- or 16-bit integer type (i8, i16, u8, u16): a type C
        promotes to ``int`` before arithmetic, so a backend brings results back to it."""
        return self in (Elem.I8, Elem.I16, Elem.U8, Elem.U16)

    @functools.cached_property
    def is_minifloat(self) -> bool:
        """Whether this is a float storage type of a byte a value (e4m3: 4 exponent
        bits, 3 mantissa bits, no infinity, as ``ml_dtypes.float8_e4m3fn``; e5m2:
        IEEE-like, as ``ml_dtypes.float8_e5m2``; the 6-bit e2m3 and e3m2 and the 4-bit
        e2m1, as ``ml_dtypes``' ``float6_e2m3fn``, ``float6_e3m2fn``,
        ``float4_e2m1fn``). Its values are loaded, stored and converted to and from
        f32, nothing else; it is neither ``is_float`` nor ``is_int``."""
        return self in (Elem.E4M3, Elem.E5M2, Elem.E2M3, Elem.E3M2, Elem.E2M1)

    @functools.cached_property
    def is_signed(self) -> bool:
        """Whether this is a signed integer type."""
        return self in (Elem.I32, Elem.I64, Elem.I8, Elem.I16)

    @functools.cached_property
    def bits(self) -> int:
        """Width in bits (bool counts as 8: one byte in a buffer; so do the 6- and 4-bit
        minifloats, a value a byte)."""
        return {"f16": 16, "f32": 32, "f64": 64, "i32": 32, "i64": 64,
                "u32": 32, "u64": 64, "bool": 8, "i8": 8, "i16": 16, "u8": 8,
                "u16": 16, "e4m3": 8, "e5m2": 8, "e2m3": 8, "e3m2": 8,
                "e2m1": 8}[self.value]

    @functools.cached_property
    def numpy_name(self) -> str:
        """The NumPy dtype name with the same layout (a minifloat's is ``ml_dtypes``',
        which NumPy knows once ``ml_dtypes`` is imported)."""
        if self.is_minifloat:
            return {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e2m3": "float6_e2m3fn",
                    "e3m2": "float6_e3m2fn", "e2m1": "float4_e2m1fn"}[self.value]
        return "bool" if self is Elem.BOOL else {"f": "float", "i": "int", "u": "uint"}[
            self.value[0]] + self.value[1:]


LINE_SIZES = (2, 4, 8, 16)
"""The sizes a :class:`Line` may have (a line of 1 is its element type itself)."""


@dataclass(frozen=True)
class Line:
    """A line type: ``size`` elements of ``elem`` taken as one value (a vector).

    Instances are interned: two equal lines are one object, so ``is`` compares line
    types as it compares :class:`Elem` members.
    """

    elem: Elem
    size: int

    _interned: ClassVar[dict[tuple[Elem, int], Line]] = {}

    def __new__(cls, elem: Elem, size: int) -> Line:
        line = cls._interned.get((elem, size))
        if line is None:
            line = cls._interned[(elem, size)] = super().__new__(cls)
        return line

    def __getnewargs__(self) -> tuple[Elem, int]:
        return self.elem, self.size

    @property
    def value(self) -> str:
        """The type as the kernel language spells it: ``Line[f32, 4]``."""
        return f"Line[{self.elem.value}, {self.size}]"


Type = Elem | Line
"""The type of a value: one element, or a line of them."""


def elem_of(t: Type) -> Elem:
    """The element type of ``t``: ``t`` itself, or a line's element type."""
    return t.elem if isinstance(t, Line) else t


def line_size(t: Type) -> int:
    """How many elements a value of ``t`` holds: a line's size, 1 for an element type."""
    return t.size if isinstance(t, Line) else 1


@dataclass(frozen=True)
class SourceLoc:
    """Where a kernel was written; kept for messages, never part of the hash."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_SINCE_LINES = {"omit_at_default": True}
"""Field metadata: a field added after kernels were already digested, left out of
the serialisation where it holds its default, so those kernels keep their digests."""


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a global array (``array=True``) or a scalar passed by value.

    ``line`` > 1 makes an array a line array: the buffer holds ``elem`` elements, and
    the kernel reads and writes them ``line`` at a time (:attr:`value_type`).
    ``tensor_map`` makes it a tensor map (``array`` False): the description of a tiled
    view of a global tensor of ``elem``, used only by :class:`TensorMapLoad`.
    """

    name: str
    elem: Elem
    array: bool
    line: int = field(default=1, metadata=_SINCE_LINES)
    tensor_map: bool = field(default=False, metadata=_SINCE_LINES)

    @property
    def value_type(self) -> Type:
        """What one ``Load`` of this array gives: a :class:`Line` for a line array,
        else its element type."""
        return Line(self.elem, self.line) if self.line > 1 else self.elem


@dataclass(frozen=True)
class Local:
    """A local variable, declared for the whole kernel with one type (a line too)."""

    name: str
    elem: Type


@dataclass(frozen=True)
class SharedArray:
    """Cube-local memory: ``size`` elements shared by the units of one cube."""

    name: str
    elem: Elem
    size: int


@dataclass(frozen=True)
class LocalArray:
    """Unit-local memory: ``size`` elements each unit has for itself, all 0 at the start."""

    name: str
    elem: Elem
    size: int
