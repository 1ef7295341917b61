"""``debug_print(...)``: a unit prints a line, as Python's ``print`` would lay it out.

The arguments are joined by a space: a string constant as it is, an f-string as its
text with each ``{value}`` in its place, any other argument as a value. The values are
typed as everywhere (a literal takes its default type) and printed as
:class:`~cubecl_server.ir.DebugPrint` says (integers in decimal, floats as C's
``%g``, bools as 1 or 0).
"""

from __future__ import annotations

import ast

from .. import ir
from .builder import Builder
from .typerules import Weak, concrete

__all__ = ["debug_print"]


def debug_print(b: Builder, node: ast.Call) -> ir.DebugPrint:
    """The IR of the statement ``debug_print(*args)`` at ``node``."""
    if node.keywords:
        raise b.fail(node, "debug_print() takes no keywords: it joins its arguments by a "
                           "space and ends the line, as print() does by default")
    text, args = [""], []
    for i, arg in enumerate(node.args):
        if i:
            text[-1] += " "
        for piece in arg.values if isinstance(arg, ast.JoinedStr) else [arg]:
            if isinstance(piece, ast.Constant) and isinstance(piece.value, str):
                text[-1] += piece.value
                continue
            if isinstance(piece, ast.FormattedValue):
                if piece.conversion != -1 or piece.format_spec is not None:
                    raise b.fail(node, f"debug_print() prints `{b.seg(piece.value)}` as "
                                       "its type does: no conversion or format spec (`!r`, "
                                       "`:.3f`)")
                piece = piece.value
            args.append(_value(b, piece))
            text.append("")
    bad = next((t for t in text if not (t.isascii() and t.isprintable())), None)
    if bad is not None:
        raise b.fail(node, f"debug_print() prints printable ASCII text, not {bad!r}")
    if sum(map(len, text)) > ir.MAX_PRINT_TEXT:
        raise b.fail(node, f"debug_print() prints at most {ir.MAX_PRINT_TEXT} characters of "
                           "text")
    return ir.DebugPrint(tuple(text), tuple(args))


def _value(b: Builder, node: ast.expr) -> ir.Expr:
    v = b.expr(node)
    e = concrete(v) if isinstance(v, Weak) else v
    if isinstance(e.type, ir.Line):
        raise b.fail(node, f"debug_print() prints elements, and `{b.seg(node)}` is a "
                           f"{e.type.value}: print its elements, e.g. "
                           f"{b.seg(node)}[0], {b.seg(node)}[1]")
    if e.type.is_minifloat:
        raise b.fail(node, f"debug_print() prints numbers, and `{b.seg(node)}` is "
                           f"{e.type.value}: print f32({b.seg(node)})")
    return e
