"""The IR cache: a fresh process takes a kernel's IR from the store instead of parsing
it, and anything the frontend read that changes between processes is a new key.

The processes are real: each runs the kernels of a module written here, on the cpu
backend, against NumPy on fresh data whose length does not divide the cube size, and
says which kernels the frontend parsed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import math
import os
import pkgutil
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.processes import last_json_line, run_python

import cubecl_server.lang.frontend as frontend
from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.compiler.store import environment_database
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, KernelFunction, f32, kernel
from cubecl_server.lang.frontend import parse_kernel
from cubecl_server.lang.ircache import NAMESPACE, language_sources, language_version
from cubecl_server.lang.reads import Reads, fingerprint, resolve
from cubecl_server.persistence.codec import decode_artifact, encode_artifact

_MODULE = '''
import enum

from cubecl_server.lang import (ABSOLUTE_POS, Array, Comptime, Line, cube_fn, f32, i32,
                                kernel, line_size)

SCALE = {scale}
DT = {dt}


@cube_fn
def bump(v: f32) -> f32:
    return v + {add}


@kernel
def uses_global(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * SCALE


@kernel
def uses_helper(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = bump(x[i])


@kernel
def uses_dtype(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = f32(DT(x[i]))


@kernel
def uses_comptime(x: Array[f32], out: Array[f32], *, N: Comptime[int]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * N


@kernel
def uses_lines(x: Array[Line[f32]], out: Array[Line[f32]]):
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * f32(line_size(x))


class Op(enum.Enum):
    ADD = "add"
    SUB = "sub"


@kernel
def uses_enum(x: Array[f32], out: Array[f32], *, OP: Comptime[Op]):
    i = ABSOLUTE_POS
    if i < len(out):
        if OP == Op.ADD:
            out[i] = x[i] + 1.0
        else:
            out[i] = x[i] - 1.0


def make(k):
    @kernel
    def uses_closure(x: Array[f32], out: Array[f32]):
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = x[i] + k
    return uses_closure
'''

# Runs every kernel of the module with the settings in argv[2]; prints, per kernel,
# whether the frontend parsed it, whether the result matched NumPy, and its digest.
_RUN = '''
import importlib.util, json, sys
import numpy as np
import cubecl_server.lang.frontend as frontend
from cubecl_server.client import create_client

parsed = []
real = frontend.parse_kernel
def counting(fn, *args, **kwargs):
    parsed.append(fn.__name__)
    return real(fn, *args, **kwargs)
frontend.parse_kernel = counting

spec = importlib.util.spec_from_file_location("kmod", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules["kmod"] = mod
spec.loader.exec_module(mod)
v = json.loads(sys.argv[2])
c = create_client("cpu")
n = 1001
x = np.random.default_rng().uniform(-8, 8, n).astype(np.float32)
x[:4] = [0.0, -0.5, 2.75, -3.999]
dt = np.int32 if v["dt"] == "i32" else np.float32
runs = {
    "uses_global": (mod.uses_global, {}, x * np.float32(v["scale"])),
    "uses_helper": (mod.uses_helper, {}, x + np.float32(v["add"])),
    "uses_dtype": (mod.uses_dtype, {}, x.astype(dt).astype(np.float32)),
    "uses_comptime": (mod.uses_comptime, {"N": v["n"]}, x * np.float32(v["n"])),
    "uses_lines": (mod.uses_lines, {"line_size": v["line"]}, x * np.float32(v["line"])),
    "uses_closure": (mod.make(v["k"]), {}, x + np.float32(v["k"])),
    "uses_enum": (mod.uses_enum, {"OP": mod.Op[v["op"]]},
                  x + np.float32(1 if v["op"] == "ADD" else -1)),
}
out = {}
for name, (k, comptime, want) in runs.items():
    hx, ho = c.create(x), c.empty(n, np.float32)
    k.launch(c, -(-n // 64), 64, hx, ho, **comptime)
    got = c.read(ho)
    out[name] = {"ok": bool(np.allclose(got, want, rtol=1e-6)),
                 "digest": k.kernel_id(comptime).digest}
print(json.dumps({"parsed": sorted(set(parsed)), "kernels": out}))
'''

_FIRST = {"scale": 2.5, "dt": "f32", "add": 1.25, "n": 2, "line": 4, "k": 0.5, "op": "ADD"}
_CHANGED = {"scale": -3.0, "dt": "i32", "add": 7.0, "n": 3, "line": 2, "k": 1.5,
            "op": "SUB"}
_KERNELS = ["uses_closure", "uses_comptime", "uses_dtype", "uses_enum", "uses_global",
            "uses_helper", "uses_lines"]


_WRITES = itertools.count(1)


def _write(path: Path, v: dict[str, Any]) -> None:
    path.write_text(_MODULE.format(scale=v["scale"], dt=v["dt"], add=v["add"]))
    # Python reuses a module's bytecode while its source keeps its size and whole-second
    # mtime: the two versions here have the same length, and a rewrite within the
    # second would run the other version's code. Each write is dated a step later.
    later = int(path.stat().st_mtime) + 2 * next(_WRITES)
    os.utime(path, (later, later))



def _run(path: Path, v: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = last_json_line(run_python(
        f"import sys; sys.argv = ['run', {str(path)!r}, {json.dumps(json.dumps(v))}]\n"
        + _RUN))
    bad = [k for k, r in answer["kernels"].items() if not r["ok"]]
    assert not bad, f"wrong results from {bad} with {v}"
    return answer


def test_each_thing_the_frontend_read_keys_the_stored_ir(tmp_path: Path) -> None:
    module = tmp_path / "kmod.py"
    _write(module, _FIRST)
    first = _run(module, _FIRST)
    assert first["parsed"] == _KERNELS
    # A fresh process with nothing changed runs every kernel without the frontend.
    again = _run(module, _FIRST)
    assert again["parsed"] == []
    assert again["kernels"] == first["kernels"]
    # A new global constant, helper body, module-level dtype, comptime value (an enum
    # member too), line size and closure value: every kernel is parsed again and runs with its new
    # meaning (the results are checked against NumPy in the process).
    _write(module, _CHANGED)
    changed = _run(module, _CHANGED)
    assert changed["parsed"] == _KERNELS
    assert all(changed["kernels"][k]["digest"] != first["kernels"][k]["digest"]
               for k in _KERNELS)
    # What was stored first is still there (entries are never overwritten), under
    # keys of its own.
    _write(module, _FIRST)
    back = _run(module, _FIRST)
    assert back["parsed"] == []
    assert back["kernels"] == first["kernels"]


@kernel
def _axpb(x: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * 3.0 + 1.0


def _rows() -> list[tuple[str, bytes]]:
    with sqlite3.connect(environment_database()) as conn:
        return conn.execute("SELECT key, value FROM entries WHERE namespace = ?",
                            (NAMESPACE,)).fetchall()


def test_the_stored_ir_is_the_parsed_ir(tmp_path: Path) -> None:
    parsed = kernel(_axpb.fn).ir()  # a new KernelFunction: parsed here, whatever ran before
    (link, end) = sorted(_rows(), key=lambda r: b"ir-kernel" in r[1])
    assert b"ir-reads" in link[1]
    text = ir.to_json(parsed)
    assert text.encode() in end[1]
    loaded = ir.kernel_from_json(text, parsed.loc)
    assert loaded == parsed and loaded.digest == parsed.digest
    assert loaded.array_access == parsed.array_access == (frozenset({"x"}),
                                                         frozenset({"out"}))


def test_a_kernel_from_the_store_brings_what_a_launch_checks() -> None:
    # The element types and the arrays read and written come with the entry, so a
    # warm process checks a launch against the device without walking the IR.
    parsed = kernel(_axpb.fn).ir()
    stored = kernel(_axpb.fn).ir()
    assert {"elems", "array_access"} <= stored.__dict__.keys()
    walked = ir.kernel_from_json(ir.to_json(parsed))
    assert "elems" not in walked.__dict__
    assert stored.elems == walked.elems == parsed.elems
    assert {ir.Elem.F32, ir.Elem.U32} <= stored.elems


def _launch(c: ComputeClient) -> KernelFunction:
    """Launch a new KernelFunction of ``_axpb`` (which asks the store, as a fresh process
    would) on fresh data, and check the result against NumPy."""
    k = kernel(_axpb.fn)
    x = np.random.default_rng().standard_normal(300).astype(np.float32)
    hx, ho = c.create(x), c.empty(300, np.float32)
    k.launch(c, 5, 64, hx, ho)
    assert np.allclose(c.read(ho), x * np.float32(3.0) + np.float32(1.0), rtol=1e-6)
    return k


_LOAD_X = ('{"node":"Load","array":"x","index":{"node":"Var","name":"i","type":{"enum":'
           '"Elem","v":"u32"}},"type":{"enum":"Elem","v":"f32"}}')
_THREE = '{"float":"0x1.8000000000000p+1"}'
_STORE = '"node":"Store","array":"out","index":{"node":"Var","name":"i"'


def _neg(x: str) -> str:
    return ('{"node":"Unary","op":{"enum":"UnOp","v":"-"},"x":' + x
            + ',"type":{"enum":"Elem","v":"f32"}}')


_FORGERIES = {
    # What a forged row may hold: each is a well-formed envelope, rightly bound.
    "bad json": lambda text: "{]",
    "other kernel": lambda text: ir.to_json(_other.ir()),
    "deep nesting": lambda text: text.replace('"orelse":[]',
                                              '"orelse":' + "[" * 100_000 + "]" * 100_000),
    "deep unary chain": lambda text: text.replace(_LOAD_X, _deep_negation(5000), 1),
    "huge integer": lambda text: text.replace(_THREE, "9" * 4000),
    "string constant": lambda text: text.replace(_THREE, '"3"'),
    "wrong shape": lambda text: text.replace('"orelse":[]', '"orelse":{"node":"Kernel"}'),
    "index as string": lambda text: text.replace(
        _STORE + ',"type":{"enum":"Elem","v":"u32"}}', '"node":"Store","array":"out","index":"i"'),
    "unknown array": lambda text: text.replace(_STORE, _STORE.replace('"out"', '"nope"')),
    "endless while": lambda text: _around_store(
        text, '{"node":"While","cond":' + _const("true", "bool") + ',"body":[', "]}"),
    "unrolled 4e9 times": lambda text: _around_store(
        text, '{"node":"For","var":"i","start":' + _const("0", "u32") + ',"stop":'
        + _const("4000000000", "u32") + ',"step":' + _const("1", "u32") + ',"body":[',
        '],"unroll":true}'),
}


def _const(value: str, elem: str) -> str:
    return f'{{"node":"Const","value":{value},"type":{{"enum":"Elem","v":"{elem}"}}}}'


def _around_store(text: str, before: str, after: str) -> str:
    """``text`` with the kernel's one store inside the statement ``before`` opens and
    ``after`` closes."""
    return text.replace('"then":[', '"then":[' + before, 1).replace(
        '],"orelse":[]', after + '],"orelse":[]', 1)


def _deep_negation(depth: int) -> str:
    """x[i] under ``depth`` negations (an even number: the value is unchanged)."""
    text = _LOAD_X
    for _ in range(depth):
        text = _neg(text)
    return text


@pytest.mark.parametrize("damage", ["garbage", *_FORGERIES])
def test_a_damaged_entry_is_purged_and_the_kernel_parsed_again(
        damage: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    parsed: list[str] = []
    real = frontend.parse_kernel
    monkeypatch.setattr(frontend, "parse_kernel",
                        lambda fn, *a, **k: parsed.append(fn.__name__) or real(fn, *a, **k))
    c = create_client("cpu")
    first = _launch(c).ir()
    warm = _launch(c).ir()
    assert parsed == ["_axpb"]
    assert warm == first and warm.loc == first.loc and warm.digest == first.digest
    ((key, value),) = [r for r in _rows() if b"ir-kernel" in r[1]]
    if damage == "garbage":
        new = b"\x00" * len(value)
    else:
        # A well-formed, rightly bound envelope holding the wrong thing.
        d = decode_artifact(value, namespace=NAMESPACE, key=key)
        forged = _FORGERIES[damage](d.payload.decode())
        assert forged != d.payload.decode()
        new = encode_artifact(d.kind, d.header, forged.encode(), namespace=NAMESPACE, key=key)
    with sqlite3.connect(environment_database()) as conn:
        conn.execute("UPDATE entries SET value = ?, checksum = ?, size = ? WHERE key = ?",
                     (new, hashlib.sha256(new).hexdigest(), len(new), key))
    _launch(c)
    assert parsed.count("_axpb") == 2  # purged, parsed and stored again
    assert f"stored IR {key[:16]} rejected" in caplog.text
    _launch(c)
    assert parsed.count("_axpb") == 2


@kernel
def _other(x: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i]


def test_no_cache_means_nothing_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    from cubecl_server.config import reload_config

    monkeypatch.setenv("CUBECL_COMPILATION_CACHE", "false")
    reload_config()
    c = create_client("cpu")
    x = np.arange(100, dtype=np.float32)
    hx, ho = c.create(x), c.empty(100, np.float32)
    kernel(_other.fn).launch(c, CubeCount(2), CubeDim(64), hx, ho)
    assert (c.read(ho) == x).all()
    assert not environment_database().exists() or _rows() == []
    monkeypatch.delenv("CUBECL_COMPILATION_CACHE")
    reload_config()
    kernel(_other.fn).ir()
    assert len(_rows()) == 2


def test_reads_name_helpers_scopes_and_module_attributes(tmp_path: Path) -> None:
    module = tmp_path / "nested_kernels.py"
    module.write_text(textwrap.dedent('''
        import math
        from cubecl_server.lang import ABSOLUTE_POS, Array, cube_fn, f32, kernel

        OFFSET = 2

        @cube_fn
        def shift(v: "f32") -> f32:
            return v + OFFSET + math.pi

        @kernel
        def nested(x: Array[f32], out: Array[f32]):
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = shift(x[i])
    '''))
    spec = importlib.util.spec_from_file_location("nested_kernels", module)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    reads = Reads()
    parse_kernel(mod.nested.fn, reads=reads)
    assert reads.keyable
    found = reads.found
    assert ("OFFSET",) not in found  # the kernel itself never names it
    assert found[("shift", "OFFSET")] == "int:2"
    assert found[("shift", "math")] == "module:math"
    assert found[("shift", "math", "pi")] == f"float:{math.pi.hex()}"
    assert found[("shift", "f32")] == "lang:f32"  # from the string annotation
    assert found[("ABSOLUTE_POS",)] == "lang:ABSOLUTE_POS"
    assert found[("len",)] == "builtin:len"
    assert found[("shift",)].startswith("cube_fn:")
    for path, fp in found.items():
        assert fingerprint(resolve(mod.nested.fn, path)) == fp
    mod.OFFSET = 3
    assert fingerprint(resolve(mod.nested.fn, ("shift", "OFFSET"))) == "int:3"


_AXPB_MODULE = '''
from cubecl_server.lang import ABSOLUTE_POS, Array, f32, kernel

@kernel
def _axpb(x: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * 3.0 + 1.0
'''

# Launches the module's _axpb on the backend in argv[2]; prints whether the result
# matched NumPy and whether the frontend parsed the kernel.
_AXPB_RUN = '''
import importlib.util, json, sys
import numpy as np
import cubecl_server.lang.frontend as frontend
from cubecl_server.client import create_client

parsed = []
real = frontend.parse_kernel
frontend.parse_kernel = lambda fn, *a, **k: parsed.append(fn.__name__) or real(fn, *a, **k)
spec = importlib.util.spec_from_file_location("axpb", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
c = create_client(sys.argv[2])
x = np.random.default_rng().standard_normal(300).astype(np.float32)
hx, ho = c.create(x), c.empty(300, np.float32)
mod._axpb.launch(c, 5, 64, hx, ho)
# atol: a device may fuse the multiply and add (x near -1/3 ends near zero).
ok = bool(np.allclose(c.read(ho), x * np.float32(3.0) + np.float32(1.0), rtol=1e-6,
                      atol=1e-6))
print(json.dumps({"ok": ok, "parsed": bool(parsed)}))
'''


@pytest.mark.parametrize("damage", ["deep nesting", "huge integer", "unknown array",
                                    "endless while"])
def test_a_forged_row_costs_one_warning_in_the_next_process_and_none_after(
        damage: str, tmp_path: Path) -> None:
    # The stored IR is the frontend's, read before any backend sees the kernel: one
    # backend shows the bound (the compile path's trust is tested per backend).
    backend = "cpu"
    module = tmp_path / "axpb.py"
    module.write_text(_AXPB_MODULE)
    env = {"CUBECL_CACHE_DIR": str(tmp_path / "cache")}

    def run() -> tuple[dict[str, Any], list[str]]:
        proc = run_python(f"import sys; sys.argv = ['run', {str(module)!r}, {backend!r}]\n"
                          + _AXPB_RUN, env=env, timeout=120)
        return last_json_line(proc), [line for line in proc.stderr.splitlines()
                                      if "stored IR" in line]

    assert run() == ({"ok": True, "parsed": True}, [])
    db = next((tmp_path / "cache").rglob("cubecl.sqlite3"))
    with sqlite3.connect(db) as conn:
        ((key, value),) = [r for r in conn.execute(
            "SELECT key, value FROM entries WHERE namespace = ?", (NAMESPACE,))
            if b"ir-kernel" in r[1]]
        d = decode_artifact(value, namespace=NAMESPACE, key=key)
        new = encode_artifact(d.kind, d.header, _FORGERIES[damage](d.payload.decode()).encode(),
                              namespace=NAMESPACE, key=key)
        conn.execute("UPDATE entries SET value = ?, checksum = ?, size = ? WHERE key = ?",
                     (new, hashlib.sha256(new).hexdigest(), len(new), key))
    report, warnings = run()
    assert report == {"ok": True, "parsed": True} and len(warnings) == 1, (report, warnings)
    assert f"stored IR {key[:16]} rejected" in warnings[0]
    assert run() == ({"ok": True, "parsed": False}, [])


def test_a_kernel_deeper_than_a_stored_one_may_be_is_not_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # 250 additions in a row: a left-deep tree the frontend parses, deeper than
    # ir.MAX_KERNEL_DEPTH. Stored, it would be purged by every process that read it.
    module = tmp_path / "deepk.py"
    module.write_text(_AXPB_MODULE.replace("x[i] * 3.0 + 1.0", " + ".join(["x[i]"] * 250)))
    spec = importlib.util.spec_from_file_location("deepk", module)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    parsed: list[str] = []
    real = frontend.parse_kernel
    monkeypatch.setattr(frontend, "parse_kernel",
                        lambda fn, *a, **k: parsed.append(fn.__name__) or real(fn, *a, **k))
    assert kernel(mod._axpb.fn).ir() == kernel(mod._axpb.fn).ir()
    assert parsed == ["_axpb", "_axpb"] and _rows() == []
    assert "stored IR" not in caplog.text


def test_stored_ir_a_backend_cannot_compile_is_purged_and_parsed_again(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from cubecl_server.errors import TaintedBufferError

    parsed: list[str] = []
    real = frontend.parse_kernel
    monkeypatch.setattr(frontend, "parse_kernel",
                        lambda fn, *a, **k: parsed.append(fn.__name__) or real(fn, *a, **k))
    c = create_client("cpu")
    _launch(c)
    ((key, value),) = [r for r in _rows() if b"ir-kernel" in r[1]]
    # Sound IR that obeys every rule, yet this backend fails on it (as a backend with
    # a bug would): the stored kernel must not fail every launch in every process.
    d = decode_artifact(value, namespace=NAMESPACE, key=key)
    forged = d.payload.decode().replace(_THREE, '{"float":"0x1.4000000000000p+2"}')
    new = encode_artifact(d.kind, d.header, forged.encode(), namespace=NAMESPACE, key=key)
    with sqlite3.connect(environment_database()) as conn:
        conn.execute("UPDATE entries SET value = ?, checksum = ?, size = ? WHERE key = ?",
                     (new, hashlib.sha256(new).hexdigest(), len(new), key))
    compiler = c.loader.artifact_compiler
    lower = compiler.lower

    def failing(kernel: ir.Kernel, *args: Any) -> Any:
        if "0x1.4000000000000p+2" in ir.to_json(kernel):
            raise RuntimeError("this backend cannot compile 5.0")
        return lower(kernel, *args)

    monkeypatch.setattr(compiler, "lower", failing)
    k = kernel(_axpb.fn)
    x = np.arange(300, dtype=np.float32)
    hx, ho = c.create(x), c.empty(300, np.float32)
    k.launch(c, 5, 64, hx, ho)  # fails on the device side: a tainted output, no raise
    with pytest.raises(TaintedBufferError, match=r"cannot compile 5\.0"):
        c.read(ho)
    warnings = [r.getMessage() for r in caplog.records if "stored IR" in r.getMessage()]
    assert len(warnings) == 1 and "cpu cannot compile it" in warnings[0], warnings
    # Purged: the next process (a new function here) parses it again and stores the
    # kernel the frontend makes, which the one after it loads.
    _launch(c)
    assert parsed == ["_axpb", "_axpb"]
    _launch(c)
    assert parsed == ["_axpb", "_axpb"]
    assert len([r for r in caplog.records if "stored IR" in r.getMessage()]) == 1


def test_a_change_to_any_module_of_the_language_or_the_ir_is_a_new_language_version(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every first key hashes the language version: IR kept from before a change to the
    frontend or to the IR's definition - any of its modules - is never served after it."""
    packages = [ir, importlib.import_module("cubecl_server.lang")]
    modules = [importlib.import_module(m.name) for package in packages
               for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    files = {Path(str(m.__file__)) for m in [*packages, *modules]}
    assert len([f for f in files if f.parent.name == "ir"]) > 1  # the IR is a package
    assert files <= set(language_sources())
    before = language_version.__wrapped__()
    read = Path.read_bytes
    for changed in sorted(files):
        monkeypatch.setattr(Path, "read_bytes",
                            lambda self, c=changed: read(self) + (b"#" if self == c else b""))
        assert language_version.__wrapped__() != before, changed
    monkeypatch.setattr(Path, "read_bytes", read)
    assert language_version.__wrapped__() == before
