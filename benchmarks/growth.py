"""Group 7, growth: store lookups and warm loads as the store holds 100 to 10,000
artifacts."""

from __future__ import annotations

from benchmarks.figures import Figure, fmt_summary
from benchmarks.harness import DRIVER_CACHES_OFF, Backend, Context
from cubecl_server.benchmark import summarize

__all__ = ["COUNTS", "QUICK_COUNTS", "run"]

COUNTS = (100, 1000, 10_000)
QUICK_COUNTS = (100, 10_000)


def run(ctx: Context) -> list[Figure]:
    """The growth figure of every backend with a device."""
    def figures_of(b: Backend) -> list[Figure]:
        fig = Figure(
            7, "Store growth", b.name,
            measured="for each store size, a fresh process stores the 3 demo kernels and "
                     "adds copies of its saxpy artifact under filler keys of the same "
                     "kernels map up to the count, then times `ArtifactStore.get` of "
                     "stored keys (hit: read, checksum, decode) and of absent ones (miss), "
                     "64 per sample; "
                     "then fresh processes obtain the 3 demo kernels from it (warm load: "
                     "`KernelLoader.get`, summed over the 3; the outcomes column says whether "
                     "each was a store hit)",
            not_measured="building the IR, imports and opening the store (outside the "
                         "clock); driver caches were off",
            columns=["artifacts stored", "hit: median [IQR]", "miss: median [IQR]",
                     "warm load of 3 kernels: median [IQR]", "outcomes", "artifact size"])
        for total in QUICK_COUNTS if ctx.quick else COUNTS:
            cache = ctx.fresh_dir(f"growth-{b.name}-{total}")
            env = {"CUBECL_CACHE_DIR": str(cache), **DRIVER_CACHES_OFF}
            looked = ctx.worker("fill", {"backend": b.name, "total": total,
                                         "repeat": ctx.repeat(5, 9)}, env)
            loads: list[float] = []
            outcomes: set[str] = set()
            for _ in range(ctx.repeat(2, 5)):
                answer = ctx.worker("obtain", {"backend": b.name, "kernels": ["demo"]}, env)
                outcomes |= {k["outcome"] for k in answer["kernels"]}
                loads.append(sum(k["obtain_s"] for k in answer["kernels"]))
            fig.rows.append([f"{total:,}", fmt_summary(summarize(looked["hit"])),
                             fmt_summary(summarize(looked["miss"])),
                             fmt_summary(summarize(loads)), "/".join(sorted(outcomes)),
                             f"{looked['artifact_bytes'] / 1024:.1f} KiB"])
        return [fig]
    return ctx.each_backend(7, figures_of, "no device: nothing is loaded")
