"""The adaptive planner (§3.3): rule cues, the exported int8 head against its fp32 graph on the dev
queries, the SLM planner, and ``method="auto"`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edge_rag import EdgeRAG
from edge_rag.cli import main
from edge_rag.errors import SettingsError
from edge_rag.models import Embedder, ModelFolder
from edge_rag.plan import LABELS, PlannerHead
from edge_rag.plan.features import CHEAP_NAMES, cheap_features, exact_names
from edge_rag.plan.rules import rule_label
from edge_rag.retrieve.keywords import NameMatcher

from .conftest import SMALL_SLM

QUESTION = "What time does Li Hua check in with Adam about moving in?"


@pytest.fixture(scope="module")
def planner_home(tmp_path_factory: pytest.TempPathFactory, model_folder: ModelFolder) -> Path:
    """A models home with the real embedder and a planner head exported from the shipped labels
    (by the CLI, which prints progress lines and a summary, not the libraries' logs and warnings)."""
    pytest.importorskip("edge_rag_export.planner")
    home = tmp_path_factory.mktemp("planner-home")
    (home / "models").mkdir()
    (home / "models" / model_folder.path.name).symlink_to(model_folder.path)
    done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "export", "planner", "--home", str(home)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    assert folder.parent == home / "models" and (folder / "manifest.json").is_file(), done.stdout
    progress = done.stderr.splitlines()
    assert len(progress) <= 6 and all(line.startswith("[export] ") for line in progress), progress
    return home


@pytest.mark.parametrize(("question", "label"), [
    ("Which film was released first, On Body And Soul or Pearl Lust?", "E"),
    ("Who is the father of the director of film Pearl Lust?", "E"),
    ("What did LiHua and AdamSmith talk about?", "D"),
    ("What time does LiHua wake up?", "C"),
    ("what is a good recipe for bread?", "B"),
])
def test_rule_planner_reads_the_papers_cues(question: str, label: str) -> None:
    names = NameMatcher(["Pearl Lust", "On Body and Soul", "LiHua", "AdamSmith"])
    features = cheap_features(question, names)
    assert features.shape == (len(CHEAP_NAMES),) and ((features >= 0) & (features <= 1)).all()
    assert rule_label(features) == label


def test_graph_names_are_found_exactly_not_fuzzily() -> None:
    names = NameMatcher(["Pearl Lust", "On Body and Soul", "LiHua", "Pearl"])
    question = "Which film was released first, On Body And Soul or Pearl Lust, by Li Hua?"
    assert sorted(exact_names(question, names)) == ["On Body and Soul", "Pearl", "Pearl Lust"]
    assert exact_names("Who is Perl Lust?", names) == []  # no spelling variants


def test_exported_head_int8_matches_fp32_on_the_dev_queries(planner_home: Path, model_folder) -> None:
    export = pytest.importorskip("edge_rag_export.planner")
    folder = ModelFolder.open(planner_home / "models" / "planner-af2-int8")
    rows = export.read_labels()
    features = export.feature_matrix(rows, Embedder(model_folder))
    fp32 = ort.InferenceSession(str(folder.path / folder.manifest["fp32_file"]))
    expected = fp32.run(None, {"features": features})[0].argmax(axis=1)
    probabilities = PlannerHead(folder, model_folder.sha256).probabilities(features)
    assert np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-3)
    assert (probabilities.argmax(axis=1) == expected).mean() >= 0.95
    assert folder.manifest["labels"] == list(LABELS) and folder.manifest["cv_accuracy"] > 0


def test_auto_retrieval_records_the_heads_plan(planner_home: Path, lihua_index: Path) -> None:
    with EdgeRAG.open(lihua_index, create=False, models_home=str(planner_home), planner="head") as rag:
        found = rag.retrieve(QUESTION, method="auto")
    plan = found.plan
    assert plan is not None and plan.planner == "head" and plan.label in LABELS
    assert found.method == plan.method and abs(sum(plan.probabilities.values()) - 1) < 1e-2
    assert plan.fallback == (plan.probabilities[plan.label] < rag.settings.planner_threshold)
    assert "plan" in found.timings_ms and found.to_dict()["plan"]["label"] == plan.label


def test_without_an_exported_head_auto_falls_back_to_rules(lihua_index: Path) -> None:
    with EdgeRAG.open(lihua_index, create=False, planner="head", planner_model="no-such-head") as rag, \
            pytest.warns(UserWarning, match="export planner"):
        found = rag.retrieve(QUESTION, method="auto")
    assert found.plan.planner == "rules" and found.plan.method in {"vector", "local", "dual", "topology"}
    assert found.chunks


def test_the_margin_planner_walks_unless_the_nearest_chunk_stands_out(lihua_index: Path) -> None:
    two_events = "Did Li Hua check in with Adam before Adam asked about the moving date?"
    with EdgeRAG.open(lihua_index, create=False, planner="margin") as rag:
        found = rag.retrieve(QUESTION, method="auto")
        cosines = rag.retrieve(QUESTION, method="vector", top_k=5).chunks
        margin = cosines[0].score - cosines[4].score
    assert found.plan.planner == "margin" and rag.settings.planner_margin == 0.14
    assert found.method == ("titles" if margin >= 0.14 else "ppr")
    with EdgeRAG.open(lihua_index, create=False, planner="margin", planner_margin=0.0) as rag:
        near = rag.retrieve(QUESTION, method="auto")
        nearest = rag.retrieve(QUESTION, method="titles")
        ordered = rag.retrieve(two_events, method="auto")
    assert (near.plan.label, near.method) == ("G", "titles")
    assert [c.chunk_id for c in near.chunks] == [c.chunk_id for c in nearest.chunks]
    assert (ordered.plan.label, ordered.method) == ("F", "ppr")  # two events: always the walk
    with EdgeRAG.open(lihua_index, create=False, planner="margin", planner_margin=1.0) as rag:
        assert rag.retrieve(QUESTION, method="auto").method == "ppr"


def test_a_margin_outside_zero_to_one_is_refused(lihua_index: Path) -> None:
    with pytest.raises(SettingsError, match="planner_margin"):
        EdgeRAG.open(lihua_index, create=False, planner_margin=1.5)


def test_a_question_that_names_nothing_walks_unless_its_nearest_chunk_stands_out(lihua_index: Path) -> None:
    nameless = "What time is the power outage in the neighborhood?"
    with EdgeRAG.open(lihua_index, create=False, planner_margin=0.0) as rag:  # every margin passes
        cheap = rag.retrieve(nameless, method="auto")
        titles = rag.retrieve(nameless, method="titles")
    with EdgeRAG.open(lihua_index, create=False, planner_margin=1.0) as rag:  # none passes
        walked = rag.retrieve(nameless, method="auto")
        named = rag.retrieve(QUESTION, method="auto")
    assert named.plan.planner == "names" and (named.plan.label, named.method) == ("F", "ppr")
    assert (cheap.plan.label, cheap.method) == ("G", "titles")
    assert [c.chunk_id for c in cheap.chunks] == [c.chunk_id for c in titles.chunks]
    assert (walked.plan.label, walked.method) == ("F", "ppr")


def test_the_head_answers_without_retrieval_only_when_sure() -> None:
    from edge_rag.plan import NONE_MIN, head_label

    assert head_label({"A": 0.7, "B": 0.2, "F": 0.1}) == "B"
    assert head_label({"A": NONE_MIN, "B": 1 - NONE_MIN}) == "A"
    assert head_label({"A": 1.0}) == "A"


def test_slm_planner_answers_one_letter(lihua_index: Path, slm) -> None:
    with EdgeRAG.open(lihua_index, create=False, planner="slm", slm=SMALL_SLM) as rag:
        chosen = rag.plan(QUESTION)
    assert chosen.planner == "slm" and chosen.label in LABELS


def test_cli_ask_auto_prints_the_plan(lihua_index: Path, slm, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("EDGE_RAG_PROFILES", str(tmp_path))
    (tmp_path / "tiny.toml").write_text(f'slm = "{SMALL_SLM}"\nanswer_max_tokens = 16\n')
    code = main(["ask", QUESTION, "--index", str(lihua_index), "--profile", "tiny", "--method", "auto",
                 "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["label"] in LABELS and out["method"] == out["plan"]["method"]
