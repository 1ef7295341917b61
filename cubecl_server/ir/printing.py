"""The IR as readable text: an expression, a statement's first line (what error
messages quote), a whole kernel (what ``cubecl-server source --core`` prints)."""

from __future__ import annotations

from . import expr, stmt
from .kernel import Kernel
from .types import Param

__all__ = ["format_expr", "format_stmt", "format_kernel"]


def format_expr(e: expr.Expr) -> str:
    """One expression as readable text (fully parenthesised where it matters)."""
    match e:
        case expr.Const(value=v, type=t):
            return f"{v!r}:{t.value}"
        case expr.Var(name=n):
            return n
        case expr.Builtin(name=n):
            return n.value
        case expr.Binary(op=op, lhs=a, rhs=b):
            return f"({format_expr(a)} {op.value} {format_expr(b)})"
        case expr.Unary(op=op, x=x):
            return f"({op.value}{' ' if op is expr.UnOp.NOT else ''}{format_expr(x)})"
        case expr.Math(fn=fn, args=args):
            return f"{fn.value}({', '.join(format_expr(a) for a in args)})"
        case expr.Cast(x=x, type=t):
            return f"{t.value}({format_expr(x)})"
        case expr.Bitcast(x=x, type=t):
            return f"bitcast({format_expr(x)}, {t.value})"
        case expr.Select(cond=c, a=a, b=b):
            return f"select({format_expr(c)}, {format_expr(a)}, {format_expr(b)})"
        case expr.Load(array=a, index=i):
            return f"{a}[{format_expr(i)}]"
        case expr.Len(array=a):
            return f"len({a})"
        case expr.Shape(array=a, dim=d):
            return f"{a}.shape[{d}]"
        case expr.Stride(array=a, dim=d):
            return f"{a}.stride[{d}]"
        case expr.BufferLen(array=a):
            return f"buffer_len({a})"
        case expr.Rank(array=a):
            return f"rank({a})"
        case expr.PlaneOp(fn=fn, value=v, lane=lane):
            extra = f", {format_expr(lane)}" if lane is not None else ""
            return f"plane_{fn.value}({format_expr(v)}{extra})"
        case expr.LineFill(x=x, type=t):
            return f"line({format_expr(x)}, {t.size})"
        case expr.LineElement(x=x, index=i):
            return f"{format_expr(x)}[{i}]"
        case expr.LineReduce(fn=fn, x=x):
            return f"line_{fn.value}({format_expr(x)})"
        case expr.LineMake(parts=parts):
            return f"line_of({', '.join(format_expr(p) for p in parts)})"
    raise TypeError(f"not an IR expression: {e!r}")


def _format_block(body: tuple[stmt.Stmt, ...], indent: int, out: list[str]) -> None:
    pad = "    " * indent
    if not body:
        out.append(pad + "pass")
    for s in body:
        match s:
            case stmt.Assign(name=n, value=v):
                out.append(f"{pad}{n} = {format_expr(v)}")
            case stmt.Store(array=a, index=i, value=v):
                out.append(f"{pad}{a}[{format_expr(i)}] = {format_expr(v)}")
            case stmt.If(cond=c, then=t, orelse=o):
                out.append(f"{pad}if {format_expr(c)}:")
                _format_block(t, indent + 1, out)
                if o:
                    out.append(f"{pad}else:")
                    _format_block(o, indent + 1, out)
            case stmt.For(var=v, start=a, stop=b, step=st, body=body_, unroll=u):
                flag = "  # unroll" if u else ""
                out.append(f"{pad}for {v} in range({format_expr(a)}, {format_expr(b)}, "
                           f"{format_expr(st)}):{flag}")
                _format_block(body_, indent + 1, out)
            case stmt.While(cond=c, body=body_):
                out.append(f"{pad}while {format_expr(c)}:")
                _format_block(body_, indent + 1, out)
            case stmt.Break():
                out.append(pad + "break")
            case stmt.Continue():
                out.append(pad + "continue")
            case stmt.Return():
                out.append(pad + "return")
            case stmt.Barrier():
                out.append(pad + "sync_cube()")
            case stmt.SyncPlane():
                out.append(pad + "sync_plane()")
            case stmt.AtomicStmt(op=op, array=a, index=i, value=v, compare=c, result=r):
                args = [a, format_expr(i)] + ([format_expr(c)] if c is not None else [])
                args.append(format_expr(v))
                lhs = f"{r} = " if r else ""
                out.append(f"{pad}{lhs}atomic_{op.value}({', '.join(args)})")
            case stmt.TensorMapLoad(map=m, shared=sh, coords=cs):
                out.append(f"{pad}tma_load({m}, {sh}, {', '.join(map(format_expr, cs))})")
            case stmt.DebugPrint(text=text, args=args):
                parts = [repr(text[0])]
                for a, t in zip(args, text[1:], strict=True):
                    parts += [format_expr(a), repr(t)]
                out.append(f"{pad}debug_print({', '.join(parts)})")
            case _:
                raise TypeError(f"not an IR statement: {s!r}")


def format_stmt(s: stmt.Stmt) -> str:
    """One statement as readable text: its first line (a compound one's header)."""
    out: list[str] = []
    _format_block((s,), 0, out)
    return out[0]


def _param_type(p: Param) -> str:
    if p.array:
        return f"Array[{p.value_type.value}]"
    return f"TensorMap[{p.elem.value}]" if p.tensor_map else p.elem.value


def format_kernel(k: Kernel) -> str:
    """The whole kernel as readable, Python-like text."""
    params = ", ".join(f"{p.name}: {_param_type(p)}" for p in k.params)
    out = [f"kernel {k.name}({params}):"]
    for name, value in k.comptime:
        out.append(f"    # comptime {name} = {value!r}")
    for loc in k.locals:
        out.append(f"    var {loc.name}: {loc.elem.value}")
    for sh in k.shared:
        out.append(f"    shared {sh.name}: {sh.elem.value}[{sh.size}]")
    for la in k.local_arrays:
        out.append(f"    local {la.name}: {la.elem.value}[{la.size}]")
    _format_block(k.body, 1, out)
    return "\n".join(out)
