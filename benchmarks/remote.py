"""Group 9, beyond one machine: a kernel from the shared tier (Redis) against one from
the local store and a compile, per backend; and the first result of a workload on a
fresh machine with nothing, with the workload's bundle imported, and with the shared
tier warm. Every phase is a fresh process on its own scratch cache, against a
``redis-server`` this group starts on a loopback port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.figures import Figure, fmt_summary
from benchmarks.harness import DRIVER_CACHES_OFF, Backend, Context
from cubecl_server.benchmark import summarize
from cubecl_server.launched import Launched
from cubecl_server.persistence import SqliteStore, database_path
from cubecl_server.persistence.bundle import Place, Target, export_bundle, import_bundle
from cubecl_server.persistence.signing import Secret

__all__ = ["run"]

_SECRET = "benchmark-fleet-secret-0123456789"
_OBTAIN = ("compile", "remote hit", "local hit")
_FIRST = ("nothing", "bundle", "shared tier warm")


@contextmanager
def _redis(ctx: Context) -> Iterator[str | None]:
    """The URL of a fresh redis-server (None when it is not installed: a skip)."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(ctx.fresh_dir("redis"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def run(ctx: Context) -> list[Figure]:
    """The two figures of every backend with a device (the first result needs one)."""
    with _redis(ctx) as url:
        if url is None:
            for b in ctx.backends:
                ctx.skip(9, b.name, "redis-server is not installed (make system-deps)")
            return []
        return ctx.each_backend(9, lambda b: [_obtain(ctx, b, url), _first(ctx, b, url)])


def _env(cache: Path, url: str | None, prefix: str) -> dict[str, str]:
    env = {"CUBECL_CACHE_DIR": str(cache), "CUBECL_STORE_SECRET": _SECRET,
           "CUBECL_STORE_PREFIX": prefix, **DRIVER_CACHES_OFF}
    if url is not None:
        env["CUBECL_STORE_URL"] = url
    return env


def _obtain(ctx: Context, b: Backend, url: str) -> Figure:
    # kernel -> phase -> (seconds, outcome) per repeat
    got: dict[str, dict[str, list[tuple[float, str]]]] = {}
    for r in range(ctx.repeat(2, 7)):
        prefix = f"bench-{b.name}-{r}:"
        one, two = ctx.fresh_dir(f"remote-{b.name}"), ctx.fresh_dir(f"remote-{b.name}")
        for phase, cache in zip(_OBTAIN, (one, two, two), strict=True):
            answer = ctx.worker("obtain", {"backend": b.name, "kernels": ["demo"]},
                                _env(cache, url, prefix))
            for k in answer["kernels"]:
                got.setdefault(k["name"], {p: [] for p in _OBTAIN})[phase].append(
                    (k["obtain_s"], k["outcome"]))
    fig = Figure(
        9, "A kernel from the shared tier", b.name,
        measured="per kernel, `KernelLoader.get` in a fresh process (one per phase and "
                 "repeat) with the shared tier on, a local redis-server on loopback. "
                 "Compile: empty local cache and empty Redis (lower, finalize, local write, "
                 "`SET NX` of the signed value, load). Remote hit: another empty local "
                 "cache (`GET`, HMAC check, local write as `imported`, load). Local hit: "
                 "that cache again (SQLite read, load)",
        not_measured="interpreter start-up, imports, creating the client, opening the store "
                     "and connecting to Redis (the first `GET` pays the connection); driver "
                     "caches were off (" + ", ".join(f"{k}={v}" for k, v in
                                                     DRIVER_CACHES_OFF.items()) + ")",
        columns=["kernel", *_OBTAIN, "outcomes"])
    for name, phases in got.items():
        fig.rows.append([name, *(fmt_summary(summarize([s for s, _ in phases[p]]))
                                 for p in _OBTAIN),
                         ", ".join("/".join(sorted({o for _, o in phases[p]})) for p in _OBTAIN)])
    return fig


def _first(ctx: Context, b: Backend, url: str) -> Figure:
    secret = Secret(_SECRET.encode(), "benchmark")
    got: dict[str, list[tuple[float, str]]] = {p: [] for p in _FIRST}
    for r in range(ctx.repeat(2, 7)):
        prefix = f"bench-first-{b.name}-{r}:"
        # The machine that ran the workload first: it warms Redis and notes the launch.
        origin, launched = ctx.fresh_dir(f"first-{b.name}"), ctx.workdir / f"launched-{r}.json"
        launched.unlink(missing_ok=True)
        ctx.worker("first_result", {"backend": b.name},
                   {**_env(origin, url, prefix), "CUBECL_LAUNCHED": str(launched)})
        collection = Launched.load(launched)
        [target] = [Target(*t) for t in collection.targets()]
        bundle = ctx.workdir / f"first-{b.name}-{r}.bundle"
        export_bundle(bundle, SqliteStore.open(database_path("default", origin)), target,
                      [Place(e.kind, e.name, e.namespace, e.key) for e in collection.entries],
                      secret)
        shipped = ctx.fresh_dir(f"first-{b.name}")
        import_bundle(bundle, SqliteStore.open(database_path("default", shipped)), target,
                      secret)
        for phase, env in (("nothing", _env(ctx.fresh_dir("first"), None, prefix)),
                           ("bundle", _env(shipped, None, prefix)),
                           ("shared tier warm", _env(ctx.fresh_dir("first"), url, prefix))):
            answer = ctx.worker("first_result", {"backend": b.name}, env)
            got[phase].append((answer["seconds"], answer["outcome"]))
    fig = Figure(
        9, "First result on a fresh machine", b.name,
        measured="a saxpy of 65,536 floats from nothing in a fresh process with an empty "
                 "cache (the `first_result` of group 2's peers figure: imports, client, "
                 "kernel, data in, result out, checked): with nothing; with the bundle of "
                 "what an earlier run launched imported first (`bundle import`); with the "
                 "shared tier on and warm (an earlier machine compiled it into Redis)",
        not_measured="interpreter start-up; the import of the bundle, done before the "
                     "process starts; driver caches were off",
        columns=[*_FIRST, "outcomes"])
    fig.rows.append([*(fmt_summary(summarize([s for s, _ in got[p]])) for p in _FIRST),
                     ", ".join("/".join(sorted({o for _, o in got[p]})) for p in _FIRST)])
    return fig
