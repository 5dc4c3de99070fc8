"""The edge-rag command line: every command has --help, is documented, and --json is stable."""

import json

import pytest

from edge_rag.cli import build_parser, main

COMMANDS = [["export"], ["export", "embedder"], ["export", "slm"], ["export", "planner"], ["index"],
            ["retrieve"], ["ask"], ["chat"], ["delete"], ["documents"], ["stats"], ["compact"], ["graph"],
            ["bundle"], ["sync"], ["serve"]]
COMMANDS += [["encrypt"], ["decrypt"], ["rekey"]]


def _json(capsys, *argv) -> object:
    assert main(["--help"] if not argv else list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: edge-rag " + " ".join(command) in capsys.readouterr().out


def test_parser_lists_exactly_the_documented_commands():
    parser = build_parser()
    top = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert sorted(top.choices) == sorted({c[0] for c in COMMANDS})


def test_index_retrieve_documents_delete_stats_json(tmp_path, lihua_dir, capsys, model_folder):
    index = str(tmp_path / "index")
    files = [str(lihua_dir / "20260105_1400.txt"), str(lihua_dir / "20260106_2000.txt")]
    report = _json(capsys, "index", *files, "--index", index, "--json")
    assert set(report) == {"added", "duplicates", "failed", "warnings", "chunks", "seconds", "graph"}
    assert len(report["added"]) == 2 and report["failed"] == []
    assert report["graph"]["chunks"] == report["chunks"] and report["graph"]["failures"] == 0

    graph = _json(capsys, "graph", "--index", index, "--around", "Li Hua", "--hops", "1")
    assert "LiHua" in {n["name"] for n in graph["nodes"]}
    assert {"source", "target", "kind", "weight", "score", "keywords", "description", "chunks"} == set(
        graph["edges"][0])
    out = tmp_path / "graph.graphml"
    assert main(["graph", "--index", index, "--format", "graphml", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<?xml") and "<edge " in out.read_text()

    found = _json(capsys, "retrieve", "When does Li Hua check in with Adam?", "--index", index,
                  "--top-k", "2", "--json")
    assert {"question", "method", "chunks", "timings_ms"} <= set(found)
    assert set(found["chunks"][0]) == {"chunk_id", "doc_id", "source", "text", "score"}

    documents = _json(capsys, "documents", "--index", index, "--json")
    assert {d["doc_id"] for d in documents} == set(report["added"])

    deleted = _json(capsys, "delete", report["added"][0], "--index", index, "--json")
    assert deleted["doc_id"] == report["added"][0] and deleted["chunks_deleted"] >= 1

    stats = _json(capsys, "stats", "--index", index, "--json")
    assert stats["documents"] == 1 and stats["total_bytes"] == sum(stats["files"].values())
    assert {"chunks", "entities", "relations", "similar_edges", "embedder", "entity_names", "merges",
            "chunks_in_graph", "extraction_failures"} <= set(stats)
    assert stats["chunks_in_graph"] == stats["chunks"]


def test_errors_are_one_line_with_nonzero_exit(tmp_path, capsys, model_folder):
    assert main(["stats", "--index", str(tmp_path / "absent")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("edge-rag: error:") and "not an edge-rag index" in err and "\n" not in err

    (tmp_path / "empty.txt").write_text("")
    assert main(["index", str(tmp_path / "empty.txt"), "--index", str(tmp_path / "i"),
                 "--no-progress"]) == 1
    assert "empty" in capsys.readouterr().err

    assert main(["stats", "--index", str(tmp_path / "i"), "--profile", "nope"]) == 1
    assert "unknown device profile" in capsys.readouterr().err

    (tmp_path / "note.txt").write_text("LiHua: hello there.\n")
    assert main(["index", str(tmp_path / "note.txt"), "--index", str(tmp_path / "i"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["graph", "--index", str(tmp_path / "i"), "--around", "Nobody"]) == 1
    assert "no entity named 'Nobody'" in capsys.readouterr().err


def test_graph_png_draws_or_names_the_extra_it_needs(tmp_path, capsys, model_folder):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        drawing = False
    else:
        drawing = True
    (tmp_path / "note.txt").write_text("LiHua: Adam fixed the heating.\n")
    index = str(tmp_path / "i")
    assert main(["index", str(tmp_path / "note.txt"), "--index", index, "--no-progress"]) == 0
    capsys.readouterr()
    png = tmp_path / "g.png"
    code = main(["graph", "--index", index, "--around", "Li Hua", "--png", str(png),
                 "--output", str(tmp_path / "g.json")])
    if drawing:
        assert code == 0 and png.read_bytes().startswith(b"\x89PNG")
    else:
        assert code == 1 and "pip install 'edge-rag[graph]'" in capsys.readouterr().err


def test_ask_chat_and_retrieve_default_to_the_planner():
    parser = build_parser()
    for command in (["ask", "Q"], ["retrieve", "Q"], ["chat"]):
        assert parser.parse_args([*command, "--index", "x"]).method == "auto"
