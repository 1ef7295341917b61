"""Group 3, against the peers' caches (opencl only): the time to a first result in a
fresh process, for a saxpy written directly with PyOpenCL and cached by PoCL's own
kernel cache, against ours with PoCL's cache off, and with both caches on."""

from __future__ import annotations

from benchmarks.figures import Figure, fmt_ratio, fmt_summary
from benchmarks.harness import Context
from benchmarks.opencl_raw import pyopencl_available
from cubecl_server.benchmark import Summary, ratio, summarize

__all__ = ["run"]

_ROWS: tuple[tuple[str, str], ...] = (
    ("pyopencl-cold", "PyOpenCL, PoCL cache on, empty"),
    ("pyopencl-warm", "PyOpenCL, PoCL cache on, warm"),
    ("ours-cold", "ours, PoCL cache off, empty store"),
    ("ours-warm", "ours, PoCL cache off, warm store"),
    ("both-warm", "ours, both caches on and warm"),
)


def run(ctx: Context) -> list[Figure]:
    """The first-result figure, when PyOpenCL and the opencl backend are both here."""
    why = pyopencl_available()
    if why is not None:
        ctx.skip(3, "opencl", why)
        return []
    ours = any(b.name == "opencl" and b.runnable for b in ctx.backends)
    if not ours:
        ctx.skip(3, "opencl", "the opencl backend is not installed or has no device: only "
                              "PyOpenCL's own figures are shown")
    samples: dict[str, list[float]] = {}
    outcomes: dict[str, set[str]] = {}
    for _ in range(ctx.repeat(2, 5)):
        pocl = ctx.fresh_dir("pocl-cache")
        store = ctx.fresh_dir("opencl-store")
        pocl_on = {"POCL_KERNEL_CACHE": "1", "POCL_CACHE_DIR": str(pocl)}
        pocl_off = {"POCL_KERNEL_CACHE": "0", "POCL_CACHE_DIR": str(pocl)}
        ours_env = {"CUBECL_CACHE_DIR": str(store)}
        runs: list[tuple[str, str, dict[str, str]]] = [
            ("pyopencl-cold", "pyopencl_first_result", pocl_on),
            ("pyopencl-warm", "pyopencl_first_result", pocl_on),
        ]
        if ours:
            runs += [
                ("ours-cold", "first_result", {**pocl_off, **ours_env}),
                ("ours-warm", "first_result", {**pocl_off, **ours_env}),
                # Untimed: puts our kernel's source into PoCL's cache too.
                ("", "first_result", {**pocl_on, **ours_env}),
                ("both-warm", "first_result", {**pocl_on, **ours_env}),
            ]
        for label, command, env in runs:
            answer = ctx.worker(command, {"backend": "opencl"}, env)
            if label:
                samples.setdefault(label, []).append(answer["seconds"])
                outcomes.setdefault(label, set()).add(answer.get("outcome", "-"))
    got: dict[str, Summary] = {k: summarize(v) for k, v in samples.items()}
    peer = got["pyopencl-warm"]
    fig = Figure(
        3, "First result in a fresh process", "opencl",
        measured="from the first line of a fresh process to a saxpy of 65,536 floats read "
                 "back and checked: imports, context/client, kernel (built, or read from a "
                 "cache), buffers, launch, read. PyOpenCL rows build a hand-written OpenCL C "
                 "saxpy (on PoCL PyOpenCL keeps no binary cache of its own and relies on "
                 "PoCL's); ours launch `demo.saxpy` on the opencl backend. Each repeat uses "
                 "new PoCL and store directories; ratios pair rows of the same repeat",
        not_measured="the interpreter's own start-up (the same for every row)",
        columns=["configuration", "first result: median [IQR]", "ratio to PyOpenCL warm",
                 "our outcome"])
    for label, text in _ROWS:
        if label in got:
            fig.rows.append([text, fmt_summary(got[label]), fmt_ratio(ratio(got[label], peer)),
                             "/".join(sorted(outcomes[label]))])
    return [fig]
