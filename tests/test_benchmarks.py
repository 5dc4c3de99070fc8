"""The benchmark scripts: every one answers --help, and the planner's labelling rules by hand."""

from __future__ import annotations

import importlib
import json
import subprocess

import numpy as np
import pytest

from benchmarks import common, peers, suite
from benchmarks.common import method_footprint
from benchmarks.datasets import DATASETS
from benchmarks.planner_labels import _knowable, choose_label
from edge_rag import Settings

from .conftest import needs_datasets

SCRIPTS = ["vector_recall", "slm_speed", "answer_accuracy", "retrieval", "graph_build", "planner_labels",
           "planner_eval", "suite", "memory", "peers", "code_speed", "answer_stage", "abstention",
           "slm_options", "gqa_node", "auto_latency", "decode_context", "formats", "folder_titles",
           "serve", "encryption", "injection", "behaviour", "board_slm", "export_memory",
           "scale", "scale_build", "scale_marginal", "scale_density", "answer_rules", "hostile_server"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_script_has_help(name: str, capsys) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0 and "usage" in capsys.readouterr().out


def test_slm_speed_takes_the_runtime_of_an_earlier_commit() -> None:
    from benchmarks.slm_speed import runtime_at

    folder = runtime_at("HEAD")
    assert (folder / "edge_rag" / "models" / "decoder.py").is_file()
    assert not (folder / "benchmarks").exists()  # only the runtime: these benchmarks drive it


def test_labels_take_the_simplest_method_that_works() -> None:
    assert choose_label(True, {"B": 0.0, "C": 0.0, "D": 0.0, "E": 0.0}, False) == ("A", "answer")
    assert choose_label(False, {"B": 1.0, "C": 0.5, "D": 1.0, "E": 1.0}, True) == ("B", "retrieval")
    assert choose_label(False, {"B": 0.5, "C": 0.5, "D": 1.0, "E": 0.5}, False) == ("D", "retrieval")
    assert choose_label(False, {"B": 0.5, "C": 0.5, "D": 0.5, "E": 0.5, "F": 1.0}, True) == ("F", "retrieval")
    assert choose_label(False, {"B": 1.0, "C": 0.5, "D": 0.5, "E": 0.5, "F": 1.0}, True) == ("B", "retrieval")
    assert choose_label(False, {"B": 0.0, "C": 0.0, "D": 0.0, "E": 0.0}, True) == ("E", "prior")
    assert choose_label(False, {"B": 0.0, "C": 0.0, "D": 0.0, "E": 0.0}, False) == ("C", "prior")


def test_a_guess_cannot_earn_label_a() -> None:
    assert not _knowable({"question": "Is Paris in France?", "answer": "Yes"})
    assert not _knowable({"question": "Which came first, Pearl Lust or On Body and Soul?",
                          "answer": "Pearl Lust"})
    assert _knowable({"question": "Where was the director of Flags and Waves born?", "answer": "Toronto"})


def test_soft_targets_spread_over_every_method_that_works() -> None:
    planner = pytest.importorskip("edge_rag_export.planner")
    rows = [{"label": "B", "judge": "retrieval", "recall": {"B": 1.0, "C": 0.5, "D": 1.0, "E": 1.0}},
            {"label": "E", "judge": "prior", "recall": {"B": 0.0, "C": 0.0, "D": 0.0, "E": 0.0}},
            {"label": "F", "judge": "retrieval",
             "recall": {"B": 0.5, "C": 0.0, "D": 0.5, "E": 0.5, "F": 1.0}}]
    # A prior row (no method reaches any evidence) tells nothing: even over every retrieval label.
    assert np.allclose(planner.targets(rows), [[0, 1 / 3, 0, 1 / 3, 1 / 3, 0], [0, .2, .2, .2, .2, .2],
                                               [0, 0, 0, 0, 0, 1]])


def test_profiles_of_one_index_shape_share_a_benchmark_index() -> None:
    lihua = DATASETS["lihua"]
    assert lihua.index_for(Settings.load("rpi4")) == lihua.index_for(Settings.load("dev")) == lihua.index
    assert lihua.index_for(Settings.load("rpi-zero-2w")) == lihua.index  # i8 everywhere now
    assert lihua.index_for(Settings(vector_dtype="f16")).name == "lihua-f16"


def test_each_method_is_charged_the_index_bytes_it_reads(lihua_index) -> None:
    size = method_footprint(lihua_index)
    assert size["none"] == 0 < size["vector"] < size["local"] < size["dual"] == size["topology"]
    stored = [lihua_index / "index.sqlite", *lihua_index.glob("*.usearch")]
    assert size["dual"] == sum(p.stat().st_size for p in stored)


def test_the_suite_refuses_a_profile_that_cannot_fit_before_loading_anything(tmp_path, monkeypatch,
                                                                            capsys) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    monkeypatch.setattr(suite, "RESULTS", tmp_path)
    profile = tmp_path / "tiny-board.toml"
    profile.write_text('[runtime]\nmemory_budget_mb = 64\nmemory_policy = "refuse"\n')
    assert suite.main(["--profile", str(profile), "--dataset", "lihua", "--limit", "2"]) == 3
    assert "does not fit its 64 MiB memory budget" in capsys.readouterr().out
    written = json.loads((tmp_path / "suite_lihua_tiny-board.json").read_text())
    assert written["refused"] and written["memory"]["budget_mb"] == 64


@needs_datasets
def test_every_peer_gets_the_evidence_of_its_questions_and_neighbours_up_to_the_size() -> None:
    asked, corpus = peers.subset("lihua", 2, 12)
    keys = [peers.evidence_key("lihua", d) for d in corpus]
    evidence = {e for q in asked for e in q["evidence"]}
    assert evidence <= set(keys) and len(corpus) == len(set(keys)) == max(12, len(evidence))


def test_peer_recall_counts_distinct_documents_of_the_context() -> None:
    query = {"evidence": ["a", "b"]}
    assert peers.recall(query, ["a", "a", "c", "d", "e", "f", "b"]) == 0.5
    assert peers.recall(query, ["b", "a"]) == 1.0


def test_the_peers_run_with_the_network_forbidden(monkeypatch) -> None:
    import socket

    monkeypatch.setattr(socket.socket, "connect", socket.socket.connect)
    monkeypatch.setattr(socket, "create_connection", socket.create_connection)
    peers._forbid_network()
    with pytest.raises(OSError, match="network access attempted"):
        socket.create_connection(("pypi.org", 443))


def test_every_results_file_is_stamped_with_its_own_name() -> None:
    # A file renamed by hand keeps the stamp of the name its script gave it: regenerate, don't rename.
    stamps = {p.stem: json.loads(p.read_text(encoding="utf-8")).get("benchmark")
              for p in common.RESULTS.glob("*.json")}
    assert not {name: stamp for name, stamp in stamps.items() if stamp != name}


def test_the_shared_writer_stamps_a_file_with_its_name(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    path = common.write_result("retrieval_lihua_example", {"methods": {}})
    assert json.loads(path.read_text(encoding="utf-8"))["benchmark"] == path.stem == "retrieval_lihua_example"


def test_no_answer_cache_is_committed() -> None:
    listed = subprocess.run(["git", "ls-files", "benchmarks/results/cache"], cwd=common.ROOT,
                            capture_output=True, text=True, check=False)
    assert not listed.stdout.strip(), "benchmarks/results/cache/ is a local cache (ignored), not results"


def test_slm_speed_without_llama_cpp_names_the_extra_that_builds_it(monkeypatch, capsys) -> None:
    from benchmarks import slm_speed

    found = slm_speed.importlib.util.find_spec
    monkeypatch.setattr(slm_speed.importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else found(name, *a))
    assert slm_speed.main(["--models", "qwen2.5-coder-0.5b", "--variants", "q4", "llama.cpp"]) == 2
    assert "pip install 'edge-rag[llama]'" in capsys.readouterr().err


def test_the_roofline_counts_what_a_decode_step_reads(tmp_path) -> None:
    onnx = pytest.importorskip("onnx")
    import numpy as np

    from benchmarks.slm_speed import _add_roofline, bus_gbs, onnx_read_mb

    # The embedding table is gathered (one row a token); the projection is read whole.
    table, projection = np.ones((1000, 64), np.float32), np.ones((64, 64), np.float32)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Gather", ["table", "ids"], ["x"]),
         onnx.helper.make_node("MatMul", ["x", "projection"], ["y"])], "step",
        [onnx.helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [1])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 64])],
        [onnx.numpy_helper.from_array(table, "table"),
         onnx.numpy_helper.from_array(projection, "projection")])
    onnx.save(onnx.helper.make_model(graph), tmp_path / "model.onnx")
    assert onnx_read_mb(tmp_path) == projection.nbytes / 2**20
    rows = [{"read_mb": 1000.0, "decode_tps": 20.0}, {"decode_tps": 5.0}]
    _add_roofline(rows, bus=10.0)
    assert rows[0]["read_gbs"] == 21.0 and rows[0]["ceiling_tps"] == 9.5 and "ceiling_tps" not in rows[1]
    assert bus_gbs(2, mib=8, passes=1) > 0


def test_a_cached_answer_is_asked_again_when_the_rules_parse_its_question_otherwise() -> None:
    from benchmarks.common import _stale, rule_questions

    bridge = "Where was the director of film Harbor Lights born?"
    compared = "Which film came out first, Harbor Lights or Cup-Tie Honeymoon?"
    assert rule_questions(bridge, ()) == ["Who is the director of film Harbor Lights?"]
    assert rule_questions(bridge, ("hops",)) == [] and rule_questions("Who is Mara Quill?", ()) == []
    assert rule_questions(compared, ()) == ["When was Harbor Lights released?",
                                            "When was Cup-Tie Honeymoon released?"]
    asks = rule_questions(bridge, ())
    assert _stale(None, []) and not _stale({"asks": asks}, asks) and _stale({"asks": []}, asks)
    # Rows kept before the parse was recorded: stale only where the rules act and asked nothing.
    assert not _stale({"answer": "x"}, []) and not _stale({"hops": [{}]}, asks)
    assert _stale({"answer": "x"}, asks)


@needs_datasets
def test_a_density_family_is_its_first_documents_up_to_lihuas_size() -> None:
    from benchmarks.scale_corpus import documents, text_bytes
    from benchmarks.scale_density import family_documents

    target = text_bytes(documents(1))
    chats = family_documents("scale")
    assert chats[0].source == "scale/world0/0000.txt" and target <= text_bytes(chats) < target + 10_000
    assert text_bytes(family_documents("LiHuaWorld.zip")) == target
    passages = family_documents("multihop")  # smaller than LiHua-World: all of it, nothing else
    assert passages and all(d.source.startswith("multihop/") for d in passages)
