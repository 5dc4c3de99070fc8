"""Typed runtime settings, loaded from a device profile (TOML) plus overrides.

Each field's meaning is in README's configuration table; the notes under docs/design/ say how the
measured defaults were chosen.

Design: docs/design/api.md
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import SettingsError

VECTOR_DTYPES = ("f32", "f16", "i8")
EXTRACTORS = ("fast", "slm", "none")
PLANNERS = ("names", "margin", "head", "slm", "rules")
ANSWER_STAGES = ("focused", "plain")
# The focused answer stage's rules (documented in edge_rag/answer/focused.py), each one switched
# off by naming it in ``answer_rules_off``; the ``ASK_RULES`` (edge_rag/answer/hops.py) act in
# ``ask``, before either stage.
ASK_RULES = ("hops", "compare")
ANSWER_RULES = ("yesno", "choice", "who", "time", "when", "date", "terms", "dated", "span", "replies",
                "open", "names", "bare", "echo", "quote", "sentence", "words", "support", *ASK_RULES)
FIXED_METHODS = ("none", "vector", "local", "dual", "topology", "ppr", "titles")
# The method of the CLI, the Python API and the server when none is named: the planner chooses
# (issue 44: it finds more of the evidence than vector; its answers: docs/design/planner.md).
DEFAULT_METHOD = "auto"
PROFILE_DIR_ENV = "EDGE_RAG_PROFILES"
HOME_ENV = "EDGE_RAG_HOME"


@dataclass(frozen=True)
class Settings:
    """Every knob of the runtime; one object, validated, passed everywhere.

    Device profiles (``device_profiles/*.toml``) set these fields; TOML tables
    only group keys for readability and are flattened.
    """

    profile: str = "default"
    models_home: str | None = None
    embedder: str = "all-MiniLM-L6-v2-int8"
    chunk_tokens: int = 128
    chunk_overlap: int = 32
    embed_batch_size: int = 8
    slm: str = "qwen2.5-coder-0.5b-q4"
    slm_context_tokens: int = 2048
    context_token_budget: int = 1024
    answer_max_tokens: int = 96
    answer_stage: str = "focused"
    answer_rules_off: tuple[str, ...] = ()
    focus_tokens: int = 220
    focus_max_new_tokens: int = 32
    draft_tokens: int = 3
    abstain_threshold: float = 1.0
    abstain_terms: int = 4
    no_threshold: float = 0.8
    source_guard: bool = True
    vector_dtype: str = "i8"
    # Exact search up to 2^18 vectors of a kind: an HNSW file at USearch's defaults lost much of the
    # true top 10 at the scale benchmark's largest size (docs/design/storage.md).
    vector_file_min: int = 262144
    threads: int = 0
    ort_memory_arena: bool = True
    ort_graph_optimization: str = "all"
    execution_provider: str = "cpu"
    top_k: int = 5
    max_document_mb: float = 64.0
    max_inflated_mb: float = 64.0
    max_members: int = 10000
    follow_symlinks: bool = False
    sqlite_cache_mb: int = 16
    sqlite_mmap_mb: int = 64
    vector_save_every: int = 200
    extractor: str = "fast"
    extract_batch_size: int = 4
    extract_max_tokens: int = 320
    extract_retries: int = 1
    graph_batch_chunks: int = 256
    aggregate_tau: float = 0.8
    aggregate_lambda: float = 0.6
    aggregate_delta: float = 0.6
    aggregate_merge: float = 0.9
    graph_entities: int = 10
    graph_relations: int = 10
    lr_alpha: float = 0.7
    tr_hops: int = 2
    graph_support_weight: float = 0.25
    graph_support_spread: float = 0.5
    use_weights: bool = True
    keyword_extractor: str = "rules"
    planner: str = "names"
    planner_margin: float = 0.14
    planner_model: str = "planner-af2-int8"
    planner_threshold: float = 0.4
    planner_fallback: str = "ppr"
    memory_budget_mb: int = 0
    memory_policy: str = "refuse"
    serve_connections: int = 64
    serve_header_seconds: float = 10.0
    serve_keep_alive_seconds: int = 5
    progress: bool = True

    def __post_init__(self) -> None:
        _check(self.chunk_tokens >= 16, "chunk_tokens must be at least 16")
        _check(0 <= self.chunk_overlap < self.chunk_tokens // 2,
               "chunk_overlap must be >= 0 and below half of chunk_tokens")
        _check(self.embed_batch_size >= 1, "embed_batch_size must be at least 1")
        _check(self.slm_context_tokens >= 256, "slm_context_tokens must be at least 256")
        _check(self.context_token_budget >= 64, "context_token_budget must be at least 64")
        _check(1 <= self.answer_max_tokens < self.slm_context_tokens // 2,
               "answer_max_tokens must be >= 1 and below half of slm_context_tokens")
        _check(self.answer_stage in ANSWER_STAGES, f"answer_stage must be one of {ANSWER_STAGES}")
        unknown = sorted(set(self.answer_rules_off) - set(ANSWER_RULES))
        _check(not unknown, f"answer_rules_off: unknown rule(s) {unknown}; known: {', '.join(ANSWER_RULES)}")
        _check(self.focus_tokens >= 32, "focus_tokens must be at least 32")
        _check(self.abstain_terms >= 0, "abstain_terms must be >= 0 (0 = never on terms)")
        _check(1 <= self.focus_max_new_tokens < self.slm_context_tokens // 2,
               "focus_max_new_tokens must be >= 1 and below half of slm_context_tokens")
        _check(0 <= self.draft_tokens <= 8, "draft_tokens must be within [0, 8] (0 = one token a call)")
        _check(self.vector_dtype in VECTOR_DTYPES, f"vector_dtype must be one of {VECTOR_DTYPES}")
        _check(self.vector_file_min >= 0, "vector_file_min must be >= 0 (0 = always an HNSW file)")
        _check(self.threads >= 0, "threads must be >= 0 (0 = all cores)")
        _check(self.ort_graph_optimization in ("disable", "basic", "extended", "all"),
               "ort_graph_optimization must be disable, basic, extended or all")
        _check(self.execution_provider in ("cpu", "cuda"), "execution_provider must be cpu or cuda")
        _check(self.top_k >= 1, "top_k must be at least 1")
        _check(self.max_document_mb > 0 and self.max_inflated_mb > 0,
               "max_document_mb and max_inflated_mb must be positive")
        _check(self.max_members >= 1, "max_members must be at least 1")
        _check(self.serve_connections >= 2, "serve_connections must be at least 2")
        _check(self.serve_header_seconds > 0 and self.serve_keep_alive_seconds >= 1,
               "serve_header_seconds must be positive and serve_keep_alive_seconds at least 1")
        _check(self.vector_save_every >= 1, "vector_save_every must be at least 1")
        _check(self.extractor in EXTRACTORS, f"extractor must be one of {EXTRACTORS}")
        _check(self.extract_batch_size >= 1 and self.graph_batch_chunks >= 1,
               "extract_batch_size and graph_batch_chunks must be at least 1")
        _check(self.extract_max_tokens >= 32, "extract_max_tokens must be at least 32")
        _check(self.extract_retries >= 0, "extract_retries must be >= 0")
        _check(self.graph_entities >= 1 and self.graph_relations >= 1,
               "graph_entities and graph_relations must be at least 1")
        _check(1 <= self.tr_hops <= 3, "tr_hops must be 1, 2 or 3")
        _check(self.graph_support_weight >= 0, "graph_support_weight must be >= 0")
        _check(0 <= self.graph_support_spread <= 1, "graph_support_spread must be within [0, 1]")
        _check(self.keyword_extractor in ("rules", "slm"), "keyword_extractor must be rules or slm")
        _check(self.memory_budget_mb >= 0, "memory_budget_mb must be >= 0 (0 = no budget check)")
        _check(self.memory_policy in ("refuse", "degrade"), "memory_policy must be refuse or degrade")
        _check(self.planner in PLANNERS, f"planner must be one of {PLANNERS}")
        _check(self.planner_fallback in FIXED_METHODS, f"planner_fallback must be one of {FIXED_METHODS}")
        for name in ("abstain_threshold", "no_threshold", "planner_threshold", "planner_margin",
                     "aggregate_tau", "aggregate_lambda", "aggregate_delta", "aggregate_merge", "lr_alpha"):
            _check(0.0 <= getattr(self, name) <= 1.0, f"{name} must be within [0, 1]")

    @property
    def home(self) -> Path:
        """Folder that holds exported models (``$EDGE_RAG_HOME`` or the user cache)."""
        return models_home(self.models_home)

    @property
    def intra_op_threads(self) -> int:
        """Threads for onnxruntime: ``threads``, at most the cores this process may run on (a
        profile written for a 4-core board, run on 2 cores, would oversubscribe them); 0 means
        every such core."""
        return min(self.threads, usable_cores()) if self.threads else usable_cores()

    def replace(self, **overrides: Any) -> Settings:
        """A copy with some fields changed (validated like any other)."""
        _reject_unknown(overrides)
        return dataclasses.replace(self, **_coerce(overrides))

    @classmethod
    def load(cls, profile: str | Path | None = None, **overrides: Any) -> Settings:
        """Settings from a profile name or TOML path, then keyword overrides."""
        values: dict[str, Any] = {}
        if profile is not None:
            path = find_profile(profile)
            values = _flatten(_read_toml(path))
            values.setdefault("profile", path.stem)
        values.update({k: v for k, v in overrides.items() if v is not None})
        _reject_unknown(values)
        try:
            return cls(**_coerce(values))
        except TypeError as exc:
            raise SettingsError(f"invalid settings: {exc}") from None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system reports one (a
    container's cpuset), else every core."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity call on this system (macOS, Windows)
        return os.cpu_count() or 1


def models_home(explicit: str | None = None) -> Path:
    """Resolve the models home: explicit value, ``$EDGE_RAG_HOME``, or ~/.cache/edge-rag."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "edge-rag"


def profile_dirs() -> list[Path]:
    """Where profile names are looked up, first match wins: ``$EDGE_RAG_PROFILES``, the checkout's
    ``device_profiles/`` (when running from a clone or an editable install), then the copy of it that
    ships in the wheel as package data (``edge_rag/profiles/``)."""
    dirs = [Path(p) for p in os.environ.get(PROFILE_DIR_ENV, "").split(os.pathsep) if p]
    package = Path(__file__).resolve().parent
    checkout = package.parent / "device_profiles"
    if (package.parent / "pyproject.toml").is_file() and checkout.is_dir():
        dirs.append(checkout)
    dirs.append(package / "profiles")
    return dirs


def find_profile(profile: str | Path) -> Path:
    """Path of a profile given by name (``rpi4``) or by file path."""
    candidate = Path(profile)
    if candidate.suffix == ".toml" and candidate.is_file():
        return candidate
    for folder in profile_dirs():
        path = folder / f"{profile}.toml"
        if path.is_file():
            return path
    known = sorted({p.stem for d in profile_dirs() if d.is_dir() for p in d.glob("*.toml")})
    raise SettingsError(f"unknown device profile {str(profile)!r}; known: {', '.join(known)}")


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        try:
            import tomli as tomllib
        except ImportError:
            raise SettingsError("reading profiles on Python 3.10 needs 'pip install tomli'") from None
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"cannot read profile {path}: {exc}") from None


def _flatten(table: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(value)
        else:
            flat[key] = value
    return flat


def _field_types() -> dict[str, Any]:
    return {f.name: f.type for f in fields(Settings)}


def _reject_unknown(values: dict[str, Any]) -> None:
    unknown = sorted(set(values) - set(_field_types()))
    if unknown:
        raise SettingsError(f"unknown setting(s): {', '.join(unknown)}")


def _coerce(values: dict[str, Any]) -> dict[str, Any]:
    types = _field_types()
    out = {}
    for key, value in values.items():
        kind = str(types[key])
        if kind == "int" and isinstance(value, bool) or kind == "int" and not isinstance(value, int):
            raise SettingsError(f"setting {key} must be an integer, got {value!r}")
        if kind == "float" and not isinstance(value, (int, float)):
            raise SettingsError(f"setting {key} must be a number, got {value!r}")
        if kind == "bool" and not isinstance(value, bool):
            raise SettingsError(f"setting {key} must be true or false, got {value!r}")
        if kind.startswith("tuple"):
            value = _names(key, value)
        out[key] = float(value) if kind == "float" else value
    return out


def _names(key: str, value: Any) -> tuple[str, ...]:
    """A list setting from TOML (a list of strings) or an override (also a comma-separated string)."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"setting {key} must be a list of names, got {value!r}")
    return tuple(v.strip() for v in value if v.strip())


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise SettingsError(message)
