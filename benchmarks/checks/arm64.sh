#!/usr/bin/env bash
# The runtime on aarch64, under qemu user-mode emulation, recorded in benchmarks/results/arm64.json.
#
#   bash benchmarks/checks/arm64.sh            # every step below; each is skipped when already done
#   bash benchmarks/checks/arm64.sh root       # only: the arm64 Debian root (debootstrap, ~5 min)
#   bash benchmarks/checks/arm64.sh venv       # only: the runtime's aarch64 wheels in a venv inside it
#   bash benchmarks/checks/arm64.sh run        # only: tests, probe, answer inside, then the JSON
#
# Run as root on a Debian/Ubuntu x86-64 host with the repository's .venv set up and the models exported
# (bash export/bootstrap.sh dev). The "board" gets the runtime's wheel, its runtime dependencies from PyPI
# and copies of the int8 model folders: no torch, no export toolchain. Emulated numeric work is ~400x
# slower than native, so the run is small by design (runtime tests that need no export, a dozen short
# documents, a handful of questions, one answer of at most 16 tokens, then that index encrypted with
# SQLCipher and searched again: the [encrypt] extra's aarch64 wheel); expect 30-60 min on 2 cores.
# Knobs: ARM64_ROOT (default /var/tmp/edge-rag-arm64), ARM64_MIRROR (default: the mirror apt uses),
# EDGE_RAG_HOME (models home), ARM64_SLM (default smollm2-135m-int8), QEMU_CPU (see below).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
STEP="${1:-all}"
if [ "$STEP" = "-h" ] || [ "$STEP" = "--help" ]; then
  echo "usage: bash benchmarks/checks/arm64.sh [all|root|venv|run|json]  (python -m benchmarks arm64 [STEP])"
  sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "benchmarks/checks/arm64.sh"
  exit 0
fi
ROOT="${ARM64_ROOT:-/var/tmp/edge-rag-arm64}"
HOME_MODELS="${EDGE_RAG_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-rag}/models"
SLM="${ARM64_SLM:-smollm2-135m-int8}"
HOST_PY="${EDGE_RAG_VENV:-.venv}/bin/python"
OUT="benchmarks/results/arm64.json"
WORK="$ROOT/work"          # inside the root: /work
# qemu's default CPU is "max"; its SVE makes onnxruntime and usearch pick kernels that are slow (or crash,
# with cortex-a72) under emulation: max without SVE runs both.
export QEMU_CPU="${QEMU_CPU:-max,sve=off}"

step() { printf '\n==> %s\n' "$*" >&2; }
stamp() { date +%s; }

mirror() {
  # The Debian mirror apt already uses (deb822 or one-line sources), else deb.debian.org.
  local uri
  uri="$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')"
  [ -n "$uri" ] || uri="$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $2}')"
  echo "${ARM64_MIRROR:-${uri:-http://deb.debian.org/debian}}"
}

host_tools() {
  if ! command -v debootstrap >/dev/null || ! [ -x /usr/bin/qemu-aarch64-static ]; then
    step "installing qemu-user-static, debootstrap and binfmt-support on the host"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      qemu-user-static debootstrap binfmt-support >/dev/null
  fi
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64 2>/dev/null || true
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { echo "binfmt for qemu-aarch64 is not registered" >&2; exit 1; }
}

make_root() {
  if [ -x "$ROOT/usr/bin/python3" ] && [ -e "$ROOT/.edge-rag-root-done" ]; then
    step "arm64 root present: $ROOT"; return
  fi
  step "debootstrap: arm64 Debian bookworm (minbase + python3) into $ROOT from $(mirror)"
  local t0; t0=$(stamp)
  debootstrap --arch=arm64 --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates bookworm "$ROOT" "$(mirror)" \
    > "$ROOT.debootstrap.log" 2>&1 || { tail -20 "$ROOT.debootstrap.log" >&2; exit 1; }
  echo "$(( $(stamp) - t0 ))" > "$ROOT/.edge-rag-root-done"
}

mount_root() {
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"
  mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
  mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
  # No /sys: onnxruntime's cpuinfo then warns at start (it cannot parse the CPU lists), but with the
  # host's /sys bound in it reads the x86 CPU lists and onnxruntime dies with SIGSEGV at import.
  trap unmount_root EXIT
}

unmount_root() {
  umount "$ROOT/sys" 2>/dev/null || true
  umount "$ROOT/dev" 2>/dev/null || true
  umount "$ROOT/proc" 2>/dev/null || true
}

inside() {
  # Run a command in the arm64 root (every binary in it runs through qemu-aarch64).
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/venv/bin:/usr/bin:/bin LANG=C.UTF-8 \
    QEMU_CPU="$QEMU_CPU" EDGE_RAG_HOME=/work/home PYTHONDONTWRITEBYTECODE=1 "$@"
}

make_venv() {
  if [ -x "$ROOT/venv/bin/edge-rag" ] && [ -e "$ROOT/.edge-rag-venv-done" ]; then
    step "venv in the root present"
    # A root made before the [encrypt] extra: add SQLCipher's aarch64 wheel (sqlcipher3).
    inside /venv/bin/python -c "import sqlcipher3" 2>/dev/null || inside /venv/bin/python -m pip install \
      -q --disable-pip-version-check --root-user-action=ignore --prefer-binary "sqlcipher3>=0.6.4"
    return
  fi
  step "building the edge-rag wheel on the host"
  rm -rf "$WORK/dist" && mkdir -p "$WORK/dist"
  "$HOST_PY" -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/dist" . >/dev/null
  step "inside: python3 -m venv /venv; pip install the wheel (its runtime deps come as aarch64 wheels) + pytest"
  local t0; t0=$(stamp)
  local wheel; wheel="$(basename "$(ls "$WORK"/dist/edge_rag-*.whl)")"
  [ -x "$ROOT/venv/bin/python" ] || inside /usr/bin/python3 -m venv /venv
  inside /venv/bin/python -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --prefer-binary "/work/dist/$wheel[encrypt]" pytest hypothesis
  # A rebuilt wheel keeps its version number: reinstall it so the root runs the code of this checkout.
  inside /venv/bin/python -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --force-reinstall --no-deps "/work/dist/$wheel"
  inside /venv/bin/python -m pip list --format=freeze > "$WORK/pip-freeze.txt"
  echo "$(( $(stamp) - t0 ))" > "$ROOT/.edge-rag-venv-done"
}

stage_files() {
  # Sources for the tests (test_structure reads them), the demo corpus, the full LiHua-World zip where
  # conftest looks for it (ROOT/../shared), and the model folders as a bundle: what a board would get.
  step "copying the tests, the demo corpus and the models ($SLM) into the root"
  rm -rf "$WORK/edge-rag" "$WORK/home" "$WORK/x86" "$WORK"/{junit.xml,probe.json,tests.seconds,probe.seconds}
  mkdir -p "$WORK/edge-rag/benchmarks/checks"
  cp -r pyproject.toml README.md edge_rag tests device_profiles "$WORK/edge-rag/"
  mkdir -p "$WORK/edge-rag/export" && cp -r export/demo "$WORK/edge-rag/export/"
  cp benchmarks/checks/arm64_probe.py "$WORK/edge-rag/benchmarks/checks/"
  find "$WORK/edge-rag" -name __pycache__ -prune -exec rm -rf {} +
  local zip="${EDGE_RAG_DATA:-../shared/datasets}/lihua-world/data/LiHuaWorld.zip"
  if [ -f "$zip" ]; then
    mkdir -p "$WORK/shared/datasets/lihua-world/data" && cp "$zip" "$WORK/shared/datasets/lihua-world/data/"
  fi
  printf '[models]\nslm = "%s"\n' "$SLM" > "$WORK/board.toml"
  EDGE_RAG_HOME="$(dirname "$HOME_MODELS")" PYTHONPATH="$REPO" "$HOST_PY" -m edge_rag.cli bundle \
    --profile "$WORK/board.toml" "$WORK/home" --json > "$WORK/bundle.json"
  # test_embedder compares int8 with the fp32 export: the one folder a board would not need.
  local fp32="$HOME_MODELS/all-MiniLM-L6-v2-fp32"
  [ -d "$fp32" ] && cp -r "$fp32" "$WORK/home/models/"
}

# Runtime tests that need no export toolchain and no large corpus: pure logic, the reader, the layering,
# the light import, constraints, chunking and the embedder on a few sentences.
TESTS="${ARM64_TESTS:-tests/test_reader.py tests/test_structure.py tests/test_import.py tests/test_constraints.py tests/test_chunking.py tests/test_embedder.py}"

run_inside() {
  step "inside: pytest $TESTS"
  local t0; t0=$(stamp)
  inside /bin/sh -c "cd /work/edge-rag && /venv/bin/python -m pytest -q -p no:cacheprovider \
    --junitxml=/work/junit.xml $TESTS" > "$WORK/pytest.log" 2>&1 || true
  tail -3 "$WORK/pytest.log" >&2
  echo "$(( $(stamp) - t0 ))" > "$WORK/tests.seconds"
  step "inside: the probe (index ${ARM64_DOCS:-12} conversations, every method, one answer)"
  t0=$(stamp)
  inside /bin/sh -c "cd /work/edge-rag && /venv/bin/python benchmarks/checks/arm64_probe.py --out /work/probe.json \
    --docs ${ARM64_DOCS:-12} --questions ${ARM64_QUESTIONS:-4} --answer-tokens 16 --slm $SLM" \
    > "$WORK/probe.log" 2>&1 || { tail -20 "$WORK/probe.log" >&2; }
  echo "$(( $(stamp) - t0 ))" > "$WORK/probe.seconds"
}

run_x86() {
  step "the same probe on this x86 machine"
  mkdir -p "$WORK/x86"
  EDGE_RAG_HOME="$(dirname "$HOME_MODELS")" PYTHONPATH="$REPO" "$HOST_PY" benchmarks/checks/arm64_probe.py \
    --out "$WORK/x86/probe.json" --docs "${ARM64_DOCS:-12}" --questions "${ARM64_QUESTIONS:-4}" \
    --answer-tokens 16 --slm "$SLM" > "$WORK/x86/probe.log" 2>&1
}

write_json() {
  step "writing $OUT"
  "$HOST_PY" - "$WORK" "$ROOT" "$OUT" <<'PY'
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path
sys.path[:0] = ["benchmarks/checks", "."]
from arm64_probe import agreement, compare
from benchmarks.core.results import stamp
work, root, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
def read(path, default=None):
    return json.loads(path.read_text()) if path.is_file() else default
def seconds(path):
    return int(path.read_text()) if path.is_file() else None
arm, x86 = read(work / "probe.json", {}), read(work / "x86" / "probe.json", {})
tests = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
if (work / "junit.xml").is_file():
    suite = ET.parse(work / "junit.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total = int(suite.get("tests"))
    tests = {"failed": int(suite.get("failures")), "errors": int(suite.get("errors")),
             "skipped": int(suite.get("skipped"))}
    tests["passed"] = total - sum(tests.values())
same = compare(arm, x86) if arm.get("retrieval") and x86.get("retrieval") else {}
freeze = dict(line.split("==") for line in (work / "pip-freeze.txt").read_text().split() if "==" in line) \
    if (work / "pip-freeze.txt").is_file() else {}
head = stamp("arm64")  # this checkout's commit; the host's machine, kept as "host"
result = {
    **head,
    "command": "bash benchmarks/checks/arm64.sh",
    "compared": "top-3 chunks (in order) of every method for each question, the same probe "
                "(benchmarks/checks/arm64_probe.py) on this x86-64 host; retrieval_agreement says how close",
    "machine": arm.get("machine", "aarch64 (probe did not finish)"), "host": head["machine"],
    "emulation": "qemu-aarch64 user mode (qemu-user-static), Debian bookworm arm64 root, "
                 f"QEMU_CPU={__import__('os').environ.get('QEMU_CPU', '')}",
    "python": arm.get("python"), "onnxruntime": arm.get("onnxruntime") or freeze.get("onnxruntime"),
    "packages": {k: freeze.get(k) for k in ("onnxruntime", "numpy", "usearch", "tokenizers",
                                             "sqlite-utils", "rapidfuzz", "sqlcipher3") if k in freeze},
    "tests": tests,
    "retrieval_same_as_x86": bool(same) and all(same.values()),
    "retrieval_same_by_method": same,
    "retrieval_agreement": agreement(arm, x86) if same and "question_vectors" in arm else {},
    "scores_arm64": arm.get("scores"), "scores_x86": x86.get("scores"),
    "questions": arm.get("questions") or x86.get("questions"),
    "answer": arm.get("answer"), "answer_x86": x86.get("answer"), "answer_gold": x86.get("answer_gold"),
    "encryption": arm.get("encryption"), "encryption_x86": x86.get("encryption"),
    "seconds": {"debootstrap": seconds(root / ".edge-rag-root-done"),
                "venv_pip_install": seconds(root / ".edge-rag-venv-done"),
                "tests": seconds(work / "tests.seconds"), "probe": seconds(work / "probe.seconds"),
                "probe_stages_arm64": arm.get("seconds"), "probe_stages_x86": x86.get("seconds")},
}
out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
print(json.dumps({k: result[k] for k in ("machine", "tests", "retrieval_same_as_x86", "answer", "encryption")}))
PY
}

main() {
  host_tools
  case "$STEP" in
    root) make_root ;;
    venv) make_root; mount_root; make_venv ;;
    run) mount_root; stage_files; run_x86; run_inside; write_json ;;
    all) make_root; mount_root; make_venv; stage_files; run_x86; run_inside; write_json ;;
    json) write_json ;;
    *) echo "usage: bash benchmarks/checks/arm64.sh [all|root|venv|run|json]" >&2; exit 2 ;;
  esac
}

main
