"""The code says what and why in a few lines; the lab notebook lives in ``docs/design/``.

Checked here, on the source of ``edge_rag/`` (no import, no model):

- no module docstring is longer than ``MAX_DOCSTRING_LINES`` lines, and each links its design note;
- no comment or docstring carries a figure a benchmark produces (recall, accuracy, ms, MiB,
  speed-ups, counts "n of m", "a → b" changes) and no file names a benchmark data set;
- every module-level numeric constant has a comment, and its comment (or the comment heading its
  block of constants) names a design note;
- every ``docs/design/*.md`` is linked from the code it describes, every link in the code leads to
  an existing note, and ``docs/design/README.md`` indexes every note.

A failure names the file and line, and what to move where.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "edge_rag"
DESIGN = ROOT / "docs" / "design"
MAX_DOCSTRING_LINES = 15
# Modules another change owns for now; remove a name here once its module passes.
PENDING: set[str] = set()

# A figure a benchmark produces, as it is written in prose.
FIGURES = re.compile(r"""
    \d[\d,.]*\s?(?:ms|µs|s|KiB|KB|kB|MiB|MB|GiB|GB|tok/s)\b      # a time or a size
  | \d(?:\.\d+)?\s?[x×](?![\w])                                    # a speed-up or a scale factor
  | \d\s?%                                                        # a share
  | \b0\.\d{3,}\b                                                 # a recall or accuracy
  | \d\s*(?:→|->)\s*[−-]?\d                                       # a change from one to another
  | \b\d[\d,]*\s+of\s+\d[\d,]*\b                                  # a count out of a data set
  | \b(?:recall|accuracy|R@\d+)\b[^.;]{0,12}\d\.\d                # a recall or accuracy figure
""", re.VERBOSE | re.IGNORECASE)
DATASETS = re.compile(r"li[\s-]?hua|2\s?wiki|hotpot|multi-?hop-?rag|multihopqa|squad|musique", re.IGNORECASE)
NOTE_LINK = re.compile(r"docs/design/([\w-]+\.md)")
NOTE_NAME = re.compile(r"\b[\w-]+\.md\b")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _pending(path: Path) -> bool:
    return str(path.relative_to(PACKAGE)) in PENDING


def _module_docstring(path: Path) -> tuple[str, int]:
    """The module docstring and how many source lines it spans (quotes included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return "", 0
    return first.value.value, (first.end_lineno or first.lineno) - first.lineno + 1


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and every line of every docstring in a module."""
    source = path.read_text(encoding="utf-8")
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out += [(first.lineno + n, line) for n, line in enumerate(first.value.value.splitlines())]
    return sorted(out)


@pytest.mark.parametrize("path", [p for p in _modules() if not _pending(p)],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_module_docstring_is_short_and_links_its_note(path: Path) -> None:
    text, lines = _module_docstring(path)
    assert text, f"{path.relative_to(ROOT)} has no module docstring"
    assert lines <= MAX_DOCSTRING_LINES, (
        f"{path.relative_to(ROOT)}'s docstring spans {lines} lines (at most {MAX_DOCSTRING_LINES}): "
        "say what and why, and move the rest to its note in docs/design/")
    assert NOTE_LINK.search(text), (f"{path.relative_to(ROOT)}'s docstring links no design note "
                                    "(a line 'Design: docs/design/NAME.md')")


def test_no_figure_of_a_benchmark_in_the_code() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {match.group()!r} in {text.strip()!r}"
             for path in _modules() if not _pending(path)
             for line, text in _prose(path) if (match := FIGURES.search(text))]
    assert not found, ("measured figures belong in docs/design/ or benchmarks/RESULTS.md, not in "
                       "comments or docstrings:\n" + "\n".join(found))


def test_no_data_set_is_named_in_the_code() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()!r}"
             for path in _modules() if not _pending(path)
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if DATASETS.search(line)]
    assert not found, ("edge_rag/ names a benchmark data set (describe a format by its shape, "
                       "keep measurements in docs/design/):\n" + "\n".join(found))


def _numeric(value: ast.expr) -> bool:
    """Whether a value is a number written in the code: a literal, arithmetic on literals and
    names, ``max``/``min`` of such, or a tuple of them (a table built by a comprehension is not)."""
    if isinstance(value, ast.Constant):
        return type(value.value) in (int, float)
    if isinstance(value, ast.UnaryOp):
        return _numeric(value.operand)
    if isinstance(value, ast.BinOp):
        sides = (value.left, value.right)
        return any(_numeric(s) for s in sides) and all(_numeric(s) or isinstance(s, ast.Name) for s in sides)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("max", "min"):
        return all(_numeric(a) or isinstance(a, ast.Name) for a in value.args)
    if isinstance(value, ast.Tuple):
        return bool(value.elts) and all(_numeric(e) for e in value.elts)
    return False


def _constants(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of the module-level UPPER_CASE constants with a number."""
    out = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        if isinstance(target, ast.Name) and target.id.isupper() and _numeric(node.value):
            out.append((target.id, node.lineno, node.end_lineno or node.lineno))
    return out


def _top_level(line: str) -> bool:
    return bool(line.strip()) and not line.startswith((" ", "def ", "class ", "@", ")", "]", "}"))


def _comment_of(lines: list[str], first: int, last: int) -> tuple[str, str]:
    """A constant's own comment (on its lines, or the comment lines right above it) and the
    comments of the block of module-level lines it belongs to (no blank line between)."""
    comment = lambda line: line.split("#", 1)[1] if "#" in line else ""
    own = " ".join(comment(line) for line in lines[first - 1:last])
    at = first - 1
    while at > 0 and lines[at - 1].lstrip().startswith("#"):
        at -= 1
    above = lines[at:first - 1]
    start, end = at, last
    while start > 0 and _top_level(lines[start - 1]):
        start -= 1
    while end < len(lines) and _top_level(lines[end]):
        end += 1
    return own + " ".join(above), " ".join(comment(line) for line in lines[start:end])


@pytest.mark.parametrize("path", [p for p in _modules() if not _pending(p) and _constants(p)],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_constant_says_what_it_does_and_names_its_note(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    problems = []
    for name, first, last in _constants(path):
        own, block = _comment_of(lines, first, last)
        if not own.strip():
            problems.append(f"{path.relative_to(ROOT)}:{first}: {name} has no comment saying what it does")
        elif not NOTE_NAME.search(own + block):
            problems.append(f"{path.relative_to(ROOT)}:{first}: {name}'s comment names no design note "
                            "(e.g. '(ppr.md)')")
    assert not problems, "\n".join(problems)


def _notes() -> list[Path]:
    return sorted(p for p in DESIGN.glob("*.md") if p.name != "README.md")


def _links_in_code() -> dict[str, list[str]]:
    """Note name → the modules whose source names it as docs/design/NAME.md."""
    out: dict[str, list[str]] = {}
    for path in _modules():
        for name in NOTE_LINK.findall(path.read_text(encoding="utf-8")):
            out.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return out


def test_every_note_is_linked_from_its_code() -> None:
    linked = _links_in_code()
    unlinked = [p.name for p in _notes() if p.name not in linked]
    assert not unlinked, f"no module of edge_rag/ links docs/design/{unlinked}"


def test_every_note_the_code_links_exists() -> None:
    missing = {name: where for name, where in _links_in_code().items() if not (DESIGN / name).is_file()}
    assert not missing, f"the code links design notes that do not exist: {missing}"


def test_every_constant_comment_names_an_existing_note() -> None:
    names = {p.name for p in DESIGN.glob("*.md")}
    wrong = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in _modules()
             for line, text in _prose(path) if text.lstrip().startswith("#")
             for name in NOTE_NAME.findall(text) if name not in names | {"RESULTS.md"}]
    assert not wrong, f"comments name design notes that do not exist: {wrong}"


def test_the_design_index_lists_every_note() -> None:
    index = (DESIGN / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in _notes() if f"]({p.name})" not in index]
    assert not missing, f"docs/design/README.md does not link {missing}"


@pytest.mark.parametrize("note", sorted(DESIGN.glob("*.md")), ids=lambda p: p.name)
def test_a_note_links_only_what_exists(note: Path) -> None:
    text = note.read_text(encoding="utf-8")
    broken = [t for t in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text)
              if not t.startswith("http") and not (note.parent / t).exists()]
    paths = re.findall(r"`((?:edge_rag|benchmarks|tests|export)/[\w/.-]+\.(?:py|sh|md|json))`", text)
    code = [t for t in paths if not (ROOT / t).exists()]
    assert not broken + code, f"{note.name} names files that do not exist: {broken + code}"
