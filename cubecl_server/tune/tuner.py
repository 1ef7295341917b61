"""The tuner: runs the fastest candidate known for a key, and finds it on a miss.

On a miss (no winner in this process, none stored for this device and candidate
set), every candidate's kernels are compiled together (``KernelLoader.get_batch``),
each candidate runs once on its own copy of fresh inputs (a warm-up that also finds
the ones that fail and, with ``check``, those whose output disagrees with the
first's), then the rest are timed on the device's clock (``client.profile``) in
rounds, each round starting one candidate later so none is always first or last.
The fastest median wins; it is stored in the environment's tune cache
(:mod:`cubecl_server.persistence.tune_cache`) and then runs the caller's inputs.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cubecl_server.client import ComputeClient
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.compiler.store import environment_database
from cubecl_server.config import Config, config
from cubecl_server.errors import CubeclError, StoreError
from cubecl_server.launched import ACTIVE, LaunchedEntry, note
from cubecl_server.logging import logger
from cubecl_server.memory_management import Handle
from cubecl_server.persistence import environment
from cubecl_server.persistence.tune_cache import TuneCache, TuneEntry, entry_key, namespace
from cubecl_server.progress import Step, steps
from cubecl_server.tune.tunable import Tunable, TunableSet, copy_inputs, key_text

__all__ = ["AutotuneError", "LocalTuner", "TuneRecord", "Tuner", "local_tuner"]

log = logger("tune")

MIN_ROUNDS = 3
"""Every candidate left after the warm-up is timed at least this many times."""
MAX_ROUNDS = 15
"""...and at most this many."""
ROUNDS_BUDGET_S = 1.0
"""After MIN_ROUNDS, timing stops once it has taken this long, whatever it found."""


class AutotuneError(CubeclError):
    """No candidate of a tunable set could run: ``errors`` says why each was excluded."""

    def __init__(self, message: str, errors: dict[str, str]) -> None:
        super().__init__(message)
        self.errors = errors


@dataclass(frozen=True)
class TuneRecord:
    """How one tuner found the candidate for one key in this process.

    ``outcome``: ``tuned`` (timed here, and stored), ``forced`` (timed again under
    ``CUBECL_AUTOTUNE=force``, and stored over the old result), ``adopted`` (timed
    here, but another process stored its result first, which is used), ``stored``
    (read from the tune cache: nothing was timed) or ``off`` (``CUBECL_AUTOTUNE=off``:
    the first candidate). ``timing_runs`` counts the runs timed for it here.
    """

    outcome: str
    entry: TuneEntry
    timing_runs: int
    seconds: float

    @property
    def winner(self) -> str:
        """The candidate used for this key."""
        return self.entry.winner

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON object."""
        return {"outcome": self.outcome, "timing_runs": self.timing_runs,
                "seconds": self.seconds, **self.entry.to_dict()}


@dataclass
class _Stamp:
    """What the tuner's winners were found under; they are dropped when it moves."""

    generation: int
    config: Config
    winners: dict[TunableSet, dict[Hashable, Tunable]] = field(default_factory=dict)


class Tuner:
    """One named tuner on one device: the winner of each (tunable set, key) it has met,
    found on first use and kept for the process.

    Two threads meeting one new key tune it once; switching environments (or
    reloading the config) forgets every winner, and the next use looks again.
    """

    def __init__(self, name: str, backend: str, device: str, variant: str,
                 build_id: str) -> None:
        self.name = name
        self.backend = backend
        self.device = device
        self.variant = variant
        self.build_id = build_id
        """The build id of the device's kernels, which a collection of launched
        entries groups tunings by (:mod:`cubecl_server.launched`)."""
        self.records: list[TuneRecord] = []
        """Every key this tuner resolved in this process, oldest first."""
        self._stamp = _Stamp(environment.generation(), config())
        self._lock = threading.Lock()
        self._inflight: dict[tuple[TunableSet, Hashable], threading.Event] = {}
        self._store_failed = False

    def execute(self, client: ComputeClient, tunables: TunableSet, *inputs: Any) -> Any:
        """Run the fastest candidate of ``tunables`` for the key of ``inputs`` on them,
        tuning first if it is not known yet; what the candidate returns."""
        key = tunables.key(*inputs)
        stamp = self._stamp
        if stamp.generation == environment.generation() and stamp.config is config():
            known = stamp.winners.get(tunables)
            if known is not None:
                winner = known.get(key)
                if winner is not None:
                    if ACTIVE:
                        self.note(tunables, key)
                    return winner.run(client, *inputs)
        winner = self._miss(client, tunables, key, inputs)
        if ACTIVE:
            self.note(tunables, key)
        return winner.run(client, *inputs)

    def note(self, tunables: TunableSet, key: Hashable) -> None:
        """Note the tune cache entry of ``key`` in the open collections of launched
        entries (none is stored with autotune off)."""
        if config().autotune != "off":
            note(LaunchedEntry("tuning", self.name, self.backend, self.variant, self.build_id,
                               namespace(self.backend, self.variant, self.name),
                               entry_key(self.device, tunables.digest, key_text(key))))

    def forget(self) -> None:
        """Drop every winner this tuner holds (the tune cache keeps its entries)."""
        with self._lock:
            self._stamp = _Stamp(environment.generation(), config())

    def _winners(self) -> dict[TunableSet, dict[Hashable, Tunable]]:
        """The current winners, after dropping those of another environment or config
        (call with the lock held)."""
        stamp = self._stamp
        if stamp.generation != environment.generation() or stamp.config is not config():
            stamp = self._stamp = _Stamp(environment.generation(), config())
        return stamp.winners

    def _miss(self, client: ComputeClient, tunables: TunableSet, key: Hashable,
              inputs: tuple[Any, ...]) -> Tunable:
        with self._lock:
            winner = self._winners().get(tunables, {}).get(key)
            if winner is not None:
                return winner
            busy = self._inflight.get((tunables, key))
            if busy is None:
                mine = self._inflight[(tunables, key)] = threading.Event()
        if busy is not None:
            busy.wait()
            # The other thread's winner; if it failed, this thread tries (and reports).
            return self._miss(client, tunables, key, inputs)
        try:
            winner = self._resolve(client, tunables, key, inputs)
            with self._lock:
                self._winners().setdefault(tunables, {})[key] = winner
            return winner
        finally:
            with self._lock:
                del self._inflight[(tunables, key)]
            mine.set()

    def _cache(self) -> TuneCache | None:
        """The current environment's tune cache; None when caching is off or the store
        cannot be used (already warned about)."""
        if self._store_failed or not config().compilation_cache:
            return None
        db = environment.open_store(environment_database())
        return None if db is None else TuneCache(db)

    def _store_error(self, what: str, err: StoreError) -> None:
        if not self._store_failed:
            log.warning("tune cache off for tuner %s on %s for this process (%s failed: %s); "
                        "tuning goes on in memory", self.name, self.backend, what, err)
        self._store_failed = True

    def _resolve(self, client: ComputeClient, tunables: TunableSet, key: Hashable,
                 inputs: tuple[Any, ...]) -> Tunable:
        """Find the candidate for ``key``: from the mode, the tune cache, or by tuning."""
        mode = config().autotune
        text = key_text(key)
        first = tunables.candidates[0]
        if mode == "off":
            self._record("off", self._entry(tunables, text, first.name), 0, 0.0)
            return first
        cache = self._cache()
        stale = False  # a stored entry that names no candidate of the set
        if cache is not None and mode == "on":
            try:
                stored = cache.get(self.backend, self.variant, self.name, self.device,
                                   tunables.digest, text)
            except StoreError as e:
                self._store_error("read", e)
                stored = None
            chosen = None if stored is None or not _names_a_candidate(stored, tunables) \
                else tunables.candidate(stored.winner)
            if stored is not None and chosen is not None:
                self._record("stored", stored, 0, 0.0)
                return chosen
            stale = stored is not None
            if stored is not None:
                log.warning("tune cache entry of %s for %s names %r, not one of its "
                            "candidates: tuned again, and replaced", self.name, text,
                            stored.winner)
        start = time.perf_counter()
        entry, runs = self._tune(client, tunables, text, inputs)
        outcome = "forced" if mode == "force" else "tuned"
        if cache is not None:
            try:
                if mode == "force" or stale:
                    cache.replace(entry)
                else:
                    kept = cache.put(entry)
                    if kept is not entry and _names_a_candidate(kept, tunables):
                        # Another process stored its tuning first: all use one winner.
                        entry, outcome = kept, "adopted"
                    elif kept is not entry:
                        cache.replace(entry)  # the first writer's names no candidate
            except StoreError as e:
                self._store_error("write", e)
        self._record(outcome, entry, runs, time.perf_counter() - start)
        winner = tunables.candidate(entry.winner)
        assert winner is not None
        return winner

    def _entry(self, tunables: TunableSet, text: str, winner: str, **more: Any) -> TuneEntry:
        return TuneEntry(tuner=self.name, backend=self.backend, variant=self.variant,
                         device=self.device, key=text, digest=tunables.digest,
                         candidates=tunables.names, winner=winner, created=time.time(), **more)

    def _record(self, outcome: str, entry: TuneEntry, runs: int, seconds: float) -> None:
        record = TuneRecord(outcome, entry, runs, seconds)
        with self._lock:
            self.records.append(record)
        timings = ", ".join(f"{n} {s * 1e3:.3f} ms" for n, s in
                            sorted(entry.timings.items(), key=lambda t: t[1]))
        excluded = "; ".join(f"{n}: {e}" for n, e in entry.errors.items())
        log.info("autotune %s %s on %s (%s): %s -> %s%s%s%s", self.name, entry.key,
                 self.backend, self.device, outcome, entry.winner,
                 f" [{timings}]" if timings else "",
                 f" in {seconds:.3f} s, {runs} timed runs" if runs else "",
                 f"; excluded {excluded}" if excluded else "")

    def _tune(self, client: ComputeClient, tunables: TunableSet, text: str,
              inputs: tuple[Any, ...]) -> tuple[TuneEntry, int]:
        """Compile, warm up, check and time every candidate: the entry of the result
        and how many runs were timed."""
        # A step each: the batch compile, every warm-up, the timing rounds.
        with steps(f"autotune {self.name} {text}", len(tunables.candidates) + 2) as step:
            return self._tune_steps(client, tunables, text, inputs, step)

    def _tune_steps(self, client: ComputeClient, tunables: TunableSet, text: str,
                    inputs: tuple[Any, ...], step: Step) -> tuple[TuneEntry, int]:
        """:meth:`_tune`'s work, telling ``step`` as each part starts."""
        errors: dict[str, str] = {}
        step(f"compiling {len(tunables.candidates)} candidates")
        viable = _compile(client, tunables.candidates, errors)
        bench = tunables.inputs(client, *inputs)
        working: list[Tunable] = []
        reference: tuple[str, list[np.ndarray]] | None = None
        for candidate in viable:
            step(f"warming up {candidate.name}")
            try:
                own = copy_inputs(client, *bench)
                outputs = _outputs(client, candidate.run(client, *own), own)
                client.sync()
            except Exception as e:
                errors[candidate.name] = _describe(e)
                continue
            if tunables.check:
                if reference is None:
                    reference = (candidate.name, outputs)
                else:
                    problem = _disagreement(outputs, reference[1], tunables.rtol,
                                            tunables.atol)
                    if problem is not None:
                        errors[candidate.name] = f"output disagrees with {reference[0]}'s: " \
                                                 f"{problem}"
                        log.warning("autotune %s %s on %s: candidate %s excluded, its %s",
                                    self.name, text, self.backend, candidate.name,
                                    errors[candidate.name])
                        continue
            working.append(candidate)
        if not working:
            detail = "\n".join(f"  {n}: {e}" for n, e in errors.items())
            raise AutotuneError(f"autotune {self.name} {text} on {self.backend}: no candidate "
                                f"could run:\n{detail}", errors)
        if len(working) == 1:
            return self._entry(tunables, text, working[0].name, errors=errors), 0
        step(f"timing {len(working)} candidates")
        samples, method = _time(client, working, bench)
        medians = {n: float(np.median(s)) for n, s in samples.items()}
        winner = min(working, key=lambda c: medians[c.name])
        rounds = len(samples[winner.name])
        return (self._entry(tunables, text, winner.name, timings=medians, errors=errors,
                            samples=rounds, method=method),
                rounds * len(working))


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _names_a_candidate(entry: TuneEntry, tunables: TunableSet) -> bool:
    """Whether a stored ``entry`` was made for ``tunables``: its candidates are the set's
    and its winner is one of them (a forged or damaged row may name anything)."""
    return entry.candidates == tunables.names and tunables.candidate(entry.winner) is not None


def _compile(client: ComputeClient, candidates: Sequence[Tunable],
             errors: dict[str, str]) -> list[Tunable]:
    """Compile every candidate's kernels in one batch; those that fail are left out,
    with their errors."""
    ids: dict[str, list[ArtifactId]] = {}
    for c in candidates:
        try:
            ids[c.name] = [client.artifact_id(k.kernel, k.cube_dim, dict(k.comptime))
                           for k in c.kernels]
        except Exception as e:  # a cube dim the device refuses, a kernel that does not parse
            errors[c.name] = _describe(e)
    try:
        client.loader.get_batch([i for its in ids.values() for i in its])
    except Exception:
        # The batch raises its first failure; the others are loaded, so asking for each
        # candidate alone is a lookup for them and names every one that failed.
        for name, its in ids.items():
            try:
                client.loader.get_batch(its)
            except Exception as e:
                errors[name] = _describe(e)
    return [c for c in candidates if c.name not in errors]


def _outputs(client: ComputeClient, result: Any, inputs: tuple[Any, ...]) -> list[np.ndarray]:
    """A candidate's output on the host: what it returned, or the buffers among its
    inputs when it returned None (it wrote into them). Reading raises for a failed run."""
    if result is None:
        result = [a for a in inputs if isinstance(a, Handle)]
    items = result if isinstance(result, (tuple, list)) else [result]
    return [client.read(r) if isinstance(r, Handle) else np.asarray(r) for r in items]


def _disagreement(got: list[np.ndarray], want: list[np.ndarray], rtol: float,
                  atol: float) -> str | None:
    """How ``got`` differs from ``want`` beyond the tolerance, or None if it does not."""
    if len(got) != len(want):
        return f"{len(got)} outputs, not {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return f"output {i} has shape {g.shape}, not {w.shape}"
        if g.dtype.kind in "fc" or w.dtype.kind in "fc":
            ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = g == w
        if not bool(np.all(ok)):
            bad = int(np.sum(~ok))
            at = tuple(int(j) for j in np.argwhere(~ok)[0])
            return (f"{bad} of {ok.size} elements of output {i} differ (at {at}: "
                    f"{g[at]!r}, expected {w[at]!r})")
    return None


def _time(client: ComputeClient, candidates: list[Tunable],
          bench: tuple[Any, ...]) -> tuple[dict[str, list[float]], str]:
    """Each candidate's run times on ``bench``, in rounds that rotate the order, until
    the fastest is clearly apart or the budget is spent; and the clock used."""
    samples: dict[str, list[float]] = {c.name: [] for c in candidates}
    method = ""
    start = time.perf_counter()
    for r in range(MAX_ROUNDS):
        shift = r % len(candidates)
        for c in candidates[shift:] + candidates[:shift]:
            took = client.profile(lambda c=c: c.run(client, *bench))
            samples[c.name].append(took.seconds)
            method = took.method.value
        if r + 1 >= MIN_ROUNDS and (_apart(samples)
                                    or time.perf_counter() - start > ROUNDS_BUDGET_S):
            break
    return samples, method


def _apart(samples: dict[str, list[float]]) -> bool:
    """Whether the fastest candidate's median run beats every other's fastest run
    (a median, so that one slow outlier of its own does not keep the rounds going)."""
    medians = {n: float(np.median(s)) for n, s in samples.items()}
    best = min(medians, key=medians.__getitem__)
    return all(medians[best] < min(s) for n, s in samples.items() if n != best)


_NONE: dict[Hashable, Tunable] = {}
"""No winners: what the lookup of a set the tuner has not met yet finds."""


class LocalTuner:
    """A named tuner for the life of the process (the seed's ``local_tuner!``): one
    :class:`Tuner` per device, and the tunable set it runs, built once by :meth:`init`.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tuner's name must be a non-empty string, not {name!r}")
        self.name = name
        self._set: TunableSet | None = None
        self._lock = threading.Lock()
        self._tuners: dict[tuple[str, int, str], Tuner] = {}
        # id(client) -> (a weak reference to it, its tuner): one lookup per launch;
        # the reference tells a live client from a new one given a dead one's id.
        self._by_client: dict[int, tuple[weakref.ref[ComputeClient], Tuner]] = {}

    def init(self, build: Callable[[], TunableSet]) -> TunableSet:
        """The tuner's tunable set: ``build()`` the first time, the same set after."""
        if self._set is None:
            with self._lock:
                if self._set is None:
                    made = build()
                    if not isinstance(made, TunableSet):
                        raise TypeError(f"tuner {self.name}: init's function returned "
                                        f"{type(made).__name__}, not a TunableSet")
                    self._set = made
        return self._set

    def tuner(self, client: ComputeClient) -> Tuner:
        """This tuner on ``client``'s device."""
        found = self._by_client.get(id(client))
        if found is not None and found[0]() is client:
            return found[1]
        variant = client.loader.artifact_compiler.variant
        where = (client.backend, client.device.index, variant)
        with self._lock:
            tuner = self._tuners.get(where)
            if tuner is None:
                tuner = self._tuners[where] = Tuner(self.name, client.backend,
                                                    client.device.name, variant,
                                                    client.loader.build_id)
            self._by_client[id(client)] = (weakref.ref(client), tuner)
        return tuner

    def execute(self, client: ComputeClient, tunables: TunableSet, *inputs: Any) -> Any:
        """Run the fastest candidate of ``tunables`` for ``inputs`` on ``client``'s
        device (see :meth:`Tuner.execute`)."""
        found = self._by_client.get(id(client))
        if found is not None and found[0]() is client:
            # Tuner.execute's known-winner path, inlined: a tuned call's whole cost
            # over the candidate's own is these few lookups.
            stamp = found[1]._stamp
            if stamp.generation == environment.generation() and stamp.config is config():
                key = tunables.key(*inputs)
                winner = stamp.winners.get(tunables, _NONE).get(key)
                if winner is not None:
                    if ACTIVE:
                        found[1].note(tunables, key)
                    return winner.run(client, *inputs)
            return found[1].execute(client, tunables, *inputs)
        return self.tuner(client).execute(client, tunables, *inputs)

    def records(self) -> list[TuneRecord]:
        """Every key this tuner resolved in this process, on every device."""
        with self._lock:
            tuners = list(self._tuners.values())
        return [r for t in tuners for r in t.records]

    def forget(self) -> None:
        """Drop every winner held in this process, on every device."""
        with self._lock:
            tuners = list(self._tuners.values())
        for t in tuners:
            t.forget()


_local: dict[str, LocalTuner] = {}
_local_lock = threading.Lock()


def local_tuner(name: str) -> LocalTuner:
    """The process's tuner called ``name``, made on first use (the seed's
    ``local_tuner!`` macro: "create a local tuner with the provided name")."""
    found = _local.get(name)
    if found is None:
        with _local_lock:
            found = _local.setdefault(name, LocalTuner(name))
    return found
