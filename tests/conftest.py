"""Shared fixtures: the real exported embedder, small real corpora, fresh index folders."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from edge_rag import EdgeRAG, Settings
from edge_rag.engine import Engine
from edge_rag.models import Embedder, ModelFolder

ROOT = Path(__file__).resolve().parent.parent
DEMO_CHATS = ROOT / "export" / "demo" / "LiHua-World"
SMALL_SLM = "smollm2-135m-int8"
# Two passages a bridge question needs both of ("Where was the director of film Harbor Lights born?").
FILM = ("Harbor Lights is a 1950 drama film directed by Mara Quill. It follows a lighthouse keeper "
        "through one winter.")
DIRECTOR = ("Mara Quill (4 May 1912 – 9 June 1980) was a film director. Quill was born in Tallinn and "
            "studied painting before she made her first film.")
EXPORT_HINT = "run 'edge-rag export embedder' first (the README's test command does)"
DATASETS = ROOT.parent / "shared" / "datasets"
# The few tests that read the benchmark data sets: CI has them beside the clone; a plain clone skips.
needs_datasets = pytest.mark.skipif(not DATASETS.is_dir(), reason=f"needs the benchmark data sets in "
                                    f"{DATASETS} (../shared/datasets beside the clone, as in CI)")


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Default settings without progress bars."""
    return Settings(progress=False)


@pytest.fixture(scope="session")
def model_folder(settings: Settings) -> ModelFolder:
    """The exported int8 embedder; the test run fails loudly when it is missing."""
    path = settings.home / "models" / settings.embedder
    if not (path / "manifest.json").is_file():
        pytest.fail(f"no exported embedder at {path}: {EXPORT_HINT}")
    return ModelFolder.open(path)


@pytest.fixture(scope="session")
def embedder(model_folder: ModelFolder) -> Embedder:
    """The real int8 embedder, loaded once."""
    return Embedder(model_folder, threads=0)


@pytest.fixture(scope="session")
def lihua_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's 35 LiHua-World conversations (real data shipped in ``export/demo/``), copied
    as flat .txt files."""
    out = tmp_path_factory.mktemp("lihua")
    for path in sorted(DEMO_CHATS.rglob("*.txt")):
        (out / path.name).write_bytes(path.read_bytes())
    return out


@pytest.fixture(scope="session")
def lihua_index(tmp_path_factory: pytest.TempPathFactory, lihua_dir: Path, model_folder) -> Path:
    """A read-only index of ``lihua_dir``, built once for the session."""
    path = tmp_path_factory.mktemp("shared-index") / "index"
    with EdgeRAG.open(path, progress=False) as rag:
        assert rag.insert(lihua_dir).ok
    return path


@pytest.fixture()
def engine(tmp_path: Path, model_folder) -> Engine:
    """The parts of a fresh, empty index (store, models, readers), closed after the test."""
    opened = Engine.open(tmp_path / "index", progress=False)
    yield opened
    opened.close()


@pytest.fixture()
def rag(engine: Engine) -> EdgeRAG:
    """A fresh, empty index (the facade over ``engine``, whose parts a test may read)."""
    return EdgeRAG(engine)


@contextmanager
def open_both(path: Path, profile: str | Path | None = None, **overrides) -> Iterator[tuple[EdgeRAG, Engine]]:
    """``EdgeRAG.open`` that also gives the engine under the facade, for a test that reads the
    store or a model directly; both are closed when the block ends."""
    engine = Engine.open(path, profile, **overrides)
    with EdgeRAG(engine) as rag:
        yield rag, engine


@pytest.fixture(scope="session")
def slm(settings: Settings):
    """The real exported SmolLM2-135M with int8 weights (the tight-board SLM)."""
    from edge_rag.models.slm import SLM

    path = settings.home / "models" / SMALL_SLM
    if not (path / "manifest.json").is_file():
        pytest.fail(f"no exported SLM at {path}: run 'edge-rag export slm smollm2-135m' first")
    return SLM.from_path(path, context_tokens=512)


GQA_EXPORT = """
import sys
sys.modules["torch"] = None  # any "import torch" now raises ImportError
sys.modules["transformers"] = None
try:
    import torch  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("torch is importable")
from pathlib import Path
from edge_rag_export.gqa import export_gqa
export_gqa(Path(sys.argv[1]), "smollm2-135m", bits=8, verify=False)
"""


@pytest.fixture(scope="session")
def gqa_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2-135M's GGUF written as an 8-bit GQA graph by a process that cannot import torch."""
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("gqa-home")
    subprocess.run([sys.executable, "-c", GQA_EXPORT, str(home)], check=True,
                   capture_output=True, text=True)
    return home / "models" / "smollm2-135m-q8"


@pytest.fixture(scope="session")
def gqa_slm(gqa_folder: Path):
    """The GQA-graph SmolLM2-135M (8 bits), loaded once; prefill in chunks of 16 tokens."""
    from edge_rag.models.slm import SLM

    return SLM(ModelFolder.open(gqa_folder), context_tokens=512, prefill_chunk=16)
