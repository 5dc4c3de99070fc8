"""Small language model runtime: ONNX decoder with KV cache, sampling, streaming, constraints.

Only onnxruntime, tokenizers and numpy. Two graph kinds, told apart by the manifest's ``graph``:

- ``optimum``: a "text-generation-with-past" export: inputs ``input_ids``, ``attention_mask``,
  (``position_ids``), ``past_key_values.N.key/value``; outputs ``logits`` and
  ``present.N.key/value``. Batches are left-padded.
- ``gqa``: the GroupQueryAttention graph written by ``export/gqa_graph.py``, run by
  :class:`~.decoder.GqaDecoder` (in-place KV buffers, prefix reuse, one cache per batch row).

Design: docs/design/models.md
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from ..errors import ContextOverflow, EdgeRagError
from ..prompts import CHAT_REPLY, CHAT_TURN
from .constraints import Constraint, TokenMask
from .decoder import GqaDecoder
from .folder import ModelFolder
from .lookup import DraftedSteps
from .pages import released_pages, trim_heap
from .session import new_session, session_options

CANDIDATES = 64  # likeliest tokens a constrained step looks at first (models.md)
SLM_HINT = "run 'edge-rag export slm' (needs: pip install 'edge-rag[export]')"
_FOLDER_NAME = re.compile(r"(.+?)-(?:q([48])(?:e([48]))?|int8)")


def slm_hint(name: str) -> str:
    """How to export the SLM folder ``name``: the command that writes it when its name says so
    (``qwen2.5-coder-1.5b-q4``: ``edge-rag export slm qwen2.5-coder-1.5b --bits 4``)."""
    match = _FOLDER_NAME.fullmatch(name)
    if match is None:
        return SLM_HINT
    source, bits, embed = match.groups()
    options = f"--bits {bits}" + (f" --embed-bits {embed}" if embed else "") if bits else "--graph optimum"
    return f"run 'edge-rag export slm {source} {options} --install' (it installs what it needs)"


@dataclass
class GenerationConfig:
    """How to generate: length, sampling and stop strings."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False
    # Greedy decoding of one prompt on a GQA graph drafts up to this many tokens by prompt
    # lookup and checks them in one call (``lookup.py``); 0 decodes one token a call.
    draft_tokens: int = 3

    def capped(self, max_new_tokens: int | None) -> GenerationConfig:
        """This setting with at most ``max_new_tokens`` new tokens (None: unchanged)."""
        if max_new_tokens is None or max_new_tokens >= self.max_new_tokens:
            return self
        return replace(self, max_new_tokens=max(1, max_new_tokens))


@dataclass
class Generation:
    """A finished generation with its token counts and timings."""

    text: str
    prompt_tokens: int
    new_tokens: int
    finish_reason: str
    prefill_ms: float = 0.0
    decode_ms: float = 0.0
    cached_tokens: int = 0
    accepted_tokens: int = 0  # drafted by prompt lookup and kept (``GenerationConfig.draft_tokens``)


@dataclass
class _Row:
    """Per-sequence decoding state."""

    prompt_tokens: int = 0
    ids: list[int] = field(default_factory=list)
    text: str = ""
    done: str = ""


class SLM:
    """A ChatML small language model exported by ``edge-rag export slm``."""

    def __init__(self, folder: ModelFolder, threads: int = 0, context_tokens: int | None = None,
                 options: ort.SessionOptions | None = None, prefill_chunk: int = 128,
                 providers: list[str] | None = None) -> None:
        self.folder = folder
        self.prefill_chunk = prefill_chunk
        manifest = folder.manifest
        self.tokenizer = Tokenizer.from_file(str(folder.path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.num_layers = int(manifest["num_layers"])
        self.kv_heads = int(manifest["num_kv_heads"])
        self.head_dim = int(manifest["head_dim"])
        limit = int(manifest.get("context_length", 2048))
        self.context_tokens = min(limit, context_tokens or limit)
        self.stop_ids = {i for i in (self.tokenizer.token_to_id(t) for t in manifest["stop_tokens"])
                         if i is not None}
        options = options or session_options(threads)
        if manifest.get("graph") == "gqa":
            # The KV buffers live outside the session and the activations of a prefill chunk
            # are a few MiB: an arena would only keep the largest chunk's for good (issue 15,
            # with the heap trimmed after each prefill; models.md).
            options.enable_cpu_mem_arena = False
        # The weights onnxruntime repacks stay mapped from the file; their pages are given back.
        with released_pages(folder.path / "model.onnx_data"):
            self.session = new_session(str(folder.onnx_path), options, providers)
        trim_heap()  # what parsing tokenizer.json and packing the weights left free
        self._inputs = {i.name for i in self.session.get_inputs()}
        self._outputs = [o.name for o in self.session.get_outputs()]
        self._pieces: dict[int, str] = {}
        self._first_chars: dict[str, set[int]] | None = None
        # Prefix cache: the tokens and KV cache of the last single prompt prefilled.
        self._prefix: tuple[list[int], list[ort.OrtValue]] | None = None
        self._gqa = GqaDecoder(self.session, manifest, self.context_tokens) \
            if manifest.get("graph") == "gqa" else None
        self.run_options = self._gqa.run_options if self._gqa is not None else ort.RunOptions()

    @classmethod
    def from_path(cls, path: str | Path, threads: int = 0, context_tokens: int | None = None) -> SLM:
        """Load an exported SLM folder."""
        return cls(ModelFolder.open(Path(path), slm_hint(Path(path).name)), threads, context_tokens)

    def interrupt(self) -> None:
        """Make the running model call (and every later one) fail at once: a server shutting down
        does not wait for an answer's prefill."""
        self.run_options.terminate = True

    # -- prompts -------------------------------------------------------------------------

    def chat(self, user: str, system: str | None = None) -> str:
        """A ChatML prompt that ends where the assistant's answer begins."""
        turns = [("system", system)] if system else []
        turns.append(("user", user))
        return "".join(CHAT_TURN.format(role=role, text=text) for role, text in turns) + CHAT_REPLY

    def count_tokens(self, text: str) -> int:
        """Tokens of a text as the model sees it."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def ids_starting_with(self, chars: str) -> set[int]:
        """Ids of the tokens whose text, after a leading space marker, starts with one of ``chars``.

        The vocabulary is read once per model: a large one takes a noticeable moment to list
        (docs/design/models.md), and an answer's token masks ask for a dozen characters.
        """
        if self._first_chars is None:
            table: dict[str, set[int]] = {}
            for token, i in self.tokenizer.get_vocab().items():
                stripped = token.lstrip("Ġ▁ ")
                if stripped:
                    table.setdefault(stripped[0], set()).add(i)
            self._first_chars = table
        return set().union(*(self._first_chars.get(c, set()) for c in chars))

    # -- generation ------------------------------------------------------------------------

    def generate(self, prompt: str, config: GenerationConfig | None = None,
                 constraint: Constraint | TokenMask | None = None) -> Generation:
        """Generate a completion of ``prompt``."""
        return self.generate_batch([prompt], config, constraint)[0]

    def stream(self, prompt: str, config: GenerationConfig | None = None,
               constraint: Constraint | TokenMask | None = None,
               timings: dict[str, float] | None = None) -> Iterator[str]:
        """Yield the completion as text pieces.

        A piece never splits a UTF-8 character, and text that may be the start of a stop
        string is held back until it is known not to be one. ``timings``, if given, receives
        ``prefill``, ``cached_tokens`` and ``decode``.
        """
        config = config or GenerationConfig()
        sent = 0
        for rows in self._decode([prompt], config, constraint, timings):
            text, done = rows[0].text, bool(rows[0].done)
            safe = len(text) if done else len(text) - _held_back(text, config.stop)
            if safe > sent:
                yield text[sent:safe]
                sent = safe

    def next_token_logprobs(self, prompt: str, timings: dict[str, float] | None = None) -> np.ndarray:
        """Log-probabilities of the token that follows ``prompt`` (its KV cache is kept for reuse).

        ``timings``, if given, receives ``prefill`` and ``cached_tokens``.
        """
        encoded = [self._encode(prompt)]
        self._budget(encoded, 1)
        start = time.perf_counter()
        timings = {} if timings is None else timings
        logits = self._prefill(encoded, timings)[0][0].astype(np.float64)
        timings["prefill"] = (time.perf_counter() - start) * 1000
        return logits - np.max(logits) - np.log(np.sum(np.exp(logits - np.max(logits))))

    def generate_batch(self, prompts: Sequence[str], config: GenerationConfig | None = None,
                       constraint: Constraint | TokenMask | None = None) -> list[Generation]:
        """Generate completions of several prompts in one batch (left-padded)."""
        config = config or GenerationConfig()
        timings: dict[str, float] = {}
        *_, rows = self._decode(prompts, config, constraint, timings)
        return [Generation(row.text, row.prompt_tokens, len(row.ids), row.done or "length",
                           timings.get("prefill", 0.0), timings.get("decode", 0.0),
                           int(timings.get("cached_tokens", 0)), int(timings.get("accepted", 0)))
                for row in rows]

    def _decode(self, prompts: Sequence[str], config: GenerationConfig,
                constraint: Constraint | TokenMask | None,
                timings: dict[str, float] | None = None) -> Iterator[list[_Row]]:
        timings = {} if timings is None else timings
        encoded = [self._encode(p) for p in prompts]
        budget = self._budget(encoded, config.max_new_tokens)
        rng = np.random.default_rng(config.seed)
        rows = [_Row(prompt_tokens=len(ids)) for ids in encoded]
        start = time.perf_counter()
        # Greedy decoding reuses cached prefixes; sampled decoding prefills in full, so that a seed
        # reproduces its text (a cached prefix changes the logits in the last float digits).
        logits, past, mask = self._prefill(encoded, timings, reuse=config.temperature <= 0)
        timings["prefill"] = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        drafts = self._drafts(encoded, config)
        for step in range(budget):
            for row, row_logits in zip(rows, logits):
                if not row.done:
                    self._advance(row, row_logits, step, config, constraint, rng)
            yield rows
            if all(row.done for row in rows) or step == budget - 1:
                break
            next_ids = [row.ids[-1] if not row.done else next(iter(self.stop_ids)) for row in rows]
            if drafts is not None:
                logits = drafts.next(next_ids[0], budget - step - 2)
            else:
                logits, past, mask = self._step(next_ids, past, mask)
        timings["decode"] = (time.perf_counter() - start) * 1000
        if drafts is not None:
            timings["accepted"] = drafts.accepted
        if constraint is not None and not isinstance(constraint, TokenMask):
            for row in rows:
                if not constraint.is_complete(row.text):
                    # Out of tokens: append the shortest completion so the output still parses.
                    row.text, row.done = row.text + constraint.finish(row.text), "forced"
            yield rows

    def _drafts(self, encoded: list[list[int]], config: GenerationConfig) -> DraftedSteps | None:
        """Prompt-lookup steps where they give the same text: greedy, one prompt, a GQA graph
        that returns several positions' logits."""
        if self._gqa is None or not self._gqa.counted or len(encoded) != 1 \
                or config.temperature > 0 or config.draft_tokens <= 0:
            return None
        return DraftedSteps(self._gqa, encoded[0], config.draft_tokens)

    def _advance(self, row: _Row, logits: np.ndarray, step: int, config: GenerationConfig,
                 constraint: Constraint | TokenMask | None, rng: np.random.Generator) -> None:
        token = self._choose(logits, row, step, config, constraint, rng)
        if token in self.stop_ids and not config.ignore_eos:
            row.done = "eos"
            return
        row.ids.append(token)
        row.text = self.tokenizer.decode(row.ids, skip_special_tokens=True)
        for stop in config.stop:
            if stop and stop in row.text:
                row.text, row.done = row.text[: row.text.index(stop)], "stop"
                return
        if constraint is not None and not isinstance(constraint, TokenMask) \
                and constraint.is_complete(row.text):
            row.done = "constraint"

    # -- token choice ------------------------------------------------------------------

    def _choose(self, logits: np.ndarray, row: _Row, step: int, config: GenerationConfig,
                constraint: Constraint | TokenMask | None, rng: np.random.Generator) -> int:
        if constraint is None and config.temperature <= 0:
            return int(np.argmax(logits))  # greedy: no float64 copy of the vocabulary per step
        logits = logits.astype(np.float64)
        if isinstance(constraint, TokenMask):
            allowed = constraint.allowed(step, row.ids)
            if allowed is not None:
                masked = np.full_like(logits, -np.inf)
                masked[allowed] = logits[allowed]
                logits = masked
        elif constraint is not None:
            candidates = self._valid_candidates(logits, row.text, constraint)
            masked = np.full_like(logits, -np.inf)
            masked[candidates] = logits[candidates]
            logits = masked
        return _sample(logits, config.temperature, config.top_p, rng)

    def _valid_candidates(self, logits: np.ndarray, text: str, constraint: Constraint) -> np.ndarray:
        # Look at the likeliest tokens first; scan further only when none of them fits.
        top = np.argpartition(-logits, CANDIDATES)[:CANDIDATES]
        top = top[np.argsort(-logits[top])]
        valid = [int(t) for t in top if self._keeps_valid(int(t), text, constraint)]
        if valid:
            return np.array(valid)
        order = np.argsort(-logits)
        for start in range(CANDIDATES, len(order), 4096):
            valid = [int(t) for t in order[start:start + 4096]
                     if self._keeps_valid(int(t), text, constraint)]
            if valid:
                return np.array(valid[:CANDIDATES])
        raise EdgeRagError("constrained decoding found no token that keeps the output valid")

    def _keeps_valid(self, token: int, text: str, constraint: Constraint) -> bool:
        if token in self.stop_ids:
            return constraint.is_complete(text)
        piece = self._piece(token)
        return bool(piece) and "\ufffd" not in piece and constraint.accepts_prefix(text + piece)

    def _piece(self, token: int) -> str:
        if token not in self._pieces:
            self._pieces[token] = self.tokenizer.decode([token], skip_special_tokens=True)
        return self._pieces[token]

    # -- the ONNX model ------------------------------------------------------------------

    def _encode(self, prompt: str) -> list[int]:
        return self.tokenizer.encode(prompt, add_special_tokens=False).ids

    def _budget(self, encoded: list[list[int]], max_new_tokens: int) -> int:
        longest = max(len(ids) for ids in encoded)
        if longest >= self.context_tokens:
            raise ContextOverflow(f"prompt of {longest} tokens does not fit the "
                                  f"{self.context_tokens}-token context window")
        return max(1, min(max_new_tokens, self.context_tokens - longest))

    def _prefill(self, encoded: list[list[int]], timings: dict[str, float] | None = None,
                 reuse: bool = True) -> tuple[np.ndarray, list[ort.OrtValue], np.ndarray]:
        # The prompt goes in windows: the graph materialises [heads, window, total] attention
        # scores, so a long prompt in one piece would set the process's peak memory.
        if self._gqa is not None:
            logits = self._gqa.prefill(encoded, self.prefill_chunk, exact=reuse)
            trim_heap()  # the prefill's activations, freed without an arena
            if timings is not None:
                timings["cached_tokens"] = self._gqa.reused_tokens
            return logits, [], np.zeros(0)
        width = max(len(ids) for ids in encoded)
        pad = next(iter(self.stop_ids), 0)
        ids = np.array([[pad] * (width - len(x)) + x for x in encoded], dtype=np.int64)
        full_mask = np.array([[0] * (width - len(x)) + [1] * len(x) for x in encoded], dtype=np.int64)
        cached, past = self._reuse_prefix(encoded, reuse)
        for start in range(cached, width, self.prefill_chunk):
            end = min(width, start + self.prefill_chunk)
            logits, past = self._run(np.ascontiguousarray(ids[:, start:end]),
                                     np.ascontiguousarray(full_mask[:, :end]), past)
        if len(encoded) == 1:
            self._prefix = (list(encoded[0]), past)
        if timings is not None:
            timings["cached_tokens"] = cached
        return logits, past, full_mask

    def _reuse_prefix(self, encoded: list[list[int]], reuse: bool) -> tuple[int, list[ort.OrtValue]]:
        """(tokens already prefilled, their KV cache) for a prompt.

        A single prompt reuses the KV cache of its longest common token prefix with the last
        prompt prefilled (the fixed system prompt at least); the last token is always run again
        for its logits. Batches start empty.
        """
        empty = np.zeros((len(encoded), self.kv_heads, 0, self.head_dim), dtype=np.float32)
        nothing = (0, [ort.OrtValue.ortvalue_from_numpy(empty)] * (2 * self.num_layers))
        if not reuse or len(encoded) != 1 or self._prefix is None:
            return nothing
        ids, past = self._prefix
        common = _common_prefix(ids, encoded[0], len(encoded[0]) - 1)
        return (common, _slice_past(past, common)) if common else nothing

    def _step(self, next_ids: list[int], past: list[ort.OrtValue],
              mask: np.ndarray) -> tuple[np.ndarray, list[ort.OrtValue], np.ndarray]:
        if self._gqa is not None:
            return self._gqa.step(next_ids), past, mask
        mask = np.concatenate([mask, np.ones((mask.shape[0], 1), dtype=np.int64)], axis=1)
        ids = np.array(next_ids, dtype=np.int64)[:, None]
        logits, present = self._run(ids, mask, past)
        return logits, present, mask

    def _run(self, ids: np.ndarray, mask: np.ndarray,
             past: list[ort.OrtValue]) -> tuple[np.ndarray, list[ort.OrtValue]]:
        # IO binding keeps the KV cache in onnxruntime's own buffers between steps instead of
        # converting every present tensor to numpy and back.
        binding = self.session.io_binding()
        binding.bind_cpu_input("input_ids", ids)
        binding.bind_cpu_input("attention_mask", mask)
        if "position_ids" in self._inputs:
            positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)[:, -ids.shape[1]:]
            binding.bind_cpu_input("position_ids", np.ascontiguousarray(positions))
        for layer in range(self.num_layers):
            binding.bind_ortvalue_input(f"past_key_values.{layer}.key", past[2 * layer])
            binding.bind_ortvalue_input(f"past_key_values.{layer}.value", past[2 * layer + 1])
        for name in self._outputs:
            binding.bind_output(name, "cpu")
        self.session.run_with_iobinding(binding, self.run_options)
        outputs = binding.get_outputs()
        return outputs[0].numpy()[:, -1, :], outputs[1:]


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    """Length of the common prefix of two token lists, at most ``limit``."""
    n = 0
    for x, y in zip(a[:limit], b[:limit]):
        if x != y:
            break
        n += 1
    return n


def _slice_past(past: list[ort.OrtValue], length: int) -> list[ort.OrtValue]:
    """The first ``length`` positions of an optimum KV cache ([batch, kv_heads, seq, head_dim])."""
    return [ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value.numpy()[:, :, :length, :]))
            for value in past]


def _held_back(text: str, stops: tuple[str, ...]) -> int:
    """Characters at the end of unfinished text to keep: a partial character or stop string."""
    if text.endswith("\ufffd"):
        return 1
    return max((n for stop in stops for n in range(len(stop) - 1, 0, -1)
                if text.endswith(stop[:n])), default=0)


def _sample(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = (logits - np.max(logits)) / temperature
    probs = np.exp(scaled)
    probs /= probs.sum()
    if top_p < 1.0:
        order = np.argsort(-probs)
        keep = order[: int(np.searchsorted(np.cumsum(probs[order]), top_p)) + 1]
        kept = np.zeros_like(probs)
        kept[keep] = probs[keep]
        probs = kept / kept.sum()
    return int(rng.choice(len(probs), p=probs))
