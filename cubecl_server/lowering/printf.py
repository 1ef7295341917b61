"""A ``DebugPrint`` as C's ``printf`` takes it, for every target that prints through a
C ``printf`` (OpenCL C, CUDA, C, LLVM IR calling the C library's): the format, and the
type each value is passed as, so that they print alike."""

from __future__ import annotations

from cubecl_server import ir

__all__ = ["printf_format"]

E = ir.Elem

_CONVERSION = {E.I32: "%d", E.U32: "%u", E.I64: "%ld", E.U64: "%lu", E.F64: "%g"}
_PASSED = {E.I8: E.I32, E.I16: E.I32, E.BOOL: E.I32, E.U8: E.U32, E.U16: E.U32,
           E.F16: E.F64, E.F32: E.F64}


def printf_format(s: ir.DebugPrint) -> tuple[str, tuple[ir.Elem, ...]]:
    """``s``'s ``printf`` format (its texts with ``%`` doubled around one conversion per
    value, and the newline) and the type each value is passed as: ``int`` or
    ``unsigned int`` for 32 bits and fewer (a bool as ``int``), ``long`` or ``unsigned
    long`` for 64 (64 bits on every 64-bit Linux target), ``double`` for a float (what
    C's promotion of a variadic argument makes of it)."""
    passed = tuple(_PASSED.get(a.type, a.type) for a in s.args)  # type: ignore[call-overload]
    fmt = s.text[0].replace("%", "%%")
    for t, text in zip(passed, s.text[1:], strict=True):
        fmt += _CONVERSION[t] + text.replace("%", "%%")
    return fmt + "\n", passed
