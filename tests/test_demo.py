"""The demo runs from the repository alone: the sample corpus in export/demo/ (LiHua-World, MIT,
attributed) holds the evidence of the README's question, and bootstrap's demo indexes it."""

from __future__ import annotations

import json
from pathlib import Path

from edge_rag import EdgeRAG

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "export" / "demo"
CORPUS = DEMO / "LiHua-World"


def test_the_sample_corpus_ships_with_its_licence_and_questions() -> None:
    files = sorted(CORPUS.rglob("*.txt"))
    assert 24 <= len(files) <= 60
    licence = (DEMO / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in licence and "HKUDS/MiniRAG" in licence
    headers = {f.read_text(encoding="utf-8").splitlines()[0].removeprefix("Time: ") for f in files}
    for question in json.loads((DEMO / "questions.json").read_text(encoding="utf-8")):
        assert set(question["evidence"].split("<and>")) <= headers, question


def test_bootstrap_demo_needs_nothing_outside_the_clone() -> None:
    script = (ROOT / "export" / "bootstrap.sh").read_text(encoding="utf-8")
    assert "export/demo/LiHua-World" in script and "../shared" not in script


def test_the_demo_question_finds_its_evidence(tmp_path: Path, model_folder) -> None:
    question = json.loads((DEMO / "questions.json").read_text(encoding="utf-8"))[0]
    assert question["answer"] == "5:30 PM"
    with EdgeRAG.open(tmp_path / "demo-index", progress=False) as rag:
        report = rag.insert(CORPUS)
        assert report.ok and len(report.added) == len(list(CORPUS.rglob("*.txt")))
        found = rag.retrieve(question["question"], method="vector", top_k=3)
    assert any(c.source.endswith("week1/20260105_1400.txt") for c in found.chunks)
    assert any("5:30 PM" in c.text for c in found.chunks)
