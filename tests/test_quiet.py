"""Quiet set-up: the exporters show progress lines and a summary; the libraries' INFO logs,
warnings and prints appear only with ``--verbose`` (and on failure, replayed)."""

from __future__ import annotations

import logging
import warnings

import pytest

from edge_rag.cli import build_parser

export = pytest.importorskip("edge_rag_export")


def chatter() -> None:
    """What optimum, the quantizer and torch's tracer print during an export."""
    logging.getLogger("onnxruntime.quantization").warning("Please consider pre-processing")
    logging.getLogger("root").info("Quantization parameters for tensor ...")
    warnings.warn("TracerWarning: converting a tensor to a Python boolean", stacklevel=1)
    print("Exporting model ... done")


def run(verbose: bool) -> list[warnings.WarningMessage]:
    export.set_verbose(verbose)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with export.quiet():
                chatter()
    finally:
        export.set_verbose(False)
    return caught


def test_quiet_drops_logs_warnings_and_prints(capsys, caplog) -> None:
    caplog.set_level(logging.INFO)
    caught = run(verbose=False)
    assert capsys.readouterr().out == "" and caplog.records == [] and caught == []


def test_verbose_lets_them_through(capsys, caplog) -> None:
    caplog.set_level(logging.INFO)
    caught = run(verbose=True)
    assert "Exporting model" in capsys.readouterr().out
    assert len(caplog.records) == 2 and len(caught) == 1


def test_a_failure_replays_what_was_swallowed(capsys) -> None:
    with pytest.raises(RuntimeError), export.quiet():
        print("the line that explains the failure")
        raise RuntimeError("export failed")
    assert "the line that explains the failure" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["embedder", "slm", "planner"])
def test_every_exporter_takes_verbose(kind: str) -> None:
    assert build_parser().parse_args(["export", kind, "--verbose"]).verbose
