"""`edge-rag bundle`: exactly the model folders a profile needs, with sha256 and bytes of every file,
and a bundle that works as the models home of a board."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from edge_rag import EdgeRAG, Settings
from edge_rag.cli import main
from edge_rag.errors import ModelNotFound
from edge_rag.models.bundle import make_bundle, needed_models

from .conftest import SMALL_SLM


def profile(tmp_path: Path, planner: str = "head") -> Path:
    """A board profile with the small SLM (exported for the tests)."""
    path = tmp_path / "board.toml"
    path.write_text(f'[runtime]\nthreads = 2\n[models]\nslm = "{SMALL_SLM}"\nplanner = "{planner}"\n')
    return path


def test_needed_models_follow_the_planner() -> None:
    assert set(needed_models(Settings(planner="head"))) == {"embedder", "planner", "slm"}
    assert set(needed_models(Settings(planner="rules"))) == {"embedder", "slm"}


def test_bundle_copies_exactly_what_the_profile_needs_with_checksums(tmp_path: Path, capsys,
                                                                     model_folder) -> None:
    out = tmp_path / "board"
    assert main(["bundle", "--profile", str(profile(tmp_path)), str(out), "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest == json.loads((out / "bundle.json").read_text())
    settings = Settings()
    assert manifest["models"] == {"embedder": settings.embedder, "planner": settings.planner_model,
                                  "slm": SMALL_SLM}
    assert sorted(p.name for p in (out / "models").iterdir()) == sorted(manifest["models"].values())
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert on_disk == set(manifest["files"]) | {"bundle.json", "SHA256SUMS"}
    assert not [name for name in on_disk if name.endswith(".fp32.onnx")]  # the planner's check graph
    for name, entry in manifest["files"].items():
        data = (out / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    assert manifest["total_bytes"] == sum(f["bytes"] for f in manifest["files"].values())
    sums = dict(line.split("  ")[::-1] for line in (out / "SHA256SUMS").read_text().splitlines())
    assert sums == {n: f["sha256"] for n, f in manifest["files"].items()}


def test_a_bundle_is_the_models_home_of_a_board(tmp_path: Path, model_folder) -> None:
    out = tmp_path / "board"
    make_bundle(profile(tmp_path, planner="rules"), out, progress=False)
    assert not (out / "models" / Settings().planner_model).exists()
    with EdgeRAG.open(tmp_path / "index", profile=out / "board.toml", models_home=str(out),
                      progress=False) as rag:
        rag.insert_text("The boiler is serviced every May.", source="boiler")
        assert rag.retrieve("When is the boiler serviced?").chunks[0].source == "boiler"


def test_bundle_refuses_a_full_folder_and_names_a_missing_export(tmp_path: Path, capsys,
                                                                 model_folder) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert main(["bundle", "--profile", str(profile(tmp_path)), str(tmp_path / "full")]) == 1
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    with pytest.raises(ModelNotFound, match="edge-rag export embedder"):
        make_bundle(profile(tmp_path), tmp_path / "new", home=str(tmp_path / "no-models"))
    assert not (tmp_path / "new").exists()
