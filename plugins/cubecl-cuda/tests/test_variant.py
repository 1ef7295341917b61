"""Variant keying: the architecture and NVRTC version name what an artifact is for, and
artifacts of two variants never share; the whole compile path runs without a GPU."""

from __future__ import annotations

import json

import irgen
import pytest
from cubecl_cuda import compile_only_archs, compile_only_compiler, nvrtc
from cubecl_cuda.artifact import (
    STORE_NAMES,
    CompileOnlyTarget,
    CudaArtifactCompiler,
    parse_arch,
    split_payload,
)
from cuda_support import ARCHS

from cubecl_server.client import create_client
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.key import ArtifactId, KernelCacheKey, build_id_hash
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.compiler.record import (
    CompilationBatchRecord,
    CompilationOutcome,
    CompilationRecord,
    CompilationRecording,
)
from cubecl_server.compiler.store import compilation_store
from cubecl_server.errors import ArtifactRejected
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.kernel import CompiledKernel, CubeDim

NVRTC = "{}.{}".format(*nvrtc.version())


def compile_only_loader(arch: str) -> KernelLoader:
    """The KernelLoader of a compile-only client: the core's, over the plugin's hooks."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUBECL_CUDA_ARCH", arch)
        return create_client("cuda", compile_only=True).loader


def _id() -> ArtifactId:
    return ArtifactId(KernelId.of(irgen.keyword_kernel()), CubeDim(64), ExecutionMode.CHECKED)


class _Keep:
    """A Recorder that keeps the records in a list."""

    def __init__(self) -> None:
        self.records: list[CompilationRecord] = []

    def record(self, record: CompilationRecord) -> None:
        self.records.append(record)

    def record_batch(self, batch: CompilationBatchRecord) -> None:
        """Batches add nothing these tests look at."""


def _get(loader: KernelLoader) -> tuple[Artifact, CompilationOutcome]:
    """Obtain the test kernel through a loader; its artifact and how it was obtained."""
    keep = _Keep()
    loader.recorder = keep
    artifact = loader.get(_id())
    return artifact, keep.records[-1].outcome


def test_variant_is_exact_arch_and_nvrtc_version() -> None:
    """``sm_90-nvrtc13.5``: never a rounded capability, never without the compiler."""
    assert [compile_only_compiler(a).variant for a in ARCHS] == [
        f"{a}-nvrtc{NVRTC}" for a in ARCHS]
    assert compile_only_compiler("sm_86").variant != compile_only_compiler("sm_89").variant
    assert compile_only_compiler("sm_90a").variant == f"sm_90a-nvrtc{NVRTC}"


def test_sm80_and_sm90_artifacts_differ_and_never_share() -> None:
    """Same kernel, two architectures: different cubins, PTX targets and headers, and
    stores in different namespaces, so one's entry is never the other's hit."""
    a80, a90 = (compile_only_compiler(a) for a in ARCHS)
    arts = []
    for ac in (a80, a90):
        rec = CompilationRecording(False, "k", "cuda", ac.variant)
        arts.append(ac.finalize(ac.lower(irgen.keyword_kernel(), CubeDim(64),
                                         ExecutionMode.CHECKED, rec), rec))
    (c80, p80), (c90, p90) = (split_payload(a) for a in arts)
    assert c80 != c90 and b".target sm_80" in p80 and b".target sm_90" in p90
    assert [a.header["arch"] for a in arts] == list(ARCHS)
    assert a80.source(_lowered(a80)) != a90.source(_lowered(a90))

    s80, s90 = (compilation_store("cuda", ac.variant, STORE_NAMES) for ac in (a80, a90))
    assert s80 is not None and s90 is not None
    assert s80.kernels_namespace != s90.kernels_namespace
    key = KernelCacheKey.of(_id(), build_id_hash("cubecl_cuda"))
    assert s80.put(key, arts[0])
    assert s90.get(key) is None and s80.get(key) == arts[0]
    with pytest.raises(ArtifactRejected, match="offered to"):
        CompileOnlyTarget(a90.arch).load(arts[0])


def _lowered(ac: CudaArtifactCompiler) -> CompiledKernel:
    rec = CompilationRecording(False, "k", "cuda", "v")
    return ac.lower(irgen.keyword_kernel(), CubeDim(64), ExecutionMode.CHECKED, rec)


def test_source_key_holds_every_finalize_input() -> None:
    """``source()`` opts in to reuse with the options, arch, NVRTC and headers."""
    ac = compile_only_compiler("sm_80")
    head, _, src = ac.source(_lowered(ac)).partition(b"\n")
    meta = json.loads(head)
    assert meta["nvrtc"] == NVRTC and "--gpu-architecture=sm_80" in meta["options"]
    assert "--fmad=false" in meta["options"] and len(meta["headers"]) == 16
    assert src.decode().startswith("// Kernel 'template' lowered by cubecl-cuda")


def test_compile_path_without_a_gpu() -> None:
    """Through the core's KernelLoader: compiled cold, loaded warm from the store,
    rekeyed when only the build id changes, and a corrupt entry purged and rebuilt."""
    first, outcome = _get(compile_only_loader("sm_80"))
    assert outcome is CompilationOutcome.COMPILED
    again, outcome = _get(compile_only_loader("sm_80"))
    assert outcome is CompilationOutcome.LOADED and again == first
    _, outcome = _get(compile_only_loader("sm_90"))
    assert outcome is CompilationOutcome.COMPILED  # another variant: nothing shared


def test_rekey_and_corrupt_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new build id with unchanged lowering reuses the artifact (REKEYED); an entry
    the target refuses is purged and compiled again."""
    first, _ = _get(compile_only_loader("sm_90"))
    monkeypatch.setenv("CUBECL_BUILD_ID", "another build")
    loader = compile_only_loader("sm_90")
    rekeyed, outcome = _get(loader)
    assert outcome is CompilationOutcome.REKEYED and rekeyed == first

    monkeypatch.setenv("CUBECL_BUILD_ID", "a third build")
    loader = compile_only_loader("sm_90")
    store = loader.target.store
    assert store is not None
    key = KernelCacheKey.of(_id(), loader.build_id)
    assert store.put(key, Artifact("cuda-cubin", b"junk", {"cubin_bytes": 2, "ptx_bytes": 2,
                                                          "arch": "sm_90"}))
    rebuilt, _ = _get(loader)
    assert rebuilt == first and store.get(key) == first


def test_arch_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``CUBECL_CUDA_ARCH`` chooses what a device-less run compiles for."""
    assert compile_only_archs() == ["sm_80", "sm_90"]
    assert compile_only_compiler().arch == "sm_90"
    monkeypatch.setenv("CUBECL_CUDA_ARCH", "sm_86, 8.9")
    assert compile_only_archs() == ["sm_86", "sm_89"]
    assert compile_only_compiler().arch == "sm_86"


@pytest.mark.parametrize("text, arch", [("sm_90", "sm_90"), ("90", "sm_90"), ("9.0", "sm_90"),
                                        ("SM_100a", "sm_100a"), ("sm_120f", "sm_120f")])
def test_parse_arch(text: str, arch: str) -> None:
    """Architecture spellings normalise to ``sm_XX``."""
    assert parse_arch(text) == arch


@pytest.mark.parametrize("text", ["sm_60", "compute_90", "hopper", ""])
def test_parse_arch_refuses(text: str) -> None:
    """Virtual targets, names and pre-Volta architectures are refused."""
    with pytest.raises(ValueError):
        parse_arch(text)
