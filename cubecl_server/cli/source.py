"""``cubecl-server source``: print the source a backend generates for a kernel."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from cubecl_server.cli import spirv
from cubecl_server.cli.table import Subparsers
from cubecl_server.config import config
from cubecl_server.errors import BackendUnavailable, CubeclError
from cubecl_server.kernel import CubeDim
from cubecl_server.lang.signature import LINE_SIZE
from cubecl_server.plugins import registry

__all__ = ["add_source_command", "run_source_command"]

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


class _Refused(Exception):
    """What the user asked for cannot be done; the message says why, on one line."""


def _cube_dim_arg(text: str) -> CubeDim:
    """``--cube-dim``: ``64``, ``16,16`` or ``8x8x4`` (1 to 3 positive ints)."""
    parts = text.replace("x", ",").split(",")
    try:
        dims = [int(p) for p in parts]
        if not 1 <= len(dims) <= 3:
            raise ValueError(text)
        return CubeDim(*dims)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 1 to 3 positive ints such as 64, 16,16 or 8x8x4, not {text!r}"
        ) from None


def add_source_command(subparsers: Subparsers) -> None:
    """Register ``source``."""
    parser = subparsers.add_parser(
        "source", help="print the source a backend generates for a kernel",
        description="Import FILE.py, find the @kernel KERNEL in it and print the source "
                    "the backend's Compiler generates for it (OpenCL C, SPIR-V as spirv-dis "
                    "prints it when it is on PATH, CUDA C++, NumPy Python) for the cube "
                    "dim and comptime values given, checked against the device's limits. "
                    "Nothing is built, stored or loaded.")
    parser.add_argument("target", metavar="FILE.py:KERNEL",
                        help="the file defining the kernel, and the kernel's name in it")
    parser.add_argument("--backend", help="backend name (default: CUBECL_BACKEND or cpu)")
    parser.add_argument("--device", type=int,
                        help="device index, as `cubecl-server backends` lists them "
                             "(default: 0)")
    parser.add_argument("--compile-only", action="store_true",
                        help="lower without a device, on the backend's compile-only "
                             "server (backends that have one, such as cuda)")
    parser.add_argument("--cube-dim", type=_cube_dim_arg, required=True, metavar="DIM",
                        help="units per cube: 64, 16,16 or 8x8x4")
    parser.add_argument("--core", action="store_true",
                        help="print the kernel in the core IR the backend's emitter "
                             "receives, after the core's passes (docs/ir.md)")
    parser.add_argument("--comptime", action="append", default=[], metavar="NAME=VALUE",
                        help="a comptime value (repeat for each): an int, a float, "
                             "true/false, or a type name such as f32")
    parser.set_defaults(func=run_source_command)


def run_source_command(args: argparse.Namespace) -> int:
    """Print the kernel's generated source; 1 with one line of error when it cannot."""
    # Imported here: only this command needs the client and the kernel language.
    from cubecl_server.client import create_client
    from cubecl_server.lang.generated import source_of

    try:
        kernel = _find_kernel(args.target)
        comptime = _comptime_values(kernel, args.comptime)
        try:
            client = create_client(args.backend, args.device, compile_only=args.compile_only)
        except BackendUnavailable as e:
            name = args.backend or config().backend
            if args.compile_only or registry().descriptor(name).compile_only_server is None:
                raise
            raise _Refused(f"{e}; --compile-only lowers for {name} without a device") from e
        source = source_of(client, kernel, args.cube_dim, core=args.core, **comptime)
        note = None
        if not args.core:
            source, note = _standard_form(client, kernel, args.cube_dim, comptime, source)
    except (_Refused, CubeclError, TypeError) as e:
        # TypeError: a comptime value the kernel refuses, naming the parameter.
        print(f"error: {e}", file=sys.stderr)
        return 1
    if note is not None:
        print(f"note: {note}", file=sys.stderr)
    print(source, end="" if source.endswith("\n") else "\n")
    return 0


def _standard_form(client: Any, kernel: Any, cube_dim: CubeDim, comptime: dict[str, Any],
                   listing: str) -> tuple[str, str | None]:
    """``listing`` as people read its kind of source: a SPIR-V module through
    ``spirv-dis`` (:mod:`.spirv`); any other source as it is. And a note on why not,
    if it could not be."""
    from cubecl_server.compiler.record import CompilationRecording

    # source_of checked the kernel and the launch and returned the text only: the
    # module is lowered once more (the IR is cached) for its bytes.
    ac = client.loader.artifact_compiler
    kid = kernel.kernel_id(comptime)
    compiled = ac.lower(kid.ir, cube_dim, client.mode,
                        CompilationRecording(False, kid.name, client.backend, ac.variant))
    module = spirv.module_of(compiled)
    return (listing, None) if module is None else spirv.disassemble(module, listing)


def _find_kernel(target: str) -> Any:
    """The kernel ``FILE.py:KERNEL`` names, importing the file as ``python FILE.py``
    would (its directory first on ``sys.path``)."""
    file, sep, name = target.rpartition(":")
    if not sep or not file or not name:
        raise _Refused(f"expected FILE.py:KERNEL, not {target!r}")
    path = Path(file)
    if not path.is_file():
        raise _Refused(f"no file {file!r}")
    module = _import_file(path)
    found = getattr(module, name, None)
    if callable(getattr(found, "kernel_id", None)):
        return found
    kernels = sorted(n for n, v in vars(module).items()
                     if callable(getattr(v, "kernel_id", None)) and not isinstance(v, type))
    what = "is not a @kernel" if found is not None else "is not defined"
    close = difflib.get_close_matches(name, kernels, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    listed = ", ".join(kernels) if kernels else "none"
    raise _Refused(f"`{name}` {what} in {file}{hint} (its kernels: {listed})")


def _import_file(path: Path) -> ModuleType:
    # A private module name: the file's stem could be that of a module already loaded.
    name = f"_cubecl_source_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _Refused(f"cannot import {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and the like look their module up here
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise _Refused(f"importing {path} failed: {type(e).__name__}: {e}") from e
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _comptime_values(kernel: Any, pairs: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as the kernel's comptime values, each VALUE read as the
    kind its parameter declares (a name the kernel lacks is left to the kernel to
    refuse, naming its parameters)."""
    signature = getattr(kernel, "signature", None)
    kinds: dict[str, type] = getattr(signature, "comptime", {})
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise _Refused(f"--comptime takes NAME=VALUE, not {pair!r}")
        # line_size is the launch's own keyword (docs/language.md, "Lines"): an int.
        kind = int if name == LINE_SIZE else kinds.get(name)
        out[name] = _parse_value(name, kind, text)
    return out


def _parse_value(name: str, kind: type | None, text: str) -> object:
    if kind is bool:
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise _Refused(f"comptime `{name}` is a bool: give true or false, not {text!r}")
    if kind in (int, float):
        try:
            return int(text) if kind is int else float(text)
        except ValueError:
            raise _Refused(f"comptime `{name}` is Comptime[{kind.__name__}], not "
                           f"{text!r}") from None
    # A dtype is given by its name ("f32", "float32"), which the kernel accepts as is.
    return text
