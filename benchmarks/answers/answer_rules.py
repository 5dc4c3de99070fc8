"""Every rule of the focused answer stage, switched off one at a time, judged on two halves of dev.

    python -m benchmarks answer_rules [--dataset lihua|2wiki] [--slm NAME] [--method vector]
                                      [--limit N] [--rules yesno,who,...] [--base-off RULES]
                                      [--tag NAME]

Each rule of ``edge_rag.answer.RULES`` is switched off alone against the base stage (the default
stage, less ``--base-off``). The dev questions are split into two fixed halves by a hash of their
id (``half``); a rule is chosen on one half (on unless switching it off answers more questions
right there) and reported on the other, both ways, beside the whole dev figure. Retrievals are
cached per question and method, generations per prompt and answer constraint, so a variant
generates only the answers it changes: a mask that cannot bind (the model's likeliest first token
is allowed anyway; its answer starts with no speaker's name) reuses the base answer. The judge is
``common.judge`` (normalised containment; Null questions need an abstention).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core.answers import MISSING, judge
from benchmarks.core.datasets import DATASETS, half, open_engine, stratified
from benchmarks.core.measure import percentiles
from benchmarks.core.options import options
from benchmarks.core.paths import RESULTS
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings
from edge_rag.answer import RULES, FocusedAnswerer, Prepared, dates_in
from edge_rag.answer.forms import SPEAKER_LINE, compact_text, question_kind
from edge_rag.config import ASK_RULES
from edge_rag.models.slm import SLM, Generation
from edge_rag.retrieve import RETRIEVAL_VERSION, Retrieval

CACHE = RESULTS / "cache"
KINDS = ("Single", "Multi", "Null", "All")
# The rules that shape the prompt, the form or the abstention; the others act on the generation.
PREPARE_RULES = frozenset({"yesno", "choice", "who", "time", "when", "date", "terms", "dated", "span",
                           "replies", "open"})
FORMS = ("yesno", "choice", "who", "time", "when")
# The ASK_RULES act in ``EdgeRAG.ask``, before the stage: answer_accuracy --rules-off measures them.
STAGE_RULES = tuple(r for r in RULES if r not in ASK_RULES)
PREPARED: dict[tuple[str, frozenset[str]], Prepared] = {}


class CachedSLM:
    """The SLM with its generations and next-token looks kept on disk, keyed by prompt."""

    def __init__(self, slm: SLM, name: str, dataset: str) -> None:
        self.slm, self.name = slm, name
        # Keyed by the whole prompt, so a changed prompt never meets an old generation.
        self.path = CACHE / f"generations-{dataset}-{name}.jsonl"
        self.rows = _read_jsonl(self.path)
        self.generated = 0
        self.looks = True  # False: a real look only where the stage needs one (``answer_one``)
        self.seed: dict[str, Any] | None = None  # a stored answer to take as this generation

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.slm, attribute)

    def next_token_logprobs(self, prompt: str, timings: dict[str, float]) -> np.ndarray:
        """Log-probabilities of the ids the stage reads (the rest -inf), from the cache if seen."""
        key = _key("look", prompt)
        if key not in self.rows and not self.looks:
            timings.update(prefill=0.0, cached_tokens=0)
            return np.full(self.slm.tokenizer.get_vocab_size(), -np.inf)
        if key not in self.rows:
            found = self.slm.next_token_logprobs(prompt, timings)
            ids = {int(np.argmax(found))} | {self.slm.tokenizer.encode(w, add_special_tokens=False).ids[0]
                                             for w in ("Insufficient", "Yes", "No")}
            self._store(key, {"logprobs": {str(i): float(found[i]) for i in ids},
                              "first": int(np.argmax(found)), "prefill": timings.get("prefill", 0.0)})
        row = self.rows[key]
        timings.update(prefill=row["prefill"], cached_tokens=0)
        out = np.full(self.slm.tokenizer.get_vocab_size(), -np.inf)
        for i, value in row["logprobs"].items():
            out[int(i)] = value
        out[row["first"]] = max(out[row["first"]], max(row["logprobs"].values()))
        return out

    def generation(self, key: str, make: Any, prompt_tokens: float | None = None) -> dict[str, Any]:
        """The raw generation under ``key``, made by ``make()`` when not cached (or taken from the
        seed, when its prompt had as many tokens)."""
        if key not in self.rows and self.seed is not None \
                and self.seed.get("prompt_tokens") in (None, prompt_tokens):
            # The answer as stored, less the source words quoted after it (the finish adds them).
            self._store(key, {"text": self.seed["answer"].split(' — "')[0], "seeded": True,
                              "prefill": self.seed["prefill_ms"], "decode": self.seed["decode_ms"]})
        if key not in self.rows:
            result: Generation = make()
            self.generated += 1
            self._store(key, {"text": result.text, "prefill": result.prefill_ms, "decode": result.decode_ms,
                              "prompt_tokens": result.prompt_tokens})
        return self.rows[key]

    def _store(self, key: str, row: dict[str, Any]) -> None:
        self.rows[key] = row
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"key": key, **row}) + "\n")


def _key(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:20]


def _read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        return {}
    return {row.pop("key"): row for row in map(json.loads, path.read_text().splitlines()) if row}


def retrievals(rag: EdgeRAG, dataset: str, queries: list[dict], method: str) -> dict[str, Retrieval]:
    """Every question's retrieval by ``method``, cached on disk (keyed by the retrieval version)."""
    path = CACHE / f"retrievals-{dataset}-{method}-r{RETRIEVAL_VERSION}-k{rag.settings.top_k}.pkl"
    cache: dict[str, Retrieval] = pickle.loads(path.read_bytes()) if path.is_file() else {}
    missing = [q for q in queries if q["id"] not in cache]
    for q in missing:
        cache[q["id"]] = rag.retrieve(q["question"], method=method)
    if missing:
        path.write_bytes(pickle.dumps(cache))
    return cache


def answer_one(stage: FocusedAnswerer, slm: CachedSLM, question: str, retrieval: Retrieval) -> dict[str, Any]:
    """The stage's answer with its current ``off`` rules; generations shared where a mask cannot bind."""
    slm.looks = "open" in stage.off or question_kind(question) == "yesno"
    memo = (question + retrieval.method, relevant(question, stage.off))
    if memo not in PREPARED:
        PREPARED[memo] = stage.prepare(question, retrieval)
    prepared = PREPARED[memo]
    row: dict[str, Any] = {"form": prepared.form.kind, "abstain": prepared.abstain,
                           "prefill": prepared.timings.get("prefill", 0.0), "decode": 0.0}
    raw = ""
    if not prepared.abstain:
        made = _masked(stage, slm, prepared)
        raw = made["text"]
        row.update(prefill=made["prefill"], decode=made["decode"])
    row["answer"] = stage._finish(raw, prepared)
    return row


def relevant(question: str, off: frozenset[str]) -> frozenset[str]:
    """The rules switched off that can change how this question's prompt is prepared."""
    kind = question_kind(question)
    skip = set(FORMS) - {kind}
    skip |= set() if dates_in(question) else {"date", "dated"}
    skip |= set() if kind in ("time", "when") else {"span"}
    skip |= {"terms"} if kind in ("yesno", "choice") else set()
    return frozenset(off & PREPARE_RULES - skip)


class Remembered:
    """``embed`` with every text's vector kept (and saved to ``path``): variants and later runs
    re-read the same evidence lines."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], path: Path) -> None:
        self.embed, self.path = embed, path
        self.seen: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.is_file() else {}
        self.saved = len(self.seen)

    def __call__(self, texts: list[str]) -> np.ndarray:
        # Anything new: the whole call is embedded as the stage would embed it (int8 activations
        # are quantised per batch, so a vector depends a little on its batch); else the vectors kept.
        if any(t not in self.seen for t in texts):
            vectors = self.embed(texts)
            self.seen.update(zip(texts, vectors))
            return vectors
        return np.stack([self.seen[t] for t in texts])

    def save(self) -> None:
        """Write the vectors to disk if any are new."""
        if len(self.seen) > self.saved:
            self.path.write_bytes(pickle.dumps(self.seen))
            self.saved = len(self.seen)


def _masked(stage: FocusedAnswerer, slm: CachedSLM, prepared: Prepared) -> dict[str, Any]:
    """The generation under the stage's mask, keyed by the mask rules switched off that bind.

    ``open`` binds when the model's likeliest first token is one it forbids; ``names`` when the
    answer with it on starts with a speaker's name.
    """
    if prepared.form.starts:
        return _generate(stage, slm, prepared, ())
    opened = "open" in stage.off and prepared.first is not None \
        and prepared.first not in stage._open_tokens()
    masks: tuple[str, ...] = ("open",) if opened else ()
    if "names" not in stage.off:
        return _generate(stage, slm, prepared, masks)
    saved, stage.off = stage.off, stage.off - {"names"}
    named = _generate(stage, slm, prepared, masks)
    stage.off = saved
    text = compact_text(named["text"])
    speakers = {compact_text(m.group(1)) for line in prepared.focus.lines
                if (m := SPEAKER_LINE.match(line.text))}
    if not any(s and text.startswith(s) for s in speakers):
        return named
    return _generate(stage, slm, prepared, (*masks, "names"))


def _generate(stage: FocusedAnswerer, slm: CachedSLM, prepared: Prepared,
              masks: tuple[str, ...]) -> dict[str, Any]:
    key = _key("gen", slm.name, prepared.prompt, prepared.form, masks, stage.config.max_new_tokens)
    return slm.generation(key, lambda: slm.slm.generate(prepared.prompt, stage.config,
                                                       stage._mask(prepared)),
                          prepared.timings.get("prompt_tokens"))


def run_variant(stage: FocusedAnswerer, slm: CachedSLM, queries: list[dict], found: dict[str, Retrieval],
                off: frozenset[str], seeds: dict[str, Any] | None = None,
                progress: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """Answer and judge every query with ``off`` rules switched off (``seeds``: stored answers of
    this very stage, by id, taken as its generations; ``progress`` is given the rows every 10)."""
    stage.off = off
    rows = []
    for q in queries:
        before = slm.generated
        slm.seed = (seeds or {}).get(q["id"])
        row = answer_one(stage, slm, q["question"], found[q["id"]])
        row.update(id=q["id"], type=q["type"], half=half(q["id"]),
                   retrieve_ms=round(sum(found[q["id"]].timings_ms.values()), 1),
                   **judge(q, row["answer"]))
        if slm.generated > before:
            print(f"[{time.strftime('%H:%M:%S')}] {sorted(off)} {q['id']}: {row['answer'][:70]!r}",
                  flush=True)
        rows.append(row)
        if progress and len(rows) % 10 == 0:
            progress(rows)
    return rows


def accuracy(rows: list[dict], kind: str = "All", part: str = "") -> float:
    """Share of right answers among the rows of a type and half (All, "" for both halves)."""
    group = [r for r in rows if kind in ("All", r["type"]) and part in ("", r["half"])]
    return round(sum(r["correct"] for r in group) / len(group), 4) if group else 0.0


def figures(rows: list[dict]) -> dict[str, Any]:
    """Accuracy by half and type, false abstention and latency of one variant."""
    answerable = [r for r in rows if r["type"] != "Null"]
    out: dict[str, Any] = {"A": accuracy(rows, part="A"), "B": accuracy(rows, part="B"),
                           "dev": accuracy(rows)}
    out.update({k: accuracy(rows, k) for k in KINDS[:3] if any(r["type"] == k for r in rows)})
    out["false_abstention"] = round(sum(bool(MISSING.search(r["answer"].lower())) for r in answerable)
                                    / len(answerable), 4) if answerable else None
    out["answer_ms"] = percentiles([r["prefill"] + r["decode"] for r in rows])
    out["retrieve_ms"] = percentiles([r["retrieve_ms"] for r in rows])
    return out


def cross_validate(base: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """Choose on (base) or off (variant) on one half, report the other half; both ways.

    Ties keep the rule as it is in the base (on)."""
    keep_a = base["A"] >= variant["A"]
    keep_b = base["B"] >= variant["B"]
    return {"chosen_on_A": "on" if keep_a else "off", "on_B": base["B"] if keep_a else variant["B"],
            "chosen_on_B": "on" if keep_b else "off", "on_A": base["A"] if keep_b else variant["A"]}


def main(argv: list[str] | None = None) -> int:
    """Run the base stage and each rule switched off; print the table; write JSON."""
    args = _parser().parse_args(argv)
    dataset = DATASETS[args.dataset]
    queries = stratified(dataset.queries(), args.limit)
    if args.shuffle:  # a fixed order in which every prefix is a sample of all types
        queries.sort(key=lambda q: hashlib.sha256(q["id"].encode()).hexdigest())
    args.slm = args.slm or Settings().slm
    named = [] if args.rules == "none" else args.rules.split(",") if args.rules else list(STAGE_RULES)
    with open_engine(dataset, slm=args.slm) as engine:
        found = retrievals(EdgeRAG(engine), args.dataset, queries, args.method)
        stage = engine.answerer
        assert isinstance(stage, FocusedAnswerer)
        # The profile's own answer_rules_off are off in the base too.
        base_off = stage.off | frozenset(filter(None, args.base_off.split(",")))
        rules = [r for r in named if r not in base_off]
        slm = CachedSLM(stage.slm, args.slm, args.dataset)
        stage.slm = slm  # type: ignore[assignment]
        embed = Remembered(stage.evidence.embed, CACHE / f"vectors-{args.dataset}-v2.pkl")
        stage.evidence.embed = embed
        seeds = {r["id"]: r for r in json.loads(Path(args.seed).read_text())["answers"]} \
            if args.seed else None
        base_rows = run_variant(stage, slm, queries, found, base_off, seeds, lambda rows: _write(
            args, base_off, queries, [{"rule": "(base)", "state": "as set", **figures(rows)}], rows, False))
        slm.seed = None
        base = figures(base_rows)
        embed.save()
        table = [{"rule": "(base)", "state": "as set", **base}]
        for rule in rules:
            variant = figures(run_variant(stage, slm, queries, found, base_off | {rule}))
            table.append({"rule": rule, "state": "off", **variant, **cross_validate(base, variant)})
            _write(args, base_off, queries, table, base_rows, show=False)
            embed.save()
    _write(args, base_off, queries, table, base_rows, show=True)
    return 0


def _write(args: argparse.Namespace, base_off: frozenset[str], queries: list[dict], table: list[dict],
           base_rows: list[dict], show: bool) -> None:
    headers = ["rule", "state", "A", "B", "dev", "Single", "Multi", "Null", "false_abstention",
               "chosen_on_A", "on_B", "chosen_on_B", "on_A"]
    payload = {"dataset": args.dataset, "slm": args.slm, "method": args.method, "limit": args.limit,
               "base_off": sorted(base_off), "halves": {p: sum(half(q["id"]) == p for q in queries)
                                                        for p in "AB"},
               "answered": len(base_rows), "rules": table, "answers": base_rows}
    path = write_result(f"answer_rules_{args.tag or f'{args.dataset}_{args.slm}_{args.method}'}", payload,
                        Settings.load(None, slm=args.slm))
    if show:
        print(markdown_table(headers, [[row.get(h, "") for h in headers] for row in table]))
        print(f"wrote {path}")


def _parser() -> argparse.ArgumentParser:
    shared = options(dataset="lihua", limit=None, limit_help="type-stratified subset size")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], parents=[shared])
    parser.add_argument("--slm", default=None, help=f"exported SLM folder name (default: {Settings().slm})")
    parser.add_argument("--method", default="vector", help="retrieval method (auto: the planner's)")
    parser.add_argument("--rules", default="",
                        help="rules to switch off one by one (none: the base alone; "
                        "default: all of RULES but hops and compare)")
    parser.add_argument("--base-off", default="", help="rules off in the base stage (comma-separated)")
    parser.add_argument("--seed", default="", help="an answer_accuracy results JSON of the base stage "
                        "whose answers stand for its generations (same code, same retrieval)")
    parser.add_argument("--shuffle", action="store_true",
                        help="answer in a fixed hash order (a partial run's figures are a sample)")
    parser.add_argument("--tag", default="", help="results file name tag")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
