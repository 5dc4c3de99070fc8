"""The command-line options several benchmarks share, and ``FIELD=VALUE`` settings overrides."""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks.core.datasets import DATASETS


def setting(item: str) -> tuple[str, object]:
    """A ``FIELD=VALUE`` settings override, the value read as JSON where it parses (numbers,
    true), else as text."""
    key, _, value = item.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


_UNSET: Any = object()


def options(*, dataset: str | None = None, limit: int | None = _UNSET, limit_help: str = "how many queries",
            profile: str | None = _UNSET, as_is: bool = False, json: bool = False) -> argparse.ArgumentParser:
    """The options several benchmarks take, as an argparse parent (``parents=[options(...)]``), each with
    the benchmark's default: ``--dataset`` (one of ``datasets.DATASETS``), ``--limit`` (``limit_help``
    says of what), ``--profile`` (a device profile name or TOML path), ``--as-is`` (use the benchmark
    index as it is: index nothing, embed nothing) and ``--json`` (print the result as JSON)."""
    parent = argparse.ArgumentParser(add_help=False)
    if dataset is not None:
        parent.add_argument("--dataset", default=dataset, choices=sorted(DATASETS),
                            help="data set (default: %(default)s)")
    if limit is not _UNSET:
        parent.add_argument("--limit", type=int, default=limit, help=f"{limit_help} (default: %(default)s)")
    if profile is not _UNSET:
        parent.add_argument("--profile", default=profile, help="device profile name or TOML path "
                            "(default: %(default)s)")
    if as_is:
        parent.add_argument("--as-is", action="store_true",
                            help="use the benchmark index as it is (index nothing, embed nothing)")
    if json:
        parent.add_argument("--json", action="store_true", help="print the result as JSON, not a table")
    return parent
