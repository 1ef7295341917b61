"""Autotune on the cpu backend: real kernels, a real store, real fresh processes.

No assertion here is about speed (which candidate is faster is the conformance
suite's business, with a gap too wide to flake): these check which candidates are
timed, excluded, stored, reused and tuned again, and that every tuned call returns
NumPy's answer.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers import kernels
from helpers.processes import last_json_line, run_python

from cubecl_server.cli import main
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.compiler import environment_database
from cubecl_server.config import reload_config
from cubecl_server.lang import ABSOLUTE_POS, Array, f32, kernel
from cubecl_server.persistence import SqliteStore, switch_environment
from cubecl_server.persistence.tune_cache import TuneCache, TuneEntry, namespace
from cubecl_server.tune import (
    AutotuneError,
    KernelSpec,
    LocalTuner,
    Tunable,
    TunableSet,
    anchor,
    key_text,
    local_tuner,
)

N = 1000


@kernel
def double_in_place(a: Array[f32]) -> None:
    """a *= 2."""
    i = ABSOLUTE_POS
    if i < len(a):
        a[i] = a[i] * 2.0


def scale_by(dim: int, k: float = 3.0) -> Tunable:
    """A candidate: out = a * k with cubes of ``dim`` units."""
    def run(c: ComputeClient, a: object) -> object:
        assert hasattr(a, "shape")
        n = a.shape[0]
        out = c.empty(n, np.float32)
        kernels.scale.launch(c, -(-n // dim), dim, a, out, k)
        return out
    return Tunable(f"scale{dim}" if k == 3.0 else f"scale{dim}x{k}", run,
                   [KernelSpec(kernels.scale, dim)])


def size_key(a: object) -> int:
    """The autotune key of one buffer: its length, anchored."""
    assert hasattr(a, "shape")
    return anchor(a.shape[0])


@pytest.fixture
def tuner() -> LocalTuner:
    """A tuner no other test has used."""
    return local_tuner(f"test-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def client() -> ComputeClient:
    return create_client("cpu")


@pytest.fixture
def data() -> np.ndarray:
    return np.random.default_rng(7).standard_normal(N).astype(np.float32)


@pytest.fixture(autouse=True)
def autotune_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CUBECL_AUTOTUNE", raising=False)
    reload_config()
    yield
    switch_environment(None)


def _stored(tuner: LocalTuner) -> list[TuneEntry]:
    db = SqliteStore.open(environment_database())
    return [e for e in TuneCache(db).entries() if e.tuner == tuner.name]


# ------------------------------------------------------------- key helpers


def test_anchor_rounds_up_to_a_power_of_two() -> None:
    assert [anchor(x) for x in (0, 1, 2, 3, 5, 1000, 1024, 1025)] == \
        [1, 1, 2, 4, 8, 1024, 1024, 2048]
    assert anchor(3, min=16) == 16
    assert anchor(5000, max=4096) == 4096
    with pytest.raises(ValueError, match="negative"):
        anchor(-1)


@dataclass(frozen=True)
class MatmulKey:
    m: int
    n: int


def test_key_text_is_canonical_json() -> None:
    assert key_text((1024, "f32")) == '[1024,"f32"]'
    assert key_text(MatmulKey(64, 128)) == '{"__type__":"MatmulKey","m":64,"n":128}'
    with pytest.raises(TypeError, match="cannot be stored"):
        key_text((object(),))


def test_a_set_needs_unique_candidates() -> None:
    with pytest.raises(ValueError, match="at least one"):
        TunableSet([], key=size_key)
    with pytest.raises(ValueError, match="repeated: scale32"):
        TunableSet([scale_by(32), scale_by(32)], key=size_key)


# ------------------------------------------------------------- tuning


def test_a_miss_times_every_candidate_and_returns_the_right_result(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray) -> None:
    tunables = tuner.init(lambda: TunableSet([scale_by(32), scale_by(64), scale_by(128)],
                                             key=size_key))
    out = tuner.execute(client, tunables, client.create(data))
    np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    (record,) = tuner.records()
    assert record.outcome == "tuned"
    assert set(record.entry.timings) == {"scale32", "scale64", "scale128"}
    assert all(t > 0 for t in record.entry.timings.values())
    assert record.timing_runs == 3 * record.entry.samples >= 9
    assert record.entry.key == "1024" and record.entry.winner in tunables.names
    # Known now: more calls time nothing, and a size of the same anchor shares it.
    for n in (N, 700):
        out = tuner.execute(client, tunables, client.create(data[:n]))
        np.testing.assert_array_equal(client.read(out), data[:n] * np.float32(3))
    assert len(tuner.records()) == 1
    (stored,) = _stored(tuner)
    assert stored == record.entry


def test_init_builds_the_set_once(tuner: LocalTuner) -> None:
    built: list[int] = []

    def build() -> TunableSet:
        built.append(1)
        return TunableSet([scale_by(32)], key=size_key)

    assert tuner.init(build) is tuner.init(build)
    assert built == [1]
    assert local_tuner(tuner.name) is tuner


def test_failing_candidates_are_excluded_with_their_errors(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray) -> None:
    def broken(c: ComputeClient, a: object) -> object:
        raise RuntimeError("this candidate cannot run")

    too_big = client.capabilities.max_cube_dim * 2
    tunables = TunableSet([Tunable("broken", broken), scale_by(too_big), scale_by(64),
                           scale_by(32)], key=size_key)
    out = tuner.execute(client, tunables, client.create(data))
    np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    (record,) = tuner.records()
    assert record.entry.errors["broken"] == "RuntimeError: this candidate cannot run"
    assert record.entry.errors[f"scale{too_big}"].startswith("LaunchError")
    assert set(record.entry.timings) == {"scale64", "scale32"}
    assert record.winner in ("scale64", "scale32")


def test_no_working_candidate_is_an_autotune_error(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray) -> None:
    def broken(c: ComputeClient, a: object) -> object:
        raise RuntimeError("nope")

    tunables = TunableSet([Tunable("a", broken), Tunable("b", broken)], key=size_key)
    with pytest.raises(AutotuneError, match="no candidate could run") as info:
        tuner.execute(client, tunables, client.create(data))
    assert info.value.errors == {"a": "RuntimeError: nope", "b": "RuntimeError: nope"}


def test_the_check_excludes_a_candidate_that_disagrees_with_the_first(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray) -> None:
    wrong = scale_by(32, k=3.5)
    tunables = TunableSet([scale_by(64), wrong, scale_by(128)], key=size_key, check=True)
    out = tuner.execute(client, tunables, client.create(data))
    np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    (record,) = tuner.records()
    assert "output disagrees with scale64's" in record.entry.errors[wrong.name]
    assert wrong.name not in record.entry.timings and record.winner != wrong.name


def test_in_place_candidates_never_touch_the_callers_buffer_while_timed(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray) -> None:
    def doubling(dim: int) -> Tunable:
        def run(c: ComputeClient, a: object) -> None:
            double_in_place.launch(c, -(-N // dim), dim, a)
        return Tunable(f"double{dim}", run, [KernelSpec(double_in_place, dim)])

    tunables = TunableSet([doubling(32), doubling(256)], key=size_key, check=True)
    a = client.create(data)
    assert tuner.execute(client, tunables, a) is None
    # Timing ran on copies: the caller's buffer was doubled once, by its own call.
    np.testing.assert_array_equal(client.read(a), data * 2)
    assert set(tuner.records()[0].entry.timings) == {"double32", "double256"}


def test_two_threads_on_one_new_key_tune_it_once(
        tuner: LocalTuner, data: np.ndarray) -> None:
    tunables = TunableSet([scale_by(32), scale_by(64)], key=size_key)
    clients = [create_client("cpu"), create_client("cpu")]
    barrier = threading.Barrier(2)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work(c: ComputeClient) -> None:
        try:
            a = c.create(data)
            barrier.wait()
            results.append(c.read(tuner.execute(c, tunables, a)))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results:
        np.testing.assert_array_equal(got, data * np.float32(3))
    # One tuner per device, shared by both clients: one tuning.
    assert tuner.tuner(clients[0]) is tuner.tuner(clients[1])
    assert [r.outcome for r in tuner.records()] == ["tuned"]


def test_an_environment_switch_resets_what_the_process_holds(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray) -> None:
    tunables = TunableSet([scale_by(32), scale_by(64)], key=size_key)
    a = client.create(data)
    tuner.execute(client, tunables, a)
    switch_environment("elsewhere")
    tuner.execute(client, tunables, a)  # a new environment: nothing stored there
    switch_environment(None)
    out = tuner.execute(client, tunables, a)  # back: the first tuning is stored
    np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    assert [r.outcome for r in tuner.records()] == ["tuned", "tuned", "stored"]
    assert tuner.records()[2].timing_runs == 0


def test_autotune_off_runs_the_first_candidate_without_timing(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBECL_AUTOTUNE", "off")
    reload_config()
    tunables = TunableSet([scale_by(128), scale_by(32)], key=size_key)
    out = tuner.execute(client, tunables, client.create(data))
    np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    (record,) = tuner.records()
    assert (record.outcome, record.winner, record.timing_runs) == ("off", "scale128", 0)
    assert not environment_database().exists() or not _stored(tuner)


def test_autotune_force_tunes_again_and_overwrites(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tunables = TunableSet([scale_by(32), scale_by(64)], key=size_key)
    a = client.create(data)
    tuner.execute(client, tunables, a)
    (first,) = _stored(tuner)
    monkeypatch.setenv("CUBECL_AUTOTUNE", "force")
    reload_config()
    tuner.execute(client, tunables, a)
    tuner.execute(client, tunables, a)  # once per process: the forced result is kept
    assert [r.outcome for r in tuner.records()] == ["tuned", "forced"]
    (second,) = _stored(tuner)
    assert second.created > first.created and second == tuner.records()[1].entry


def test_autotune_mode_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUBECL_AUTOTUNE", "sometimes")
    with pytest.raises(ValueError, match="expected one of on, off, force"):
        reload_config()
    monkeypatch.delenv("CUBECL_AUTOTUNE")
    (tmp_path / "cubecl.toml").write_text('[autotune]\nmode = "off"\n')
    monkeypatch.chdir(tmp_path)
    assert reload_config().autotune == "off"


# ------------------------------------------------------------- the tune cache


def _entry(winner: str, created: float = 1.0) -> TuneEntry:
    return TuneEntry(tuner="t", backend="cpu", variant="v", device="d", key="[8]",
                     digest="abc", candidates=("x", "y"), winner=winner,
                     timings={"x": 1e-3, "y": 2e-3}, samples=3, method="system",
                     created=created)


def test_the_first_writer_wins_and_force_overwrites(tmp_path: Path) -> None:
    cache = TuneCache(SqliteStore.open(tmp_path / "db.sqlite3"))
    assert cache.put(_entry("x")) == _entry("x")
    # Another process, later, with another winner: the stored one stands.
    assert cache.put(_entry("y", 2.0)) == _entry("x")
    assert cache.get("cpu", "v", "t", "d", "abc", "[8]") == _entry("x")
    cache.replace(_entry("y", 3.0))
    assert cache.get("cpu", "v", "t", "d", "abc", "[8]") == _entry("y", 3.0)
    assert cache.clear(tuner="other") == 0 and cache.clear(tuner="t") == 1
    assert cache.entries() == []


def test_an_entry_moved_to_another_key_is_purged_not_believed(tmp_path: Path) -> None:
    db = SqliteStore.open(tmp_path / "db.sqlite3")
    cache = TuneCache(db)
    cache.put(_entry("x"))
    value = db.get(namespace("cpu", "v", "t"), "d|abc|[8]")
    assert value is not None
    db.put(namespace("cpu", "v", "t"), "d|abc|[16]", value.value)
    assert cache.get("cpu", "v", "t", "d", "abc", "[16]") is None
    assert db.get(namespace("cpu", "v", "t"), "d|abc|[16]") is None
    assert db.verify() == []


def test_with_caching_off_tuning_stays_in_memory(
        tuner: LocalTuner, client: ComputeClient, data: np.ndarray,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBECL_COMPILATION_CACHE", "0")
    reload_config()
    tunables = TunableSet([scale_by(32), scale_by(64)], key=size_key)
    out = tuner.execute(client, tunables, client.create(data))
    np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    assert [r.outcome for r in tuner.records()] == ["tuned"]
    assert not environment_database().exists() or _stored(tuner) == []


CHILD = """
import json, os, numpy as np
from helpers import kernels
from cubecl_server.client import create_client
from cubecl_server.tune import KernelSpec, Tunable, TunableSet, anchor, local_tuner

def scale_by(dim):
    def run(c, a):
        out = c.empty(a.shape[0], np.float32)
        kernels.scale.launch(c, -(-a.shape[0] // dim), dim, a, out, 3.0)
        return out
    return Tunable(f"scale{dim}", run, [KernelSpec(kernels.scale, dim)])

dims = [int(d) for d in os.environ["DIMS"].split(",")]
tuner = local_tuner("scale")
tunables = tuner.init(lambda: TunableSet([scale_by(d) for d in dims],
                                         key=lambda a: anchor(a.shape[0])))
c = create_client("cpu")
data = np.arange(1000, dtype=np.float32)
got = c.read(tuner.execute(c, tunables, c.create(data)))
assert np.array_equal(got, data * 3), got[:8]
print(json.dumps([r.to_dict() for r in tuner.records()]))
"""


def test_a_fresh_process_uses_the_stored_winner_and_times_nothing() -> None:
    first = last_json_line(run_python(CHILD, {"DIMS": "32,64,128"}))
    assert [r["outcome"] for r in first] == ["tuned"] and first[0]["timing_runs"] > 0
    second = last_json_line(run_python(CHILD, {"DIMS": "32,64,128", "CUBECL_LOG": "info"}))
    assert [(r["outcome"], r["timing_runs"]) for r in second] == [("stored", 0)]
    assert second[0]["winner"] == first[0]["winner"]
    assert second[0]["timings"] == first[0]["timings"]
    # A changed candidate set is another entry: tuned again, the old one kept.
    third = last_json_line(run_python(CHILD, {"DIMS": "32,64,128,256"}))
    assert [r["outcome"] for r in third] == ["tuned"]
    assert set(third[0]["timings"]) == {"scale32", "scale64", "scale128", "scale256"}
    assert len(TuneCache(SqliteStore.open(environment_database())).entries()) == 2


def test_tuning_is_logged_at_info() -> None:
    proc = run_python(CHILD, {"DIMS": "32,64", "CUBECL_LOG": "info"})
    assert "autotune scale 1024 on cpu" in proc.stderr and "tuned ->" in proc.stderr


# ------------------------------------------------------------- the command line


def test_tune_ls_and_clear(tuner: LocalTuner, client: ComputeClient, data: np.ndarray,
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "ls"]) == 0
    assert "no tune results yet" in capsys.readouterr().out
    tunables = TunableSet([scale_by(32), scale_by(64)], key=size_key)
    tuner.execute(client, tunables, client.create(data))
    winner = tuner.records()[0].winner
    assert main(["tune", "ls", "--wide"]) == 0
    out = capsys.readouterr().out
    assert tuner.name in out and " 1024 " in out and f"{winner} *" in out and " ms" in out
    # A row per candidate, against the winner: the comparison stays whole in 100 columns.
    assert main(["tune", "ls"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert max(map(len, rows)) <= 100
    assert any(f"{winner} *" in r and "1.00x" in r for r in rows)
    assert sum("scale32" in r or "scale64" in r for r in rows) == 2
    assert main(["tune", "ls", "--json", "--tuner", tuner.name]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["winner"] == winner and set(listed["timings"]) == {"scale32", "scale64"}
    assert main(["tune", "ls", "--json", "--backend", "opencl"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["tune", "clear", "--tuner", tuner.name]) == 0
    assert "deleted 1 tune results" in capsys.readouterr().out
    assert _stored(tuner) == []


@pytest.mark.parametrize("forged", ["a winner that is no candidate", "other candidates"])
def test_a_stored_entry_that_names_no_candidate_is_replaced(
        forged: str, tuner: LocalTuner, client: ComputeClient, data: np.ndarray,
        caplog: pytest.LogCaptureFixture) -> None:
    tunables = TunableSet([scale_by(32), scale_by(64)], key=size_key)
    a = client.create(data)
    tuner.execute(client, tunables, a)
    (real,) = _stored(tuner)
    # A forged row, checksummed and bound to its place: a candidate list that names
    # its winner, yet not a candidate of the set the digest keys.
    names = (*real.candidates, "ghost") if forged == "other candidates" else ("ghost",)
    TuneCache(SqliteStore.open(environment_database())).replace(
        dataclasses.replace(real, candidates=names, winner="ghost"))
    for _ in range(2):
        tuner.forget()  # as a new process: nothing known but what is stored
        out = tuner.execute(client, tunables, a)
        np.testing.assert_array_equal(client.read(out), data * np.float32(3))
    outcomes = [r.outcome for r in tuner.records()]
    assert outcomes[-2:] == ["tuned", "stored"], outcomes
    (replaced,) = _stored(tuner)
    assert replaced.winner in tunables.names and replaced.candidates == tunables.names
    assert sum("not one of its candidates" in r.getMessage() for r in caplog.records) == 1
