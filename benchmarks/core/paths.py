"""Where the benchmarks read and write: this checkout, the shared data sets, results, indexes."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"
INDEXES = ROOT / "benchmarks" / ".indexes"

