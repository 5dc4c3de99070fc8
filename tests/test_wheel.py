"""The built wheel works alone: installed in a clean virtualenv without torch, run outside the
checkout, it finds its device profiles (package data), opens an index with ``profile="rpi4"``,
inserts and retrieves with the exported embedder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "edge_rag", "export", "device_profiles")

PROBE = textwrap.dedent("""
    import sys
    import edge_rag
    from edge_rag import EdgeRAG
    from edge_rag.config import find_profile

    assert "site-packages" in edge_rag.__file__, edge_rag.__file__
    print("profile file:", find_profile("rpi4"))
    with EdgeRAG.open("idx", profile="rpi4", progress=False) as rag:
        assert rag.settings.profile == "rpi4" and rag.settings.threads == 4
        rag.insert_text("The boiler in the basement is serviced every May by Hollis.", source="boiler")
        rag.insert_text("Adam moves into the flat on Saturday.", source="flat")
        found = rag.retrieve("When is the boiler serviced?", method="vector", top_k=1)
        print("top source:", found.chunks[0].source)
    for heavy in ("torch", "transformers", "optimum"):
        try:
            __import__(heavy)
        except ImportError:
            continue
        sys.exit(f"{heavy} is importable in the clean venv")
""")


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; fail the test with its output when it fails."""
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user of the installed wheel: no PYTHONPATH, no profile folder override."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "EDGE_RAG_PROFILES", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the sources (the checkout is left untouched)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                         if (ROOT / name).is_dir() else {}))
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, src,
        cwd=src)
    return next(out.glob("edge_rag-*.whl"))


def test_the_wheel_ships_the_device_profiles(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("edge_rag/profiles/")}
    assert shipped == {p.name for p in (ROOT / "device_profiles").glob("*.toml")}
    assert "edge_rag/py.typed" in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: tomli" in metadata and 'python_version < "3.11"' in metadata
    runtime = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")
               and "extra ==" not in line]
    assert runtime and not [line for line in runtime if "torch" in line or "transformers" in line]


def test_the_installed_wheel_opens_an_rpi4_index_outside_the_checkout(wheel: Path, tmp_path: Path,
                                                                      model_folder) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    env = clean_env(venv)
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, cwd=tmp_path, env=env)
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = run(python, "-c", PROBE, cwd=work, env=env)
    assert "top source: boiler" in out
    assert str(venv) in out.split("profile file:")[1].splitlines()[0]
