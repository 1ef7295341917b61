"""``make mutation``: how much of a wrong backend the conformance suite alone catches.

Each mutant is one small, deliberate fault - an exact piece of text of the cpu
backend (``cubecl_server/backends/cpu/``), of the lowering passes every backend runs
(``cubecl_server/lowering/passes/``) or of the compile path
(``cubecl_server/compiler/``, ``cubecl_server/persistence/``, the client's taint and
the runtime's store) replaced by another - put into a scratch copy of the package.
The copy is then judged by the conformance suite alone, against ``cpu``, the way a
third party runs it (``cubecl-server conformance cpu -x``, its modules in an order
that meets the quick checks first): none of the core's own tests take part. A
mutant is *killed* when the suite fails (or hangs past the timeout), and *survives*
when it passes. Mutants run in parallel, one process each.

    python scripts/mutation.py                 # every mutant, the score, the survivors
    python scripts/mutation.py --only S5 K4    # some of them
    python scripts/mutation.py --list          # what each mutant changes, and why
    python scripts/mutation.py --update-docs   # also rewrite the table in docs/conformance.md

The score and every survivor, with why it is equivalent or why it stays, are kept in
``docs/conformance.md``. Exits 1 when the score is below ``--min-score`` (95%) or a
mutant no longer applies (its text changed: update the list).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cubecl_server"
DOCS = ROOT / "docs" / "conformance.md"
BEGIN, END = "<!-- mutation-results:begin -->", "<!-- mutation-results:end -->"

CPU = "cubecl_server/backends/cpu"
PASSES = "cubecl_server/lowering/passes"


@dataclass(frozen=True)
class Mutant:
    """One fault: in ``file`` (relative to the repository), ``old`` (which must occur
    exactly once) becomes ``new``; ``why`` says what a backend doing this gets wrong,
    and ``equivalent`` (when set) why no conformance test can tell it apart."""

    id: str
    area: str
    file: str
    old: str
    new: str
    why: str
    equivalent: str | None = None


MUTANTS: tuple[Mutant, ...] = (
    # ---------------------------------------------------------------- lowering
    Mutant("L1", "lowering", f"{CPU}/compiler.py",
           'ir.BinOp.SUB: "-"', 'ir.BinOp.SUB: "+"',
           "subtraction lowered as addition"),
    Mutant("L2", "lowering", f"{CPU}/compiler.py",
           '">": "<", ">=": "<="}', '">": "<=", ">=": "<="}',
           "`n > i` mirrored to `i <= n`: one unit too many at the bound"),
    Mutant("L3", "lowering", f"{CPU}/compiler.py",
           'return f"(g.UNIT_POS % np.uint32({PLANE_SIZE}))"',
           'return f"(g.UNIT_POS // np.uint32({PLANE_SIZE}))"',
           "UNIT_POS_PLANE is the plane's number, not the unit's place in it"),
    Mutant("L4", "lowering", f"{CPU}/compiler.py",
           "extra = self.mask if e.lane is None else self.expr(e.lane)",
           'extra = "True" if e.lane is None else self.expr(e.lane)',
           "plane reductions combine inactive units too"),
    Mutant("L5", "lowering", f"{CPU}/compiler.py",
           'self.line(f"{then} = _s.and_({mask}, {cond})")',
           'self.line(f"{then} = _s.and_(True, {cond})")',
           "a then-branch ignores the conditions around it"),
    Mutant("L6", "lowering", f"{CPU}/compiler.py",
           'self.line(f"{other} = _s.andnot({mask}, {cond})", "else:")',
           'self.line(f"{other} = _s.andnot(True, {cond})", "else:")',
           "an else-branch ignores the conditions around it"),
    Mutant("L7", "lowering", f"{PASSES}/logical.py",
           "return not self.native.short_circuit and reads_memory(e.rhs)",
           "return False",
           "`and`/`or` evaluate a right side that loads in the lanes the left side decided"),
    Mutant("L8", "lowering", f"{CPU}/compiler.py",
           'self.line(f"alive = _s.andnot(alive, {self.mask})", "return")',
           'self.line("pass", "return")',
           "a `return` under a branch does not stop the unit"),
    Mutant("L9", "lowering", f"{CPU}/compiler.py",
           "self.line(f\"{py} = _s.{merge}({mask}, {v}, {py})\", text)",
           "self.line(f\"{py} = {v}\", text)",
           "an assignment under a branch happens in every unit"),
    Mutant("L10", "lowering", f"{CPU}/compiler.py",
           "f\"{self.expr(s.index)}, {val}, {mask})\", text)\n"
           "            return\n"
           "        if s.array in self.local_arrays:",
           "f\"{self.expr(s.index)}, {val}, True)\", text)\n"
           "            return\n"
           "        if s.array in self.local_arrays:",
           "a shared-memory store under a branch happens in every unit"),
    Mutant("L11", "loops", f"{CPU}/compiler.py",
           "{self.expr(s.stop)} > {py})\")",
           "{self.expr(s.stop)} >= {py})\")",
           "every `for` runs one iteration too many"),
    Mutant("L12", "loops", f"{PASSES}/loops.py",
           "return (n, k), (base + offset if step > 0 else base - offset).cast(t)",
           "return (n, k), (base + offset).cast(t)",
           "a `for` with a negative step counts up"),
    Mutant("L13", "loops", f"{CPU}/compiler.py",
           '"break")\n        if mask != loop.body:',
           '"break")\n        if False:',
           "a unit that breaks still runs the rest of the iteration"),
    Mutant("L14", "loops", f"{CPU}/compiler.py",
           'self.line(f"{loop.body} = _s.andnot({loop.body}, {mask})", "continue")',
           'self.line("pass", "continue")',
           "a `continue` under a branch does not skip the rest of the iteration"),
    Mutant("L15", "masks and bounds", f"{PASSES}/checked.py",
           "self.emit(zero, ir.If((i < n).e, (ir.Assign(t.name, ir.Load(e.array, i.e, e.type)),),",
           "self.emit(zero, ir.If((i <= n).e, (ir.Assign(t.name, ir.Load(e.array, i.e, e.type)),),",
           "checked mode lets a load at the array's length through"),
    Mutant("L16", "masks and bounds", f"{PASSES}/checked.py",
           "self.emit(ir.If((i < n).e, (ir.Store(s.array, i.e, value),), ()))",
           "self.emit(ir.Store(s.array, i.e, value))",
           "checked mode does not guard stores at computed indices"),
    Mutant("L17", "lowering", f"{CPU}/support.py",
           "return _u32(arr.shape[0])",
           "return _u32(max(arr.shape[0] - 1, 0))",
           "len(a) is one short"),
    Mutant("L18", "lowering", f"{CPU}/compiler.py",
           'return f"{self.expr(e.x)}.astype({_dtype(e.type)})"',
           "return self.expr(e.x)",
           "casts do not convert"),
    Mutant("L19", "lowering", f"{PASSES}/integers.py",
           "return ir.Binary(e.op, e.lhs, (V(b) & (bits - 1)).e, e.type)",
           "return e",
           "shift amounts are not taken modulo the bit width"),
    Mutant("L20", "lowering", f"{CPU}/compiler.py",
           'return f"_s.idiv({a}, {b})" if t.is_signed else f"({a} // {b})"',
           'return f"({a} // {b})"',
           "signed integer division floors instead of truncating"),
    Mutant("L21", "lowering", f"{CPU}/compiler.py",
           "ir.MathFn.MIN: \"np.fmin\"",
           "ir.MathFn.MIN: \"np.minimum\"",
           "min with a NaN operand gives NaN instead of the other operand"),
    Mutant("L22", "lowering", f"{PASSES}/integers.py",
           "low = self.math(ir.Math(M.MAX, args[:2], e.type))\n"
           "            return self.math(ir.Math(M.MIN, (low, args[2]), e.type))",
           "high = self.math(ir.Math(M.MIN, (args[0], args[2]), e.type))\n"
           "            return self.math(ir.Math(M.MAX, (high, args[1]), e.type))",
           "clamp as max(min(x, hi), lo): wrong when lo > hi"),
    Mutant("L23", "lowering", f"{CPU}/compiler.py",
           'return f"({xs[0]} * {xs[1]} + {xs[2]})"', 'return f"({xs[0]} * {xs[1]} - {xs[2]})"',
           "fma subtracts"),
    # ---------------------------------------------------------------- masks and bounds
    Mutant("S1", "masks and bounds", f"{PASSES}/checked.py",
           "return V(self.let(V(self.expr(index)).cast(wide).e, \"i\"))",
           "return V(self.let(self.expr(index), \"i\"))",
           "checked mode lets a signed index below 0 through (NumPy wraps it to the end)"),
    Mutant("S2", "masks and bounds", f"{PASSES}/checked.py",
           "self.emit(ir.If((i < n).e, (inside,), ()))",
           "self.emit(inside)",
           "checked mode does not guard atomics"),
    Mutant("S3", "masks and bounds", f"{PASSES}/checked.py",
           "return const(holder.size, t)",
           "return const(holder.size + 1, t)",
           "checked mode lets a shared or local index reach one element past the array"),
    Mutant("S4", "masks and bounds", f"{CPU}/support.py",
           "np.copyto(dst, v, where=(m if size == 1 else np.repeat(m, size))[:k])",
           "dst[...] = v",
           "a store at ABSOLUTE_POS under a branch happens in every unit"),
    Mutant("S5", "masks and bounds", f"{PASSES}/checked.py",
           "for k in range(size - 1):  # element",
           "for k in range(size - 2):  # element",
           "a checked load of the partial last line reads its last element as 0"),
    Mutant("S6", "masks and bounds", f"{PASSES}/checked.py",
           "(ir.If(i.eq(full).e, partial, ()),)))",
           "())))",
           "a checked store of the partial last line is dropped"),
    Mutant("S7", "masks and bounds", f"{CPU}/support.py",
           "return _norm(c if m is True else m & c)", "return _norm(c)",
           "narrowing a mask forgets the lanes already masked off"),
    Mutant("S8", "masks and bounds", f"{CPU}/support.py",
           "return _norm(np.logical_not(c) if m is True else np.greater(m, c))",
           "return _norm(np.logical_not(c))",
           "an else-mask forgets the lanes already masked off"),
    Mutant("S9", "masks and bounds", f"{CPU}/support.py",
           "return np.where(m, new, old)", "return np.where(m, old, new)",
           "a masked assignment keeps the old value where it should take the new"),
    Mutant("S10", "lowering", f"{CPU}/support.py",
           "return (a - np.fmod(a, b)) // b", "return a // b",
           "signed division floors (Python) instead of truncating (C)"),
    Mutant("S11", "loops", f"{PASSES}/loops.py",
           "count = distance if abs(step) == 1 else (distance - 1) // abs(step) + 1",
           "count = distance if abs(step) == 1 else distance // abs(step)",
           "a `for` whose step does not divide its range misses its last iteration"),
    Mutant("S12", "atomics", f"{CPU}/atomics.py",
           "excl = np.cumsum(w, dtype=mem.dtype) - w", "excl = np.cumsum(w, dtype=mem.dtype)",
           "integer atomic add/sub return the new value, not the old"),
    Mutant("S13", "atomics", f"{CPU}/atomics.py",
           "olds[starts] = mem0", "olds[starts] = v[starts]",
           "the first atomic exchange on an element returns its own value, not the old"),
    Mutant("S14", "atomics", f"{CPU}/atomics.py",
           "final[segs] = np.where(cur == c[at], v[at], cur)",
           "final[segs] = np.where(cur != c[at], v[at], cur)",
           "compare-exchange stores where the comparison fails"),
    Mutant("S15", "atomics", f"{CPU}/atomics.py",
           '"max": np.fmax, "min": np.fmin,', '"max": np.fmin, "min": np.fmin,',
           "atomic max is min"),
    Mutant("S16", "loops", f"{PASSES}/loops.py",
           "n = const(max(0, -(-span // abs(step))), u)",
           "n = const(max(0, span // abs(step)), u)",
           "a `for` with constant bounds whose step does not divide its range misses its "
           "last iteration"),
    Mutant("S17", "masks and bounds", f"{CPU}/planes.py",
           "vm = lanes if m is True else np.where(m, lanes, dtype.type(0))", "vm = lanes",
           "plane_sum adds the inactive units' values"),
    Mutant("S18", "masks and bounds", f"{CPU}/planes.py",
           "vm = lanes if m is True else np.where(m, lanes, _lowest(dtype))",
           "vm = lanes if m is True else np.where(m, lanes, dtype.type(0))",
           "plane_max counts each inactive unit as a 0"),
    Mutant("S19", "lowering", f"{CPU}/support.py",
           "return (self.CUBE_POS // self.CUBE_COUNT_X) % self.CUBE_COUNT_Y",
           "return self.CUBE_POS // self.CUBE_COUNT_X",
           "CUBE_POS_Y of a 3-D grid counts the z layers too"),
    Mutant("S20", "masks and bounds", f"{CPU}/support.py",
           "    if lo < n:\n        out[:n - lo] = arr[lo:]\n    return out if size == 1",
           "    if lo < n:\n"
           "        out[:n - lo - 1] = arr[lo:n - 1]\n"
           "    return out if size == 1",
           "the last element of an array reads 0 when the grid runs past its end"),
    Mutant("S21", "lowering", f"{PASSES}/integers.py",
           "return select(d.eq(0), const(0, a.type), select(d.eq(-1), -x, q)).e",
           "return select(d.eq(0), const(0, a.type), q).e",
           "signed division by -1 at run time gives the dividend"),
    Mutant("A1", "rekeying", f"{CPU}/artifact.py",
           "        return compiled.source.encode()\n",
           "        return compiled.source.encode()[:400]\n",
           "source() returns a prefix: kernels that differ later share a sources-map "
           "entry, and one is served the other's artifact"),
    Mutant("P1", "lowering", f"{PASSES}/integers.py",
           "x = V(self.let(((x + (x >> 4)) & _repeat(0x0F, w)).e, \"c\"))",
           "x = V(self.let((x + (x >> 4)).e, \"c\"))",
           "count_ones lets each byte's nibble sums spill into the next byte"),
    Mutant("P2", "lowering", f"{PASSES}/integers.py",
           "hi = hi - select(xs[0] < 0, b, zero) - select(xs[1] < 0, a, zero)",
           "hi = hi - select(xs[0] < 0, b, zero)",
           "signed mul_hi corrects for a negative first operand only"),
    Mutant("P3", "lowering", f"{PASSES}/integers.py",
           "overflow = signs & (r < 0).ne(a < 0)",
           "overflow = (r < 0).ne(a < 0)",
           "signed saturating arithmetic clamps results that merely change sign"),
    Mutant("P4", "lowering", f"{PASSES}/integers.py",
           "return select(x.eq(0), n + 1, n)  # 0 counts the width",
           "return n",
           "leading_zeros of 0 is one short of the width"),
    Mutant("B1", "lowering", f"{PASSES}/builtins.py",
           "B.CUBE_DIM: self.dim[0] * self.dim[1] * self.dim[2]}",
           "B.CUBE_DIM: self.dim[0] * self.dim[1]}",
           "CUBE_DIM leaves out the cube's z extent"),
    Mutant("M1", "minifloats", f"{PASSES}/minifloats.py",
           "up = (rest > half) | (rest.eq(half) & (q & 1).ne(0))",
           "up = (rest > half) | rest.eq(half)",
           "a conversion to a minifloat rounds ties away from zero, not to even"),
    Mutant("M2", "minifloats", f"{PASSES}/minifloats.py",
           "smallest = 2.0 ** (1 - f.bias - f.mantissa)",
           "smallest = 2.0 ** (-f.bias - f.mantissa)",
           "a minifloat's subnormals widen to half their value"),
    Mutant("M3", "minifloats", f"{PASSES}/minifloats.py",
           "return select(a > 0x7F800000, sign ^ (1 << f.sign), sign | magnitude)",
           "return select(a > 0x7F800000, sign, sign | magnitude)",
           "a NaN converted to a finite-only minifloat keeps its sign, unlike ml_dtypes"),
    Mutant("D1", "printing", f"{CPU}/support.py",
           'return "1" if x else "0"', "return str(bool(x))",
           "a printed bool reads True/False, not 1/0 as the C printf targets print it"),
    Mutant("D2", "printing", f"{CPU}/compiler.py",
           'self.line(f"_s.debug_print(g, {self.mask}, {s.text!r}{values})"',
           'self.line(f"_s.debug_print(g, True, {s.text!r}{values})"',
           "every unit of the chunk prints, those outside the branch around the print too"),
    Mutant("S22", "loops", f"{PASSES}/loops.py",
           "count = (far.cast(u) - near.cast(u) - 1) // size + 1",
           "count = (far.cast(u) - near.cast(u)) // size",
           "a `for` whose step is known at run time only misses its last iteration when "
           "the step does not divide its range"),
    Mutant("U1", "arrays", f"{CPU}/server.py",
           "return Binding(array.reshape(-1).view(np.uint8), 0,",
           "return Binding(array.reshape(-1).view(np.uint8).copy(), 0,",
           "a kernel launched on the caller's array writes a copy of it"),
    # ---------------------------------------------------------------- keys
    Mutant("K1", "keys", "cubecl_server/compiler/key.py",
           "[d.x, d.y, d.z], self.mode.value]", "[d.x, d.y, d.z]]",
           "checked and unchecked artifacts share a key"),
    Mutant("K2", "keys", "cubecl_server/compiler/key.py",
           "[d.x, d.y, d.z], self.mode.value]", "self.mode.value]",
           "artifacts of two cube dims share a key"),
    Mutant("K3", "keys", "cubecl_server/compiler/key.py",
           'f"{artifact.stable()}|{build}"', 'f"{artifact.stable()}"',
           "the build id is not part of the key"),
    Mutant("K4", "keys", "cubecl_server/compiler/key.py",
           "        h.update(path.read_bytes())\n", "        pass\n",
           "the build id hashes the names of the source files, not their content"),
    Mutant("K5", "keys", "cubecl_server/compiler/key.py",
           'files = sorted(root.rglob("*.py"))', 'files = sorted(root.glob("*.py"))',
           "the build id ignores the package's subpackages"),
    Mutant("K6", "keys", "cubecl_server/compiler/key.py",
           'h.update(b"extra:" + extra.encode())', 'h.update(b"extra:")',
           "CUBECL_BUILD_ID does not change the build id"),
    Mutant("K7", "keys", "cubecl_server/compiler/key.py",
           "[list(c) for c in self.kernel.comptime],\n", "",
           "the comptime values are left out of the key",
           equivalent="the kernel's digest already covers them: comptime values are "
                      "baked into the IR it hashes, and ir.Kernel.comptime is one of its "
                      "fields"),
    # ---------------------------------------------------------------- rekeying
    Mutant("R1", "rekeying", "cubecl_server/compiler/loader.py",
           "                store.put(trip.key, artifact)\n", "",
           "a rekeyed artifact is not stored under its new key"),
    Mutant("R2", "rekeying", "cubecl_server/compiler/loader.py",
           "if artifact is not None and earlier == trip.key:", "if artifact is not None:",
           "a reuse under a new key is recorded as a load and not stored"),
    Mutant("R3", "rekeying", "cubecl_server/compiler/loader.py",
           "earlier = store.source(trip.source)", "earlier = None",
           "the sources map is never read: every new build compiles everything again"),
    Mutant("R4", "store", "cubecl_server/compiler/loader.py",
           "            store.purge(trip.key)\n            if trip.rekeyed_from",
           "            pass\n            if trip.rekeyed_from",
           "a stored artifact the target rejects is not purged"),
    Mutant("R5", "lowering", f"{PASSES}/integers.py",
           "return select(bad, const(0, a.type), q).e",
           "return q.e",
           "integer remainder (and unsigned division) by 0 at run time gives x % 1, not 0"),
    Mutant("R6", "store", "cubecl_server/compiler/loader.py",
           "            self._loaded.clear()\n",
           "            pass\n",
           "a switch of environment keeps every loaded kernel"),
    # ---------------------------------------------------------------- the store
    Mutant("ST1", "store", "cubecl_server/compiler/store.py",
           "key.digest[:16], why)\n        self.purge(key)\n",
           "key.digest[:16], why)\n",
           "an artifact found under another key is a miss but is left in the store"),
    Mutant("ST2", "store", "cubecl_server/compiler/store.py",
           "return result not in (None, PutResult.CONFLICT, PutResult.READ_ONLY)",
           "return result not in (None, PutResult.READ_ONLY)",
           "put reports a second, refused value as taken"),
    Mutant("ST3", "store", "cubecl_server/compiler/store.py",
           "if current is not None and self.get(current) is None:",
           "if current is not None:",
           "a sources-map entry is repointed while its artifact is still stored"),
    Mutant("ST4", "store", "cubecl_server/persistence/namespaces.py",
           'return f"{backend}/{version}/{variant.replace(\'/\', \'_\')}/"',
           "return f\"{backend}/{version}/\"",
           "artifacts of one variant are served to another"),
    Mutant("ST5", "store", "cubecl_server/compiler/store.py",
           "cache_key = (str(path), backend, variant, names)",
           "cache_key = (backend, variant, names)",
           "a switch of environment keeps the first environment's store"),
    Mutant("ST6", "store", "cubecl_server/persistence/entries.py",
           "and len(value) == size and checksum(value) == stored_checksum",
           "and len(value) == size",
           "the stored checksum is never checked"),
    Mutant("ST7", "store", "cubecl_server/persistence/entries.py",
           "                if not self._read_only:\n                    self._best_effort(\n"
           '                        "purge"',
           "                if False:\n                    self._best_effort(\n"
           '                        "purge"',
           "a value that fails its checksum is a miss but is left in the store"),
    Mutant("ST8", "store", "cubecl_server/persistence/entries.py",
           "        return PutResult.CONFLICT\n",
           "        conn.execute(_INSERT + _OVERWRITE, args)\n"
           "        return PutResult.INSERTED\n",
           "the last writer wins: a second value replaces the stored one"),
    Mutant("ST9", "store", "cubecl_server/persistence/entries.py",
           '" WHERE namespace = ? AND key = ?", (namespace, key),\n            ).fetchone()\n'
           "            if row is None:\n                return None\n"
           "            value, stored, origin",
           '" WHERE namespace = ? AND substr(key, 1, 32) = substr(?, 1, 32)",'
           " (namespace, key),\n            ).fetchone()\n"
           "            if row is None:\n                return None\n"
           "            value, stored, origin",
           "keys are compared by their first 32 characters",
           equivalent="for every key the compile path makes: a row found under another "
                      "key is refused by the envelope's binding (a miss, as it should "
                      "be); only two SHA-256 keys sharing their first 128 bits would "
                      "turn a hit into a needless miss"),
    Mutant("ST10", "store", "cubecl_server/persistence/codec.py",
           'if (obj["namespace"], obj["key"]) != (namespace, key):',
           'if obj["namespace"] != namespace:',
           "an artifact copied under another key of its namespace decodes there"),
    Mutant("ST11", "store", "cubecl_server/persistence/environment.py",
           "        _switched_to = name\n        _generation += 1",
           "        _switched_to = name",
           "a switch of environment does not tell the tuners: they keep the winners of the "
           "environment they left"),
    Mutant("ST12", "store", "cubecl_server/runtime.py",
           "store = None if first is None else EnvironmentStore(first, descriptor.name, "
           "variant, names)",
           "store = first",
           "a target's store stays in the environment it was made in"),
    # ---------------------------------------------------------------- taint
    Mutant("T1", "taint", "cubecl_server/client.py",
           "            for i in plan.writes:\n"
           "                handles[i].taint = taint\n"
           "            return",
           "            return",
           "a launch that reads a tainted buffer does not pass the taint on"),
    Mutant("T2", "taint", "cubecl_server/client.py",
           "        self._counters.bytes_written += command.binding.size\n"
           "        handle.taint = None\n",
           "        self._counters.bytes_written += command.binding.size\n",
           "a write does not clear the taint"),
    Mutant("T3", "taint", "cubecl_server/client.py",
           "            h = handles[i]\n            h.taint = None\n",
           "            h = handles[i]\n",
           "a launch that rewrites a tainted buffer leaves it tainted"),
    Mutant("T4", "taint", "cubecl_server/client.py",
           "for i in plan.reads:\n"
           "            taint = handles[i].taint\n"
           "            if taint is not None:\n"
           "                causes = [t for t in (handles[j].taint for j in plan.reads) "
           "if t is not None]",
           "for i in range(len(handles)):\n"
           "            taint = handles[i].taint\n"
           "            if taint is not None:\n"
           "                causes = [t for t in (h.taint for h in handles) if t is not None]",
           "a tainted buffer the kernel only writes stops the launch"),
    Mutant("T5", "taint", "cubecl_server/compiler/loader.py",
           "if store is not None and trip.stored:", "if False:",
           "a fresh artifact the device rejects stays in the store"),
)


@dataclass
class Result:
    """What the suite made of one mutant."""

    mutant: Mutant
    outcome: str
    """killed, survived, timeout (counted as killed) or stale (the text is gone)."""
    seconds: float
    killer: str = ""
    """The first test that failed, with its message."""


def _copy_package(dest: Path) -> Path:
    """A scratch copy of the core package under ``dest``; returns ``dest``."""
    shutil.copytree(ROOT / PACKAGE, dest / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _apply(work: Path, m: Mutant) -> str | None:
    """Put ``m`` into the copy under ``work``; why it cannot be, or None."""
    path = work / m.file
    text = path.read_text()
    found = text.count(m.old)
    if found != 1:
        return f"the text to replace occurs {found} times in {m.file}, expected once"
    path.write_text(text.replace(m.old, m.new))
    return None


_FAILED = re.compile(r"^(?:FAILED|ERROR) \S*?suite/(\S+)", re.M)
_LINE = re.compile(r"^\S+\.py:\d+: (.*)$", re.M)


FIRST = ("test_smoke.py", "test_semantics.py", "test_kernels.py", "test_language.py",
         "test_errors.py", "test_bad_input.py", "test_memory.py", "test_compile_only.py",
         "test_store.py")
"""Suite modules in the order a mutant meets them: the quick ones that catch the most
first, so that with ``-x`` a killed mutant costs seconds; the rest (the compile path's
fresh processes) after them. Every module of the suite runs."""


def suite_modules(suite: Path) -> list[Path]:
    """Every module of the suite, :data:`FIRST` first."""
    found = sorted(suite.glob("test_*.py"))
    rank = {name: i for i, name in enumerate(FIRST)}
    return sorted(found, key=lambda p: rank.get(p.name, len(FIRST)))


def _judge(work: Path, timeout: float) -> tuple[str, str]:
    """Run the suite alone against cpu on the copy under ``work``: (outcome, killer)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUBECL_")}
    env.update(PYTHONPATH=str(work), CUBECL_CACHE_DIR=str(work / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    conformance = work / PACKAGE / "conformance"
    # As `cubecl-server conformance cpu` runs it (the suite's own ini, its plugin), with
    # the modules named in an order; stopped at the first failure.
    cmd = [sys.executable, "-m", "pytest", "-c", str(conformance / "pytest.ini"),
           "--rootdir", str(conformance), "-p", "no:cacheprovider",
           "-p", "cubecl_server.conformance", "--cubecl-backend", "cpu",
           *map(str, suite_modules(conformance / "suite")),
           "-x", "-q", "-rfE", "--tb=line"]
    # Its own session, so that a hang is stopped with every process it started.
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", f"the suite did not finish in {timeout:.0f} s"
    if proc.returncode == 0:
        return "survived", ""
    test, line = _FAILED.search(out), _LINE.findall(out)
    if test is None:
        tail = out.strip().splitlines()
        return "killed", (tail[-1] if tail else f"exit {proc.returncode}")[:300]
    # --tb=line gives one line per failure: the exception and its first line.
    return "killed", f"{test.group(1)}: {line[-1] if line else ''}"[:300]


def run_one(m: Mutant | None, timeout: float) -> Result:
    """Judge one mutant (None: the unchanged copy) in a scratch directory of its own."""
    start = time.monotonic()
    base = Mutant("base", "-", "-", "", "", "the unchanged package")
    with tempfile.TemporaryDirectory(prefix="cubecl-mutant-") as tmp:
        work = _copy_package(Path(tmp))
        if m is not None:
            stale = _apply(work, m)
            if stale is not None:
                return Result(m, "stale", time.monotonic() - start, stale)
        outcome, killer = _judge(work, timeout)
    return Result(m or base, outcome, time.monotonic() - start, killer)


def _score(results: Sequence[Result]) -> tuple[int, int]:
    judged = [r for r in results if r.outcome != "stale"]
    return sum(r.outcome in ("killed", "timeout") for r in judged), len(judged)


def markdown(results: Sequence[Result]) -> str:
    """The results as the table docs/conformance.md keeps."""
    killed, judged = _score(results)
    lines = [f"Score: **{killed} of {judged} killed ({100 * killed / max(judged, 1):.0f}%)** "
             "by the suite alone against `cpu`.", "",
             "| mutant | area | fault | outcome | first failing test |",
             "|---|---|---|---|---|"]
    for r in results:
        # Seeds differ from run to run: the table keeps what the failure said.
        killer = re.sub(r" ?\(seed \d+\)", "", r.killer).replace("|", "\\|")
        outcome = r.outcome
        if r.outcome == "survived" and r.mutant.equivalent:
            outcome = "survived (equivalent)"
        lines.append(f"| {r.mutant.id} | {r.mutant.area} | {r.mutant.why} | {outcome} | "
                     f"{killer} |")
    return "\n".join(lines)


def _update_docs(results: Sequence[Result]) -> None:
    text = DOCS.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOCS.write_text(text[:start] + "\n" + markdown(results) + "\n" + text[end:])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the mutants and report; the exit status says whether the score is met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                        help="mutants judged at once (default: the CPU count)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one run of the suite may take (a hang is a kill)")
    parser.add_argument("--min-score", type=float, default=95.0,
                        help="the percentage killed below which the run fails")
    parser.add_argument("--update-docs", action="store_true",
                        help=f"rewrite the results table in {DOCS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.id in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.id:5} {m.area:17} {m.file}: {m.why}")
        return 0
    print(f"judging the unchanged package, then {len(chosen)} mutants, {args.jobs} at a "
          "time, by the conformance suite alone against cpu", flush=True)
    base = run_one(None, args.timeout)
    if base.outcome != "survived":
        print(f"the suite fails on the unchanged package ({base.killer}): fix that first")
        return 1
    print(f"unchanged package: passes in {base.seconds:.0f} s", flush=True)

    def one(m: Mutant) -> Result:
        r = run_one(m, args.timeout)
        print(f"{m.id:5} {r.outcome:8} {r.seconds:5.0f} s  {m.why}"
              + (f"\n        by {r.killer}" if r.killer else ""), flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, chosen))
    killed, judged = _score(results)
    print()
    print(markdown(results))
    survivors = [r for r in results if r.outcome == "survived"]
    stale = [r for r in results if r.outcome == "stale"]
    for r in survivors:
        note = f"equivalent: {r.mutant.equivalent}" if r.mutant.equivalent else "stays"
        print(f"survivor {r.mutant.id}: {r.mutant.why} ({note})")
    for r in stale:
        print(f"stale {r.mutant.id}: {r.killer}")
    if args.update_docs:
        _update_docs(results)
    score = 100 * killed / max(judged, 1)
    print(f"\nscore: {killed} of {judged} killed ({score:.1f}%), "
          f"{len(survivors)} survived, {len(stale)} stale")
    return 0 if score >= args.min_score and not stale else 1


if __name__ == "__main__":
    sys.exit(main())
