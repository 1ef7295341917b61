"""Group 3, against the peers' caches: the time to a first result in a fresh process, step
by step. On opencl, a saxpy written directly with PyOpenCL and cached by PoCL's own kernel
cache; on vulkan, a saxpy written in WGSL and run with wgpu-py on the same lavapipe. Ours
with the driver's cache off and on, from an empty and from a warm store. On the host, the
native llvm backend beside the NumPy cpu one, each from an empty and a warm store."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.figures import Figure, Target, fmt_ratio, fmt_summary, fmt_time
from benchmarks.harness import Context
from benchmarks.opencl_raw import pyopencl_available
from benchmarks.wgpu_raw import ENV as WGPU_ENV
from cubecl_server.benchmark import Summary, ratio, summarize

__all__ = ["run"]

STEPS = ("imports", "discovery", "client", "kernel IR", "kernel", "buffers", "launch", "read")
"""The steps of a first result, in order; a peer has no discovery and no IR."""


@dataclass(frozen=True)
class _Run:
    """One fresh process of a repeat: its row (empty: untimed), command and variables."""

    label: str
    command: str
    env: dict[str, str]
    backend: str = ""  # another backend than the figure's


@dataclass
class _Rows:
    """Every row's samples: the whole time and each step's, and our outcomes."""

    total: dict[str, list[float]]
    steps: dict[str, dict[str, list[float]]]
    outcomes: dict[str, set[str]]
    notes: set[str]


def _bytecode(ctx: Context) -> dict[str, str]:
    """Variables under which every process finds the bytecode of every module it imports,
    as an installed package has: written by a first, untimed process into a scratch
    prefix (without it, an editable install under PYTHONDONTWRITEBYTECODE compiles our
    sources in every process while the peers' packages load theirs)."""
    return {"PYTHONPYCACHEPREFIX": str(ctx.fresh_dir("pycache")), "PYTHONDONTWRITEBYTECODE": ""}


def _measure(ctx: Context, backend: str, repeat: Callable[[], list[_Run]],
             repeats: tuple[int, int] = (2, 5)) -> _Rows:
    """Run each repeat's processes in order (``repeats``: how many, quick and full) and
    collect their answers."""
    rows = _Rows({}, {}, {}, set())
    pyc = _bytecode(ctx)
    for r in repeat():  # untimed, in directories of its own: writes the bytecode
        ctx.worker(r.command, {"backend": r.backend or backend}, {**r.env, **pyc})
    for _ in range(ctx.repeat(*repeats)):
        for r in repeat():
            answer = ctx.worker(r.command, {"backend": r.backend or backend},
                                {**r.env, **pyc})
            if not r.label:
                continue
            rows.total.setdefault(r.label, []).append(answer["seconds"])
            for step, seconds in answer["steps"].items():
                rows.steps.setdefault(r.label, {}).setdefault(step, []).append(seconds)
            rows.outcomes.setdefault(r.label, set()).add(answer.get("outcome", "-"))
            if "adapter" in answer:
                rows.notes.add(f"wgpu ran on {answer['adapter']}.")
    return rows


def _figure(backend: str, rows: _Rows, names: tuple[tuple[str, str], ...], peer: str,
            measured: str, peer_name: str) -> Figure:
    """The table of every row: each step's median, the whole time, its ratio to ``peer``."""
    got: dict[str, Summary] = {k: summarize(v) for k, v in rows.total.items()}
    fig = Figure(
        3, "First result in a fresh process", backend, measured=measured,
        not_measured="the interpreter's own start-up (the same for every row)",
        columns=["configuration", *STEPS, "first result: median [IQR]",
                 f"ratio to {peer_name}", "our outcome"])
    for label, text in names:
        if label not in got:
            continue
        steps = rows.steps[label]
        cells = [fmt_time(summarize(steps[s]).median) if s in steps else "-" for s in STEPS]
        fig.rows.append([text, *cells, fmt_summary(got[label]),
                         fmt_ratio(ratio(got[label], got[peer])),
                         "/".join(sorted(rows.outcomes[label]))])
    fig.notes += sorted(rows.notes)
    return fig


_STEP_TEXT = (
    "Steps (each a median over the repeats, so they need not add up to the whole): "
    "imports (NumPy, the package, the kernel's module; for a peer, its API's module); "
    "discovery (entry points read, every installed plugin loaded: ours only); client "
    "(ours: runtime, device, server, store; a peer's context or device); kernel IR (the "
    "frontend's parse: ours only); kernel (built, or read from a cache and loaded); "
    "buffers (inputs made and copied in, output allocated); launch (enqueued); read "
    "(waits for the launch, copies the result back). Every process finds the bytecode of "
    "the modules it imports, as an installed package has (a first, untimed round writes "
    "it into a scratch `PYTHONPYCACHEPREFIX`). Each repeat uses new driver-cache and "
    "store directories; ratios pair rows of the same repeat"
)


def _opencl(ctx: Context) -> list[Figure]:
    why = pyopencl_available()
    if why is not None:
        ctx.skip(3, "opencl", why)
        return []
    ours = any(b.name == "opencl" and b.runnable for b in ctx.backends)
    if not ours:
        ctx.skip(3, "opencl", "the opencl backend is not installed or has no device: only "
                              "PyOpenCL's own figures are shown")

    def repeat() -> list[_Run]:
        pocl = ctx.fresh_dir("pocl-cache")
        store = {"CUBECL_CACHE_DIR": str(ctx.fresh_dir("opencl-store"))}
        on = {"POCL_KERNEL_CACHE": "1", "POCL_CACHE_DIR": str(pocl)}
        off = {"POCL_KERNEL_CACHE": "0", "POCL_CACHE_DIR": str(pocl)}
        runs = [_Run("pyopencl-cold", "pyopencl_first_result", on),
                _Run("pyopencl-warm", "pyopencl_first_result", on)]
        if ours:
            runs += [_Run("ours-cold", "first_result", {**off, **store}),
                     _Run("ours-warm", "first_result", {**off, **store}),
                     # Untimed: puts our kernel's source into PoCL's cache too.
                     _Run("", "first_result", {**on, **store}),
                     _Run("both-warm", "first_result", {**on, **store})]
        return runs

    rows = _measure(ctx, "opencl", repeat)
    fig = _figure("opencl", rows, (
        ("pyopencl-cold", "PyOpenCL, PoCL cache on, empty"),
        ("pyopencl-warm", "PyOpenCL, PoCL cache on, warm"),
        ("ours-cold", "ours, PoCL cache off, empty store"),
        ("ours-warm", "ours, PoCL cache off, warm store"),
        ("both-warm", "ours, both caches on and warm"),
    ), "pyopencl-warm", "from the first line of a fresh process to a saxpy of 65,536 floats "
       "read back and checked. PyOpenCL rows build a hand-written OpenCL C saxpy (on PoCL "
       "PyOpenCL keeps no binary cache of its own and relies on PoCL's); ours launch "
       "the same saxpy written with `cubecl_server.lang` in a module of its own "
       "(`benchmarks/first_saxpy.py`) on the opencl backend. " + _STEP_TEXT, "PyOpenCL warm")
    fig.notes.append(
        "PoCL generates each kernel's work-group code at its first launch after a program "
        "is built or loaded from a binary (the `read` step of the rows with PoCL's cache "
        "off): its kernel cache (on by default) keeps that code per machine, keyed by the "
        "program, so with it on a warm process pays nothing there. Our store cannot keep "
        "it: a PoCL program binary (`CL_PROGRAM_BINARIES`) is the same bytes before and "
        "after the first launch (checked on PoCL 3.1), so the code lives only in PoCL's "
        "cache directory, whose layout is PoCL's own.")
    if "both-warm" in rows.total:
        r = ratio(summarize(rows.total["both-warm"]), summarize(rows.total["pyopencl-warm"]))
        fig.targets.append(Target("ours (both caches warm) no slower than PyOpenCL warm",
                                  f"{r.median:.2f}x", r.median <= 1.0))
    return [fig]


def _vulkan(ctx: Context) -> list[Figure]:
    if not any(b.name == "vulkan" and b.runnable for b in ctx.backends):
        ctx.skip(3, "vulkan", "the vulkan backend is not selected, not installed or has "
                              "no device")
        return []

    def repeat() -> list[_Run]:
        mesa = str(ctx.fresh_dir("mesa-cache"))
        store = {"CUBECL_CACHE_DIR": str(ctx.fresh_dir("vulkan-store"))}
        on = {"MESA_SHADER_CACHE_DISABLE": "false", "MESA_SHADER_CACHE_DIR": mesa}
        off = {"MESA_SHADER_CACHE_DISABLE": "true", "MESA_SHADER_CACHE_DIR": mesa}
        return [_Run("wgpu-cold", "wgpu_first_result", {**on, **WGPU_ENV}),
                _Run("wgpu-warm", "wgpu_first_result", {**on, **WGPU_ENV}),
                _Run("ours-cold", "first_result", {**off, **store}),
                _Run("ours-warm", "first_result", {**off, **store}),
                _Run("", "first_result", {**on, **store}),
                _Run("both-warm", "first_result", {**on, **store})]

    try:
        rows = _measure(ctx, "vulkan", repeat)
    except RuntimeError as e:  # wgpu-py missing or without a Vulkan adapter
        ctx.skip(3, "vulkan", f"failed: {str(e).splitlines()[-1]}")
        return []
    return [_figure("vulkan", rows, (
        ("wgpu-cold", "wgpu, Mesa cache on, empty"),
        ("wgpu-warm", "wgpu, Mesa cache on, warm"),
        ("ours-cold", "ours, Mesa cache off, empty store"),
        ("ours-warm", "ours, Mesa cache off, warm store"),
        ("both-warm", "ours, both caches on and warm"),
    ), "wgpu-warm", "from the first line of a fresh process to a saxpy of 65,536 floats "
       "read back and checked. wgpu rows run a hand-written WGSL saxpy through wgpu-py "
       f"({', '.join(f'{k}={v}' for k, v in WGPU_ENV.items())}, so that it takes the "
       "Vulkan adapter, lavapipe, that our backend runs on); ours launch the same saxpy "
       "written with `cubecl_server.lang` (`benchmarks/first_saxpy.py`) on the vulkan "
       "backend. " + _STEP_TEXT, "wgpu warm")]


def _llvm(ctx: Context) -> list[Figure]:
    if not any(b.name == "llvm" and b.runnable for b in ctx.backends):
        ctx.skip(3, "llvm", "the llvm backend is not selected or not installed")
        return []

    # Which backend goes first alternates from one repeat to the next, so that neither
    # always runs on the heels of the other's compile (cold before warm, as it must).
    orders = itertools.cycle((("cpu", "llvm"), ("llvm", "cpu")))

    def repeat() -> list[_Run]:
        runs = []
        for backend in next(orders):
            store = {"CUBECL_CACHE_DIR": str(ctx.fresh_dir(f"{backend}-store"))}
            runs += [_Run(f"{backend}-cold", "first_result", store, backend),
                     _Run(f"{backend}-warm", "first_result", store, backend)]
        return runs

    # Rows a few milliseconds apart in about 200, most of it the same imports: more
    # repeats than the other figures, for a median that says which is faster.
    rows = _measure(ctx, "llvm", repeat, (3, 21))
    fig = _figure("llvm", rows, (
        ("cpu-cold", "cpu (NumPy), empty store"),
        ("cpu-warm", "cpu (NumPy), warm store"),
        ("llvm-cold", "llvm, empty store"),
        ("llvm-warm", "llvm, warm store"),
    ), "cpu-warm", "from the first line of a fresh process to a saxpy of 65,536 floats "
       "read back and checked, written with `cubecl_server.lang` "
       "(`benchmarks/first_saxpy.py`), on the native llvm backend and on the built-in "
       "NumPy one. A warm llvm process links the stored object code itself, without "
       "loading LLVM. " + _STEP_TEXT, "cpu warm")
    r = ratio(summarize(rows.total["llvm-warm"]), summarize(rows.total["cpu-warm"]))
    fig.targets.append(Target("llvm (warm store) no slower than cpu (warm store)",
                              f"{r.median:.2f}x", r.median <= 1.0))
    return [fig]


def run(ctx: Context) -> list[Figure]:
    """The first-result figures of opencl, vulkan and llvm, where each can run here."""
    return [*_opencl(ctx), *_vulkan(ctx), *_llvm(ctx)]

