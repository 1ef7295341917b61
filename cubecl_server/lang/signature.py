"""A kernel's signature: its runtime parameters and its compile-time parameters."""

from __future__ import annotations

import ast
import builtins
import enum
import inspect
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import ir
from ..errors import KernelSyntaxError
from .reads import MISSING
from .source import KernelSource, closure_vars, code_location, load_source
from .structs import flat_name, struct_type
from .types import (
    SCALAR_TYPES,
    ArrayType,
    ComptimeType,
    LineType,
    ScalarType,
    TensorMapType,
    TypeRef,
    dtype,
)

__all__ = ["KernelSignature", "kernel_signature", "ComptimeValue", "LINE_SIZE", "spelled"]

LINE_SIZE = "line_size"
"""The launch keyword that sets the line size of a kernel's line arrays."""

ComptimeValue = int | float | bool | str | enum.Enum
"""The Python types a bound comptime value has (a dtype is bound as its name, "f32"; an
enum as its member)."""


def spelled(bound: tuple[tuple[str, ComptimeValue], ...]
            ) -> tuple[tuple[str, int | float | bool | str], ...]:
    """Bound comptime values as the IR keeps them: an enum member as its class's and
    its own name (``"Mode.FAST"``), the rest as they are."""
    return tuple((n, f"{type(v).__qualname__}.{v.name}" if isinstance(v, enum.Enum) else v)
                 for n, v in bound)


@dataclass(frozen=True)
class KernelSignature:
    """What a kernel takes: its runtime params in order, and its comptime params.

    ``comptime`` maps each keyword-only compile-time parameter to its kind (``int``,
    ``bool``, ``float`` or :class:`~cubecl_server.lang.types.dtype`), in declaration
    order; ``comptime_defaults`` holds the defaults some of them declare.
    ``generic`` maps each runtime parameter whose type is a comptime dtype
    (``a: "Array[T]"``) to that dtype's name; in ``params`` such a parameter has the
    dtype's default, or ``f32`` as a placeholder when there is none, until
    :meth:`specialise` gives it the bound type. ``lines`` names the line arrays
    (``Array[Line[T]]``), in order: their line size is the launch keyword
    ``line_size`` (:meth:`bind_line_sizes`). ``structs`` maps each struct parameter
    (:mod:`.structs`) to its class and its fields, which are in ``params`` in its place
    as ``<param>_<field>``; ``inputs`` then names the parameters a launch passes, a
    struct as one (empty for a kernel without structs: ``params`` are those).
    """

    name: str
    params: tuple[ir.Param, ...]
    comptime: dict[str, type] = field(default_factory=dict)
    comptime_defaults: dict[str, ComptimeValue] = field(default_factory=dict)
    generic: dict[str, str] = field(default_factory=dict)
    lines: tuple[str, ...] = ()
    structs: dict[str, tuple[type, tuple[str, ...]]] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()

    def specialise(self, bound: Mapping[str, ComptimeValue],
                   line_sizes: Mapping[str, int] | None = None) -> tuple[ir.Param, ...]:
        """The runtime parameters with every comptime dtype replaced by its bound type,
        and each line array given its size from ``line_sizes`` (1 where absent)."""
        out: list[ir.Param] = []
        sizes = line_sizes or {}
        for p in self.params:
            var = self.generic.get(p.name)
            elem = p.elem if var is None else ir.Elem(bound[var])
            line = sizes.get(p.name, 1)
            out.append(p if var is None and line == 1 else
                       ir.Param(p.name, elem, p.array, line))
        return tuple(out)

    def bind_line_sizes(self, value: object) -> dict[str, int]:
        """The line size of each line array, from the ``line_size`` launch keyword: None
        (every line array 1), an int (every one that size), or a mapping (or pairs) from
        each line array's name to its size.

        Raises TypeError naming what is wrong: ``line_size`` on a kernel without line
        arrays, a name that is not one, a line array left out, a size that is not an
        int; ValueError for a size that is not 1, 2, 4, 8 or 16.
        """
        if value is None:
            return dict.fromkeys(self.lines, 1)
        if not self.lines:
            raise TypeError(f"kernel `{self.name}` has no line arrays (Array[Line[T]]), so "
                            "it takes no line_size")
        if isinstance(value, Mapping):
            pairs = list(value.items())
        elif isinstance(value, tuple) and all(isinstance(v, tuple) and len(v) == 2
                                              for v in value):
            pairs = list(value)
        else:
            return {name: _line_size(self.name, name, value) for name in self.lines}
        unknown = sorted(str(n) for n, _ in pairs if n not in self.lines)
        missing = [n for n in self.lines if n not in {n for n, _ in pairs}]
        if unknown or missing:
            what = (f"names {', '.join(f'`{n}`' for n in unknown)}, which "
                    f"{'is not a line array' if len(unknown) == 1 else 'are not line arrays'}"
                    if unknown else
                    f"leaves out {', '.join(f'`{n}`' for n in missing)}")
            raise TypeError(f"line_size of kernel `{self.name}` {what}; its line arrays are "
                            f"{', '.join(f'`{n}`' for n in self.lines)} (or give one int "
                            "for all)")
        return {str(n): _line_size(self.name, str(n), v) for n, v in pairs}

    def bind_comptime(self, values: Mapping[str, object]) -> tuple[tuple[str, ComptimeValue], ...]:
        """Check ``values`` against the comptime params; return them in declaration order.

        Defaults fill what is missing; ``line_size`` (a kernel with line arrays) is
        checked by :meth:`bind_line_sizes` and left out; ``Comptime[float]`` accepts an
        int and stores a float; ``Comptime[dtype]`` accepts a kernel scalar type, an
        ``ir.Elem``, a NumPy dtype or a type name and stores the name (``"f32"``).
        Raises TypeError naming the parameter on an unknown, missing or ill-typed
        value.
        """
        if LINE_SIZE in values and LINE_SIZE not in self.comptime:
            self.bind_line_sizes(values[LINE_SIZE])
        unknown = sorted(set(values) - set(self.comptime) - {LINE_SIZE})
        if unknown:
            raise TypeError(f"kernel `{self.name}` has no comptime parameter "
                            + ", ".join(f"`{n}`" for n in unknown))
        bound: list[tuple[str, ComptimeValue]] = []
        for name, kind in self.comptime.items():
            if name in values:
                raw = values[name]
            elif name in self.comptime_defaults:
                raw = self.comptime_defaults[name]
            else:
                raise TypeError(f"kernel `{self.name}` needs a value for its comptime "
                                f"parameter `{name}` (Comptime[{kind.__name__}])")
            bound.append((name, _coerce_comptime(self.name, name, kind, raw)))
        return tuple(bound)


def _line_size(kernel: str, name: str, raw: object) -> int:
    """``raw`` checked as the line size of line array ``name``."""
    if isinstance(raw, bool) or not isinstance(raw, numbers.Integral):
        raise TypeError(f"line_size of `{name}` in kernel `{kernel}` must be an int, got "
                        f"{raw!r} ({type(raw).__name__})")
    if int(raw) not in (1, *ir.LINE_SIZES):
        raise ValueError(f"line_size of `{name}` in kernel `{kernel}` is {raw}; a line "
                         f"size is 1, {', '.join(map(str, ir.LINE_SIZES))}")
    return int(raw)


def _coerce_dtype(raw: object) -> str | None:
    """The element type name ``raw`` denotes as a dtype, or None."""
    if isinstance(raw, ScalarType):
        return raw.elem.value
    if isinstance(raw, ir.Elem):
        return raw.value
    if isinstance(raw, str):
        for elem, t in SCALAR_TYPES.items():
            if raw in (elem.value, t.name, elem.numpy_name):
                return elem.value
        return None
    if type(raw).__module__.startswith("numpy") or (
            isinstance(raw, type) and raw.__module__.startswith("numpy")):
        import numpy as np  # lazily: only a NumPy dtype value needs it

        try:
            np_name = np.dtype(raw).name  # type: ignore[call-overload]
        except TypeError:
            return None
        for elem in ir.Elem:
            if elem.numpy_name == np_name:
                return elem.value
    return None


def _coerce_comptime(kernel: str, name: str, kind: type, raw: object) -> ComptimeValue:
    if issubclass(kind, enum.Enum):
        if isinstance(raw, kind):
            return raw
        members = ", ".join(f"{kind.__name__}.{m.name}" for m in kind)
        raise TypeError(f"comptime parameter `{name}` of kernel `{kernel}` is "
                        f"Comptime[{kind.__name__}] (one of {members}), got {raw!r}")
    if kind is dtype:
        value = _coerce_dtype(raw)
        if value is None:
            raise TypeError(f"comptime parameter `{name}` of kernel `{kernel}` is "
                            f"Comptime[dtype] (a scalar type such as f32), got {raw!r} "
                            f"({type(raw).__name__})")
        return value
    # bool is an int in Python, so it is checked first everywhere: True is not 1 here.
    is_bool = isinstance(raw, bool) or type(raw).__name__ == "bool_"
    if kind is bool and is_bool:
        return bool(raw)  # type: ignore[arg-type]
    if kind is int and not is_bool and isinstance(raw, numbers.Integral):
        return int(raw)
    if kind is float and not is_bool and isinstance(raw, numbers.Real):
        return float(raw)  # type: ignore[arg-type]
    raise TypeError(f"comptime parameter `{name}` of kernel `{kernel}` is "
                    f"Comptime[{kind.__name__}], got {raw!r} ({type(raw).__name__})")


def resolve_annotation(fn: Callable[..., Any], ann: object,
                       type_vars: Mapping[str, object] | None = None,
                       record: Callable[[str, object], None] | None = None) -> object:
    """The object annotation ``ann`` of ``fn`` denotes, evaluated in ``fn``'s scope.

    Under ``from __future__ import annotations`` every annotation is a string;
    ``type_vars`` (comptime dtype names) shadow the function's globals. ``record``,
    when given, is told each name a string annotation resolves and what it found
    there (a builtin, or ``reads.MISSING``).
    """
    if not isinstance(ann, str):
        return ann
    scope: dict[str, Any] = {**fn.__globals__, **closure_vars(fn)}
    scope.update(type_vars or {})
    names: Mapping[str, object] = scope if record is None else _Recorded(scope, record)
    value: object = ann
    # A quoted annotation under the future import is a string of a string.
    for _ in range(3):
        if not isinstance(value, str):
            break
        value = eval(value, {"__builtins__": builtins}, names)
    return value


class _Recorded(dict[str, object]):
    """A scope that tells ``record`` every name looked up in it: as the locals of an
    ``eval``, it sees the names the expression reads, builtins included."""

    def __init__(self, scope: dict[str, Any], record: Callable[[str, object], None]) -> None:
        super().__init__()
        self.scope = scope
        self.record = record

    def __getitem__(self, name: str) -> object:
        value = self.scope[name] if name in self.scope else getattr(builtins, name, MISSING)
        self.record(name, value)
        if value is MISSING:
            raise KeyError(name)
        return value


def _arg_node(a: ast.arguments, pname: str) -> ast.arg | None:
    """The node of parameter ``pname`` (``*args`` and ``**kwargs`` with their stars)."""
    for node in (*a.posonlyargs, *a.args, *a.kwonlyargs):
        if node.arg == pname:
            return node
    if a.vararg is not None and pname == "*" + a.vararg.arg:
        return a.vararg
    if a.kwarg is not None and pname == "**" + a.kwarg.arg:
        return a.kwarg
    return None


def kernel_signature(fn: Callable[..., Any], source: KernelSource | None = None) -> KernelSignature:
    """Read ``fn``'s parameters as a kernel signature; raise KernelSyntaxError if invalid.

    Positional parameters are runtime ones (``Array[T]`` or a scalar type, no
    default); keyword-only ones are ``Comptime[...]`` (a default is allowed). A runtime
    parameter's string annotation may name a ``Comptime[dtype]`` parameter
    (``a: "Array[T]"``, ``x: "T"``): see :attr:`KernelSignature.generic`.
    ``source`` (``load_source(fn)``) only places errors: without it, the file is read
    when there is an error to place.
    """
    file, first = code_location(fn)

    def fail(message: str, pname: str | None = None) -> KernelSyntaxError:
        # The source only places an error, so it is read when there is one.
        src = source
        if src is None:
            try:
                src = load_source(fn)
            except KernelSyntaxError:
                return KernelSyntaxError(message, file, first)
        node = _arg_node(src.tree.args, pname) if pname else None
        return KernelSyntaxError(message, file, src.line(src.tree if node is None else node))

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise fail(f"cannot read the signature of {fn!r}: {exc}") from None
    name = fn.__name__
    params: list[ir.Param] = []
    comptime: dict[str, type] = {}
    defaults: dict[str, ComptimeValue] = {}
    generic: dict[str, str] = {}
    lines: list[str] = []
    inputs: list[str] = []
    structs: dict[str, tuple[type, tuple[str, ...]]] = {}
    # Comptime dtypes first: runtime annotations may name them.
    type_vars: dict[str, object] = {}
    type_defaults: dict[str, str] = {}
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and p.annotation is not p.empty:
            try:
                ann = resolve_annotation(fn, p.annotation)
            except Exception:  # reported with its line in the main loop below
                continue
            if isinstance(ann, ComptimeType) and ann.kind is dtype:
                type_vars[p.name] = TypeRef(p.name)
                d = _coerce_dtype(p.default) if p.default is not p.empty else None
                if d is not None:
                    type_defaults[p.name] = d
    def runtime(pname: str, where: str, ann: object) -> None:
        """Add runtime parameter ``pname`` of annotation ``ann`` (an error points at
        parameter ``where`` of the signature: a struct's, for its fields)."""
        var: str | None = None
        if isinstance(ann, TypeRef):
            var = ann.name
        elif isinstance(ann, ArrayType) and ann.var is not None:
            var = ann.var
        if var is not None and var not in type_vars:
            raise fail(f"the annotation of `{pname}` names `{var}`, which is not a "
                       f"keyword-only Comptime[dtype] parameter of `{name}`", where)
        if isinstance(ann, ArrayType) and ann.line:
            if ann.elem is not None and ann.elem.is_minifloat:
                raise fail(f"`{pname}` is an array of lines of {ann.elem.value}: lines of "
                           f"minifloats are not built; use Array[{ann.elem.value}]", where)
            lines.append(pname)
        if var is not None:
            generic[pname] = var
            params.append(ir.Param(pname, ir.Elem(type_defaults.get(var, "f32")),
                                   isinstance(ann, ArrayType)))
        elif isinstance(ann, ArrayType):
            assert ann.elem is not None
            params.append(ir.Param(pname, ann.elem, True))
        elif isinstance(ann, ScalarType):
            if ann.elem.is_minifloat:
                raise fail(f"parameter `{pname}` is a {ann.elem.value} scalar: a minifloat "
                           f"is a type of arrays and locals; take `{pname}: f32` and convert "
                           f"with {ann.elem.value}({pname})", where)
            params.append(ir.Param(pname, ann.elem, False))
        elif isinstance(ann, TensorMapType):
            params.append(ir.Param(pname, ann.elem, False, tensor_map=True))
        else:
            hints: dict[object, str] = {int: "i32", float: "f32", bool: "bool_"}
            hint = hints.get(ann) if isinstance(ann, type) else None
            extra = f"; write `{pname}: {hint}`" if hint else ""
            if isinstance(ann, LineType):
                extra = f"; a line is read from an array: write `{pname}: Array[{ann!r}]`"
            raise fail(f"parameter `{pname}` has annotation {ann!r}, which is not a kernel "
                       f"type (use Array[T], a scalar type such as f32, or a struct){extra}",
                       where)

    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            raise fail(f"`*{p.name}` is not supported: a kernel takes a fixed list of "
                       "parameters", "*" + p.name)
        if p.kind is p.VAR_KEYWORD:
            raise fail(f"`**{p.name}` is not supported: a kernel takes a fixed list of "
                       "parameters", "**" + p.name)
        if p.annotation is p.empty:
            raise fail(f"parameter `{p.name}` needs an annotation: Array[T] for a buffer, a "
                       "scalar type such as f32, or Comptime[int] for a keyword-only "
                       "compile-time value", p.name)
        try:
            ann = resolve_annotation(fn, p.annotation,
                                      type_vars if p.kind is not p.KEYWORD_ONLY else None)
        except Exception as exc:
            raise fail(f"cannot evaluate the annotation of `{p.name}`: {exc}", p.name) from None
        if p.kind is p.KEYWORD_ONLY:
            if p.name == LINE_SIZE:
                raise fail(f"`{LINE_SIZE}` is the launch keyword that sizes a kernel's "
                           "line arrays; name the comptime parameter otherwise", p.name)
            if not isinstance(ann, ComptimeType):
                raise fail(f"keyword-only parameter `{p.name}` must be Comptime[int], "
                           f"Comptime[bool], Comptime[float], Comptime[dtype] or "
                           f"Comptime[E] of an Enum class E, not {ann!r}", p.name)
            comptime[p.name] = ann.kind
            if p.default is not p.empty:
                try:
                    defaults[p.name] = _coerce_comptime(name, p.name, ann.kind, p.default)
                except TypeError as exc:
                    raise fail(f"bad default: {exc}", p.name) from None
            continue
        if isinstance(ann, ComptimeType):
            raise fail(f"comptime parameter `{p.name}` must be keyword-only: put it after "
                       "`*` in the parameter list", p.name)
        if p.default is not p.empty:
            raise fail(f"runtime parameter `{p.name}` cannot have a default value", p.name)
        inputs.append(p.name)
        try:
            st = struct_type(ann)
        except Exception as exc:
            raise fail(f"cannot evaluate the fields of struct `{p.name}`: {exc}",
                       p.name) from None
        if st is None:
            runtime(p.name, p.name, ann)
            continue
        for fname, fann in st.fields:
            flat = flat_name(p.name, fname)
            if flat in sig.parameters:
                raise fail(f"field `{fname}` of struct `{p.name}` is parameter `{flat}` "
                           f"in the kernel, and `{name}` has a parameter of that name "
                           "already; rename one", p.name)
            if struct_type(fann) is not None:
                raise fail(f"field `{fname}` of struct `{p.name}` is a struct: structs do "
                           "not nest", p.name)
            runtime(flat, p.name, fann)
        assert isinstance(ann, type)
        structs[p.name] = (ann, tuple(f for f, _ in st.fields))
    if sig.return_annotation is not sig.empty:
        ret = resolve_annotation(fn, sig.return_annotation)
        if ret is not None and ret is not type(None) and ret != "None":
            raise fail(f"a kernel returns nothing (write results to an array); its return "
                       f"annotation must be None, not {ret!r}")
    return KernelSignature(name, tuple(params), comptime, defaults, generic, tuple(lines),
                           structs, tuple(inputs) if structs else ())
