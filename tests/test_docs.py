"""The docs are checked against the code: README's CLI reference against ``build_parser()``, its
configuration table against ``Settings``, its error list against ``edge_rag.errors``, and
``benchmarks/RESULTS.md`` against what ``python -m benchmarks.results_md`` writes.

A failure names exactly what to add to (or remove from) which part of which file.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest

import edge_rag
from benchmarks import results_md
from edge_rag import Settings, errors
from edge_rag.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_README_LINES = 350
NOT_SETTINGS: set[str] = set()  # Settings fields deliberately left out of the README table


def section(title: str, text: str = README) -> str:
    """The body of the ``## title`` section of a Markdown text."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


# -- README shape ----------------------------------------------------------------------------
TEST_COMMAND = ("bash export/bootstrap.sh dev && .venv/bin/python -m ruff check . && "
                ".venv/bin/python -m mypy && .venv/bin/python -m pytest -q")


def test_readme_is_short() -> None:
    lines = README.count("\n")
    assert lines <= MAX_README_LINES, (f"README.md has {lines} lines, more than {MAX_README_LINES}: "
                                      "move detail to benchmarks/RESULTS.md or the code's docstrings")


def test_readme_gives_the_two_commands() -> None:
    quick_start = section("Quick start: two commands")
    commands = re.findall(r"^bash export/bootstrap\.sh .*$", quick_start, re.MULTILINE)
    assert commands == ["bash export/bootstrap.sh demo", TEST_COMMAND], commands


def test_ci_runs_exactly_the_readme_test_command() -> None:
    run = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
           if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert run == [TEST_COMMAND], run


# -- CLI reference -----------------------------------------------------------------------------

def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...],
                                                                                      argparse.ArgumentParser]]:
    """Every (sub)command of a parser, depth first, with its own parser."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(((*path, name), sub))
                out += commands(sub, (*path, name))
    return out


def documented_words(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """What a command's README block must mention, and how to say it is missing: options,
    positionals (upper case) and the choices of each."""
    words = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        longs = [o for o in action.option_strings if o.startswith("--")]
        name = longs[0] if longs else str(action.metavar or action.dest).upper()
        words += [(o, f"the option {o}") for o in longs]
        words += [] if action.option_strings else [(name, f"the argument {name}")]
        words += [(str(c), f"the choice {c!r} of {name}") for c in action.choices or ()]
    return words


def cli_blocks() -> dict[str, str]:
    """README's CLI reference: ``#### `edge-rag CMD``` heading -> the text under it."""
    parts = re.split(r"^#### `edge-rag ([^`]+)`\n", section("CLI reference"), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    blocks, problems = cli_blocks(), []
    for path, parser in commands(build_parser()):
        name = " ".join(path)
        if name not in blocks:
            problems.append(f"no '#### `edge-rag {name}`' block in README's CLI reference")
            continue
        problems += [f"the README block of `edge-rag {name}` does not mention {what}"
                     for word, what in documented_words(parser) if not _mentions(blocks[name], word)]
    assert not problems, "\n".join(problems)


def test_the_cli_reference_documents_nothing_that_does_not_exist() -> None:
    parsers, problems = {" ".join(p): sub for p, sub in commands(build_parser())}, []
    for name, block in cli_blocks().items():
        if name not in parsers:
            problems.append(f"README documents `edge-rag {name}`, which build_parser() does not have")
            continue
        options = {o for a in parsers[name]._actions for o in a.option_strings}
        problems += [f"README's `edge-rag {name}` block mentions {o}, which that command does not take"
                     for o in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", block)) - options)]
    assert not problems, "\n".join(problems)


def test_every_command_that_reads_an_index_takes_profile_and_json() -> None:
    for path, parser in commands(build_parser()):
        options = {o for a in parser._actions for o in a.option_strings}
        if "--index" in options:
            assert {"--profile", "--json"} <= options, " ".join(path)


def test_graph_takes_profile_and_json(lihua_index: Path, capsys) -> None:
    assert main(["graph", "--index", str(lihua_index), "--profile", "dev", "--json", "--around", "Li Hua",
                 "--hops", "1"]) == 0
    assert "LiHua" in {n["name"] for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert main(["graph", "--index", str(lihua_index), "--json", "--format", "graphml"]) == 1
    assert "two formats" in capsys.readouterr().err


# -- configuration and errors -----------------------------------------------------------------

def shown(value: Any) -> str:
    """A default as the configuration table writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        return "[" + " ".join(value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def configuration_table() -> dict[str, str]:
    """README's configuration table: field -> default as written (rows may group fields)."""
    table: dict[str, str] = {}
    for line in section("Configuration").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`(\w+)`", cells[0]) if line.startswith("| `") else []
        defaults = [d.strip().strip("`") for d in cells[1].split(",")] if names else []
        assert len(names) == len(defaults), f"README configuration row {line!r}: one default per field"
        table.update(zip(names, defaults))
    return table


def test_every_setting_is_in_the_configuration_table_with_its_default() -> None:
    table, problems = configuration_table(), []
    for field in fields(Settings):
        if field.name in NOT_SETTINGS:
            continue
        default = shown(field.default_factory() if field.default_factory is not MISSING else field.default)
        if field.name not in table:
            problems.append(f"Settings.{field.name} (default {default}) is not in README's "
                            "configuration table")
        elif table[field.name] != default:
            problems.append(f"README's configuration table gives {field.name} the default "
                            f"{table[field.name]}; Settings has {default}")
    known = {f.name for f in fields(Settings)} - NOT_SETTINGS
    problems += [f"README's configuration table documents {name}, which is not a Settings field"
                 for name in sorted(set(table) - known)]
    assert not problems, "\n".join(problems)


def test_the_error_list_is_every_error_class() -> None:
    paragraph = next(p for p in section("Python API").split("\n- ") if "`edge_rag.EdgeRagError`" in p)
    listed = set(re.findall(r"`(\w+)`", paragraph))
    classes = {name for name, value in vars(errors).items() if isinstance(value, type)
               and issubclass(value, errors.EdgeRagError) and value is not errors.EdgeRagError}
    assert not classes - listed, f"README's error list lacks {sorted(classes - listed)}"
    unknown = sorted(listed - classes)
    assert not unknown, f"README's error list names {unknown}, which edge_rag.errors does not define"
    hidden = sorted(classes - set(edge_rag.__all__))
    assert not hidden, f"not exported by edge_rag: {hidden}"


# -- benchmarks/RESULTS.md ---------------------------------------------------------------------

def test_results_md_is_current() -> None:
    current = results_md.OUTPUT.read_text(encoding="utf-8") if results_md.OUTPUT.is_file() else ""
    assert current == results_md.render(), ("benchmarks/RESULTS.md is stale or missing: run "
                                            "python -m benchmarks.results_md and commit it")


def test_every_results_file_is_in_results_md() -> None:
    text = results_md.render()
    missing = [p.name for p in results_md.RESULTS.glob("*.json") if p.name not in text]
    assert not missing, f"RESULTS.md does not show {missing}"


def test_new_and_changed_result_shapes_are_listed_not_fatal(tmp_path: Path) -> None:
    for name in ("retrieval_lihua.json", "suite_lihua_rpi4.json"):
        shutil.copy(results_md.RESULTS / name, tmp_path / name)
    retrieval = json.loads((tmp_path / "retrieval_lihua.json").read_text())
    retrieval["methods"]["ppr"] = retrieval["methods"]["vector"]
    (tmp_path / "retrieval_lihua.json").write_text(json.dumps(retrieval))
    (tmp_path / "load_test.json").write_text(json.dumps(
        {"benchmark": "load_test", "when": "today", "readers": 4, "seconds": 30.0,
         "rows": [{"reader": i, "queries_per_s": 10.5 + i, "errors": 0} for i in range(4)],
         "writer": {"inserts": 12, "deletes": 3}}))
    (tmp_path / "suite_lihua_new.json").write_text(json.dumps({"benchmark": "suite", "dataset": "lihua"}))
    (tmp_path / "broken.json").write_text("{not json")
    text = results_md.render(tmp_path)
    assert "| ppr |" in text
    assert "### `load_test.json`" in text and "queries_per_s" in text and "| 13.5 |" in text
    assert "cannot read this shape" in text and "### `suite_lihua_new.json`" in text
    assert "### LiHua-World, profile rpi4\n\n| method |" in text  # the good file of that section
    assert "### `broken.json`" in text and "JSONDecodeError" in text


@pytest.mark.parametrize("page", ["README.md", "benchmarks/RESULTS.md"])
def test_relative_links_lead_somewhere(page: str) -> None:
    path = ROOT / page
    text = path.read_text(encoding="utf-8")
    anchors = {results_md._anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    broken = [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if not target.startswith("http")
              and not (target[1:] in anchors if target.startswith("#") else (path.parent / target).exists())]
    assert not broken, f"{page} links to {broken}, which do not exist"
