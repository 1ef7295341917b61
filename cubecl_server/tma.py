"""TMA-related runtime types: the tensor map a kernel's tensor-memory-accelerator loads
need, checked against the hardware's rules.

A :class:`TensorMap` describes a tiled view of a global tensor - element type, rank,
shape, strides, the box one load moves, element strides, interleave, swizzle, what an
out-of-bounds element reads as - as CUDA's ``cuTensorMapEncodeTiled`` takes it
(dimension 0 is the innermost, contiguous one). :meth:`TensorMap.validate` applies
that call's rules and raises :class:`TensorMapError` naming the field and the rule,
before any driver sees it. A backend whose ``Capabilities.tma`` is on (CUDA on sm_90
and later) encodes it into the 128-byte ``CUtensorMap`` a kernel takes as a
``const __grid_constant__`` parameter; every other backend declares it off.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from cubecl_server.errors import CubeclError
from cubecl_server.ir import Elem
from cubecl_server.server import Binding

__all__ = ["TENSOR_MAP_BYTES", "TensorMap", "TensorMapError", "TmaInterleave", "TmaSwizzle",
           "TmaFill", "TensorMapArg", "BoundTensorMap"]

TENSOR_MAP_BYTES = 128
"""The size of an encoded tensor map (``CUtensorMap``), 64-byte aligned."""

MAX_RANK = 5
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
MAX_DIM = 1 << 32
MAX_STRIDE = 1 << 40


class TensorMapError(CubeclError, ValueError):
    """A tensor map the hardware would refuse: which field, and which rule."""


class TmaInterleave(enum.Enum):
    """How the innermost dimension is interleaved (``CU_TENSOR_MAP_INTERLEAVE_*``)."""

    NONE = 0
    B16 = 16
    B32 = 32


class TmaSwizzle(enum.Enum):
    """The shared-memory bank swizzle of a loaded box (``CU_TENSOR_MAP_SWIZZLE_*``):
    the span in bytes its pattern repeats over, 0 for none."""

    NONE = 0
    B32 = 32
    B64 = 64
    B128 = 128


class TmaFill(enum.Enum):
    """What an element outside the tensor reads as: zero, or (floats only) a NaN that
    fused multiply-adds treat as zero (``CU_TENSOR_MAP_FLOAT_OOB_FILL_*``)."""

    ZERO = "zero"
    NAN = "nan"


_ELEM_BYTES = {Elem.F16: 2, Elem.F32: 4, Elem.F64: 8, Elem.I32: 4, Elem.I64: 8, Elem.U32: 4,
               Elem.U64: 8}


@dataclass(frozen=True)
class TensorMap:
    """A tiled tensor map: ``shape`` and ``box`` per dimension, innermost first;
    ``strides`` in bytes for every dimension but the innermost (which is contiguous);
    ``element_strides`` (default all 1) step through the box; ``address`` is the
    tensor's global address (its byte offset where only the alignment matters)."""

    elem: Elem
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    address: int = 0
    element_strides: tuple[int, ...] | None = None
    interleave: TmaInterleave = TmaInterleave.NONE
    swizzle: TmaSwizzle = TmaSwizzle.NONE
    fill: TmaFill = TmaFill.ZERO

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def elem_bytes(self) -> int:
        """Bytes of one element."""
        return _ELEM_BYTES[self.elem]

    @property
    def span_bytes(self) -> int:
        """The bytes from the tensor's first element to just past its last."""
        far = sum((n - 1) * s for n, s in zip(self.shape[1:], self.strides, strict=True))
        return far + self.shape[0] * self.elem_bytes

    def validate(self) -> TensorMap:
        """This map, if the hardware takes it; else :class:`TensorMapError` naming the
        first rule it breaks."""
        if self.elem not in _ELEM_BYTES:
            raise TensorMapError(f"tensor map element type {self.elem.value} is not one TMA "
                                 f"moves (use one of "
                                 f"{', '.join(e.value for e in _ELEM_BYTES)})")
        rank = self.rank
        if not 1 <= rank <= MAX_RANK:
            raise TensorMapError(f"tensor map rank {rank}: TMA takes 1 to {MAX_RANK} "
                                 "dimensions")
        if self.interleave is not TmaInterleave.NONE and rank < 3:
            raise TensorMapError(f"tensor map rank {rank} with interleave "
                                 f"{self.interleave.value}B: an interleaved map needs rank "
                                 ">= 3")
        _lengths("strides", self.strides, rank - 1, "one per dimension but the innermost")
        _lengths("box", self.box, rank, "one per dimension")
        steps = self.element_strides or (1,) * rank
        _lengths("element_strides", steps, rank, "one per dimension")
        align = 32 if self.interleave is TmaInterleave.B32 else 16
        if self.address % align:
            raise TensorMapError(f"tensor map address {self.address:#x} is not {align}-byte "
                                 "aligned")
        for d, n in enumerate(self.shape):
            if not 0 < n <= MAX_DIM:
                raise TensorMapError(f"tensor map shape[{d}] = {n}: each extent must be in "
                                     f"1..2^32")
        for d, s in enumerate(self.strides, start=1):
            if s % align or not 0 < s < MAX_STRIDE:
                raise TensorMapError(f"tensor map strides[{d - 1}] (dimension {d}) = {s} "
                                     f"bytes: a stride must be a positive multiple of "
                                     f"{align} below 2^40")
        for d, b in enumerate(self.box):
            if not 0 < b <= MAX_BOX:
                raise TensorMapError(f"tensor map box[{d}] = {b}: each box extent must be in "
                                     f"1..{MAX_BOX}")
        for d, e in enumerate(steps):
            if not 0 < e <= MAX_ELEMENT_STRIDE:
                raise TensorMapError(f"tensor map element_strides[{d}] = {e}: each must be in "
                                     f"1..{MAX_ELEMENT_STRIDE}")
        inner = self.box[0] * self.elem_bytes
        if self.interleave is TmaInterleave.NONE:
            if inner % 16:
                raise TensorMapError(f"tensor map box[0] = {self.box[0]} elements of "
                                     f"{self.elem.value} is {inner} bytes: the inner box "
                                     "dimension must span a multiple of 16 bytes")
            span = self.swizzle.value
            if span and inner > span:
                raise TensorMapError(f"tensor map inner box of {inner} bytes exceeds the "
                                     f"{span}-byte swizzle span (box[0] * element size <= "
                                     "swizzle span)")
        if self.fill is TmaFill.NAN and not self.elem.is_float:
            raise TensorMapError(f"tensor map fill NaN on {self.elem.value}: only floating-"
                                 "point maps can fill with NaN")
        return self


def _lengths(name: str, values: tuple[int, ...], want: int, what: str) -> None:
    if len(values) != want:
        raise TensorMapError(f"tensor map {name} has {len(values)} entries, expected {want} "
                             f"({what})")


@dataclass(frozen=True)
class TensorMapArg:
    """The launch argument of a ``TensorMap[T]`` parameter: the map's description and
    ``buffer``, the handle (from ``client.create``/``empty``) of the tensor it maps."""

    map: TensorMap
    buffer: Any


@dataclass(frozen=True)
class BoundTensorMap:
    """What a server's launch gets for a tensor-map parameter: the map, validated with
    ``address`` set to the binding's byte offset, and the binding of its tensor."""

    map: TensorMap
    binding: Binding
