"""Group 2, obtaining a kernel: cold (empty store), warm (fresh process, our store),
rekeyed (changed build id), hot (loaded in this process), for the demo kernels and a
large generated one. Cold, warm and rekeyed are real processes on a scratch store."""

from __future__ import annotations

from typing import Any

from benchmarks.clients import make_client
from benchmarks.figures import Figure, Target, fmt_ratio, fmt_summary, fmt_time
from benchmarks.generated import BIG_STATEMENTS, load_big_kernel, write_big_kernel
from benchmarks.harness import DRIVER_CACHES_OFF, Backend, Context
from benchmarks.kernels import DEMO_SPECS, KernelSpec
from cubecl_server.benchmark import Summary, measure, ratio, summarize

__all__ = ["WARM_TARGET", "CPU_WARM_TARGET", "run"]

WARM_TARGET = 10.0
"""Warm must be at least this many times faster than cold."""
CPU_WARM_TARGET = 5.0
"""The same on cpu, whose cold path is itself cheap (no device compiler) and whose load
validates and compiles the generated NumPy source in every process."""

_PHASES = ("cold", "warm", "rekeyed")


def run(ctx: Context) -> list[Figure]:
    """The obtain figure of every backend, compile-only ones included."""
    big = ctx.workdir / "generated_big_kernel.py"
    write_big_kernel(big)
    return ctx.each_backend(2, lambda b: [_obtain(ctx, b, big)], no_device=None)


def _obtain(ctx: Context, b: Backend, big: Any) -> Figure:
    repeat = ctx.repeat(2, 7)
    # kernel -> phase -> (ir + obtain seconds, obtain seconds, outcome) per repeat
    got: dict[str, dict[str, list[tuple[float, float, str]]]] = {}
    for r in range(repeat):
        cache = ctx.fresh_dir(f"obtain-{b.name}")
        env = {"CUBECL_CACHE_DIR": str(cache), **DRIVER_CACHES_OFF}
        for phase in _PHASES:
            phase_env = {**env, "CUBECL_BUILD_ID": f"bench-rekey-{r}"} if phase == "rekeyed" \
                else env
            answer = ctx.worker("obtain", {"backend": b.name, "kernels": ["demo", "big"],
                                           "big_path": str(big),
                                           "compile_only": not b.runnable}, phase_env)
            for k in answer["kernels"]:
                got.setdefault(k["name"], {p: [] for p in _PHASES})[phase].append(
                    (k["ir_s"] + k["obtain_s"], k["obtain_s"], k["outcome"]))
    hot = _hot(ctx, b, big)
    fig = Figure(
        2, "Obtaining a kernel" + ("" if b.runnable else " (compile-only: no device)"), b.name,
        measured="per kernel, in a fresh process (one per phase and repeat, a new scratch "
                 "store per repeat): `total` = building the IR from the Python source (or "
                 "reading it from the store: warm) plus "
                 "`KernelLoader.get` (store read or lower + finalize + store write, then "
                 "load); `loader` = the `KernelLoader.get` part alone. Cold: empty store. "
                 "Warm: the next process on that store. Rekeyed: the next, with "
                 "`CUBECL_BUILD_ID` changed. Hot: `client.prepare` of a loaded kernel in "
                 "this process. Ratios pair cold and warm of the same repeat. "
                 f"`big_kernel` is generated with {BIG_STATEMENTS} statements"
                 + ("" if b.runnable else ". With no device, `load` only checks the "
                                          "artifact (the plugin's compile-only client)"),
        not_measured="interpreter start-up, imports, creating the client and opening the "
                     "store (done before the clock starts); driver caches were off ("
                     + ", ".join(f"{k}={v}" for k, v in DRIVER_CACHES_OFF.items()) + ")",
        columns=["kernel", "cold total", "warm total", "rekeyed total", "hot",
                 "cold/warm total", "cold/warm loader", "outcomes (cold, warm, rekeyed)"])
    target = CPU_WARM_TARGET if b.name == "cpu" else WARM_TARGET
    for name, phases in got.items():
        totals = {p: summarize([t for t, _, _ in phases[p]]) for p in _PHASES}
        loaders = {p: summarize([o for _, o, _ in phases[p]]) for p in _PHASES}
        outcomes = ", ".join("/".join(sorted({o for _, _, o in phases[p]})) for p in _PHASES)
        total_ratio, loader_ratio = (ratio(totals["cold"], totals["warm"]),
                                     ratio(loaders["cold"], loaders["warm"]))
        fig.rows.append([name, fmt_summary(totals["cold"]), fmt_summary(totals["warm"]),
                         fmt_summary(totals["rekeyed"]), fmt_time(hot[name].median),
                         fmt_ratio(total_ratio), fmt_ratio(loader_ratio), outcomes])
        fig.targets.append(Target(f"{name}: warm >= {target:g}x faster than cold",
                                  f"{total_ratio.median:.1f}x (loader alone "
                                  f"{loader_ratio.median:.1f}x)",
                                  total_ratio.median >= target))
    return fig


def _specs(big: Any) -> list[KernelSpec]:
    return [*DEMO_SPECS, load_big_kernel(big)]


def _hot(ctx: Context, b: Backend, big: Any) -> dict[str, Summary]:
    c = make_client(b.name, compile_only=not b.runnable)
    out: dict[str, Summary] = {}
    for spec in _specs(big):
        c.prepare(spec.kernel, spec.dim, **spec.comptime)
        out[spec.name] = measure(lambda s=spec: c.prepare(s.kernel, s.dim, **s.comptime),
                                 repeat=ctx.repeat(5, 9), number=ctx.repeat(2000, 20000))
    return out
