"""Entity and relation extraction from chunks: by the SLM under a format constraint, or fast rules.

Both extractors return ``Extraction`` objects that went through ``repair``: names stripped,
empty names and self-loops dropped, duplicates folded, relation endpoints added as entities.

Design: docs/design/index.md
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..errors import SettingsError
from ..prompts import EXTRACT_PROMPT_VERSION, EXTRACT_SYSTEM, extract_user
from .fast import extract_fast
from .mentions import (
    DEFAULT_STRENGTH,
    FIELD_CHARS,
    EntityMention,
    Extraction,
    RelationMention,
    ground,
    repair,
    strength,
)

if TYPE_CHECKING:
    from ..config import Settings
    from ..models.slm import SLM


class Extractor(Protocol):
    """Turns chunk texts into extractions; ``id`` names the model and prompt version."""

    id: str
    cacheable: bool

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One extraction per text."""
        ...


# -- the two extractors ----------------------------------------------------------------------


class FastExtractor:
    """Deterministic rules, no model: speakers, named spans, dates, times, quantities, titles
    and salient words; relations from co-occurrence within a line (see ``fast.py``)."""

    id = "fast-v1"
    cacheable = False

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """Rule-based extraction of each text."""
        return [repair(*extract_fast(text)) for text in texts]


class SLMExtractor:
    """The SLM writes delimiter-separated records under the ``Records`` constraint, so every
    output parses; entities not found in the chunk are dropped (see ``ground``); empty
    results are retried with sampling and counted as failures."""

    cacheable = True

    def __init__(self, slm: SLM, max_tokens: int = 320, retries: int = 1, batch_size: int = 4) -> None:
        from ..models.constraints import Records

        self.slm = slm
        self.max_tokens = max_tokens
        self.retries = retries
        self.batch_size = batch_size
        self.constraint = Records(kinds=(("entity", 3), ("relation", 5)), max_field=FIELD_CHARS,
                                  max_records=24, numeric=(("relation", 4),))
        self.id = f"slm:{slm.folder.identity['sha256'][:16]}:prompt{EXTRACT_PROMPT_VERSION}"

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """Batched constrained extraction with bounded retries for empty outputs."""
        out: list[Extraction] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._extract_batch(texts[start : start + self.batch_size]))
        return out

    def _extract_batch(self, texts: Sequence[str]) -> list[Extraction]:
        from ..models.slm import GenerationConfig

        results: list[Extraction | None] = [None] * len(texts)
        failures = [0] * len(texts)
        for attempt in range(self.retries + 1):
            todo = [i for i, r in enumerate(results) if r is None]
            if not todo:
                break
            config = GenerationConfig(max_new_tokens=self.max_tokens, temperature=0.0 if attempt == 0
                                      else 0.7, seed=attempt)
            prompts = [self.slm.chat(extract_user(texts[i]), EXTRACT_SYSTEM) for i in todo]
            for i, generation in zip(todo, self.slm.generate_batch(prompts, config, self.constraint)):
                parsed = ground(parse_records(generation.text, self.constraint.delimiter), texts[i])
                if parsed.entities:
                    results[i] = parsed
                else:
                    failures[i] += 1
        return [_with_failures(r or Extraction(), f) for r, f in zip(results, failures)]


def parse_records(text: str, delimiter: str = "<|>") -> Extraction:
    """Tolerant parser for ``entity<|>name<|>type<|>description`` and
    ``relation<|>source<|>target<|>keywords<|>description<|>strength`` lines; anything else is
    skipped and missing trailing fields are left empty."""
    entities, relations = [], []
    for line in text.splitlines():
        kind, *fields = [f.strip() for f in line.strip().strip("()").split(delimiter)]
        kind = kind.strip("\"' ").lower()
        if kind == "entity" and fields:
            entities.append(EntityMention(*(fields + ["", ""])[:3]))
        elif kind == "relation" and len(fields) >= 2:
            source, target, *rest = fields
            keywords, description, value = (rest + ["", "", ""])[:3]
            relations.append(RelationMention(source, target, keywords, description,
                                             strength(value or DEFAULT_STRENGTH)))
    return repair(entities, relations)


def make_extractor(settings: Settings, slm: SLM | None = None) -> Extractor | None:
    """The extractor a setting names: ``fast``, ``slm`` or ``none`` (no graph)."""
    if settings.extractor == "none":
        return None
    if settings.extractor == "fast":
        return FastExtractor()
    if settings.extractor == "slm":
        if slm is None:
            raise SettingsError("extractor 'slm' needs a loaded SLM")
        return SLMExtractor(slm, settings.extract_max_tokens, settings.extract_retries,
                            settings.extract_batch_size)
    raise SettingsError(f"unknown extractor {settings.extractor!r}; use fast, slm or none")


def _with_failures(extraction: Extraction, failures: int) -> Extraction:
    extraction.failures = failures
    return extraction
