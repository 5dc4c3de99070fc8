"""Dialogue: two-turn LiHua-World follow-ups and topic switches, each turn 2 asked after turn 1.

    python -m benchmarks dialogue [--via api|serve] [--limit N] [--slm NAME] [--method auto]
                                  [--judge-dir DIR] [--reuse RESULT.json]

The sets are ``benchmarks/data/dialogues_lihua.jsonl`` (follow-ups whose standalone form is a dev
question) and ``topic_switch_lihua.jsonl`` (turn 2 an unrelated dev question). For each dialogue,
in this order: the turn-2 dev question asked alone ("full"), turn 1 asked alone, then turn 2
asked with the history [turn 1, the model's answer to it]; a turn 2 the resolver reads alone (no
follow-up cue) is answered exactly as the full question, so only that is asked. ``--via api``
asks through ``EdgeRAG.ask(..., history=...)``; ``--via serve`` starts ``edge-rag serve`` on a copy of the
index and asks through the ``openai`` client, sending the whole conversation (recall through
``POST /v1/retrieve`` with the history). Reported for follow-ups and switches apart: accuracy
(containment, ``core.answers.judge``) against the same question asked alone, recall@5 of the
evidence chats against the full question's, the added latency of turn 2 over the full question
(p50 of the paired differences, whole answer and retrieval alone), how many follow-ups were
recognised and resolved (none calls the SLM to do it). Judge input files for the LLM judge go
to ``--judge-dir``. ``--reuse`` takes turn 1's answers and the full questions' answers and times
from an earlier run (same model and method; greedy answers do not change between the API and the
server) and asks only turn 2: the added latency is then turn 2 through this path over the full
question through the earlier one. Writes ``dialogue_{via}[_limitN].json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.core import verdicts
from benchmarks.core.answers import judge
from benchmarks.core.datasets import DATASETS, open_benchmark_index
from benchmarks.core.measure import percentiles
from benchmarks.core.paths import ROOT
from benchmarks.core.results import markdown_table, write_result
from edge_rag import EdgeRAG, Settings

DATA = ROOT / "benchmarks" / "data"
VERDICTS = "dialogue_lihua"  # benchmarks/results/verdicts/dialogue_lihua.jsonl
SETS = {"follow_up": DATA / "dialogues_lihua.jsonl", "switch": DATA / "topic_switch_lihua.jsonl"}
JUDGE_DIR = ROOT.parent / "notes" / "judge" / "pending"
K = 5
KEYS = ("dialogues", "turn1_accuracy", "turn2_accuracy", "full_accuracy", "ratio", "turn2_recall@5",
        "full_recall@5", "resolved_share", "added_ms", "added_retrieval_ms")
TABLE = ["set", "dialogues", "turn1", "turn2", "full", "ratio", "recall@5 turn2", "recall@5 full", "resolved",
         "added p50 ms", "added retrieval p50 ms"]
# An asker: (question, history) -> (answer text, plan dict or None, seconds, retrieval ms).
Asker = Callable[[str, list[dict[str, str]]], tuple[str, dict | None, float, float]]
# A finder: (question, history) -> (the retrieved documents' stamps, whether it was a follow-up).
Finder = Callable[[str, list[dict[str, str]]], tuple[list[str], bool]]


def main(argv: list[str] | None = None) -> int:
    """Ask every dialogue, print the tables, write JSON (and judge inputs)."""
    args = _parser().parse_args(argv)
    if args.rescore:
        return rescore(Path(args.rescore))
    dataset = DATASETS["lihua"]
    dev = {q["id"]: q for q in dataset.queries()}
    dialogues = {name: load(path)[: args.limit] for name, path in SETS.items()}
    earlier = reused(Path(args.reuse)) if args.reuse else {}
    settings = Settings.load(None, **({"slm": args.slm} if args.slm else {}))
    with open_benchmark_index(dataset, True, slm=settings.slm) as rag:
        opened = (_served(rag, settings.slm, args.method) if args.via == "serve"
                  else _library(rag, args.method))
        with opened as (ask, find):
            rows = {name: [_dialogue(d, dev, ask, find, earlier.get(d["id"])) for d in items]
                    for name, items in dialogues.items()}
    summary = {name: summarise(part) for name, part in rows.items()}
    print(markdown_table(TABLE, [[n, *(s[key] if not isinstance(s[key], dict) else s[key]["p50"]
                                       for key in KEYS)] for n, s in summary.items()]))
    tag = f"dialogue_{args.via}" + (f"_limit{args.limit}" if args.limit else "")
    if args.judge_dir:
        for path in write_judge_inputs(Path(args.judge_dir), tag, rows):
            print(f"judge input: {path}")
    payload = {"via": args.via, "slm": settings.slm, "method": args.method, "limit": args.limit,
               "reused": args.reuse,
               "summary": summary, "llm_judged": llm_judged(rows), "rows": rows}
    print(f"LLM-judged ({verdicts.store_path(VERDICTS)}): {json.dumps(payload['llm_judged'])}")
    print(f"wrote {write_result(tag, payload, rag.settings)}")
    return 0


def llm_judged(rows: dict[str, list[dict]]) -> dict[str, dict[str, Any]]:
    """Per set, the committed LLM verdicts of turn 2 and of the same question asked alone, over the
    dialogues whose two answers are both judged (the rest are counted as unjudged)."""
    store = verdicts.load(VERDICTS)
    out = {}
    for name, part in rows.items():
        found = [(store.get((r["id"], verdicts.answer_sha(r["answer"]))),
                  store.get((r["id"], verdicts.answer_sha(r["full_answer"])))) for r in part]
        both = [(t["correct"], f["correct"]) for t, f in found if t and f]
        turn2 = round(sum(t for t, _ in both) / len(both), 4) if both else None
        full = round(sum(f for _, f in both) / len(both), 4) if both else None
        out[name] = {"judged": len(both), "unjudged": len(part) - len(both), "turn2": turn2,
                     "full": full, "ratio": round(turn2 / full, 4) if turn2 is not None and full else None}
    return out


def rescore(path: Path) -> int:
    """Recompute an earlier result's LLM-judged figures from the verdict store (after judging)."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    payload["llm_judged"] = llm_judged(payload["rows"])
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(payload["llm_judged"]))
    return 0


def reused(path: Path) -> dict[str, dict[str, Any]]:
    """An earlier run's rows by dialogue id."""
    rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    return {r["id"]: r for part in rows.values() for r in part}


def load(path: Path) -> list[dict[str, Any]]:
    """One data file's dialogues."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _dialogue(dialogue: dict, dev: dict[str, dict], ask: Asker, find: Finder,
              earlier: dict | None = None) -> dict[str, Any]:
    """Full question, turn 1, turn 2 after turn 1: answers, judgements, recall, times (the first
    two taken from ``earlier``, a row of another run, when given)."""
    target = dev[dialogue["turn2"]["resolves_to"]]
    # Whether turn 2 is a follow-up depends on its words alone once a turn came before it; one that
    # is not is answered exactly as when asked alone (tests/test_dialogue.py), so it is not asked.
    before = [{"role": "user", "content": dialogue["turn1"]["question"]}]
    if not find(dialogue["turn2"]["question"], before)[1]:
        answer = earlier["full_answer"] if earlier else ask(target["question"], [])[0]
        return _alone(dialogue, target, answer, find)
    if earlier is not None:
        full = (earlier["full_answer"], None, earlier["full_seconds"], earlier["full_retrieval_ms"])
        first: tuple = (earlier["turn1_answer"],)
    else:
        full = ask(target["question"], [])
        first = ask(dialogue["turn1"]["question"], [])
    history = [{"role": "user", "content": dialogue["turn1"]["question"]},
               {"role": "assistant", "content": first[0]}]
    second = ask(dialogue["turn2"]["question"], history)
    evidence = set(target["evidence"])
    recall = lambda found: len(set(found[:K]) & evidence) / len(evidence) if evidence else None  # noqa: E731
    plan = second[1] or {}
    print(f"[{time.strftime('%H:%M:%S')}] {dialogue['id']}: {plan.get('resolved') or '-'!r} "
          f"-> {second[0][:60]!r}", flush=True)
    return {"id": dialogue["id"], "kind": dialogue["kind"], "dev_id": target["id"],
            "type": target["type"],
            "question": dialogue["turn2"]["question"], "full_question": target["question"],
            "gold": target["answer"], "turn1_question": dialogue["turn1"]["question"],
            "turn1_gold": dialogue["turn1"]["answer"], "turn1_answer": first[0], "answer": second[0],
            "full_answer": full[0], "resolved": plan.get("resolved"),
            "follow_up": bool(plan.get("follow_up")),
            "turn1_correct": judge({"answer": dialogue["turn1"]["answer"], "type": "Single"},
                                   first[0])["correct"],
            "correct": judge(target, second[0])["correct"], "full_correct": judge(target, full[0])["correct"],
            "recall": recall(find(dialogue["turn2"]["question"], history)[0]),
            "full_recall": recall(find(target["question"], [])[0]),
            "seconds": round(second[2], 4), "full_seconds": round(full[2], 4),
            "retrieval_ms": round(second[3], 2), "full_retrieval_ms": round(full[3], 2)}


def _alone(dialogue: dict, target: dict, answer: str, find: Finder) -> dict[str, Any]:
    """The row of a turn 2 read alone: its answer and recall are the full question's."""
    found = find(target["question"], [])[0]
    evidence = set(target["evidence"])
    recall = len(set(found[:K]) & evidence) / len(evidence) if evidence else None
    correct = judge(target, answer)["correct"]
    return {"id": dialogue["id"], "kind": dialogue["kind"], "dev_id": target["id"], "type": target["type"],
            "question": dialogue["turn2"]["question"], "full_question": target["question"],
            "gold": target["answer"], "turn1_question": dialogue["turn1"]["question"],
            "turn1_gold": dialogue["turn1"]["answer"], "turn1_answer": None, "answer": answer,
            "full_answer": answer, "resolved": None, "follow_up": False, "turn1_correct": None,
            "correct": correct, "full_correct": correct, "recall": recall, "full_recall": recall,
            "seconds": None, "full_seconds": None, "retrieval_ms": None, "full_retrieval_ms": None}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, recall and added latency of one set."""
    share = lambda key: round(sum(bool(r[key]) for r in rows) / len(rows), 4) if rows else 0.0  # noqa: E731
    recalled = [r for r in rows if r["recall"] is not None]
    mean = lambda key: round(sum(r[key] for r in recalled) / len(recalled), 4) if recalled else None  # noqa: E731
    turn2, full = share("correct"), share("full_correct")
    asked = [r for r in rows if r["seconds"] is not None]  # turn 1 and 2 asked (a follow-up)
    first = round(sum(bool(r["turn1_correct"]) for r in asked) / len(asked), 4) if asked else None
    return {"dialogues": len(rows), "turn1_accuracy": first, "turn2_accuracy": turn2,
            "full_accuracy": full, "ratio": round(turn2 / full, 4) if full else None,
            "turn2_recall@5": mean("recall"), "full_recall@5": mean("full_recall"),
            "resolved_share": share("follow_up"), "slm_calls_to_resolve": 0,
            "added_ms": percentiles([1000 * (r["seconds"] - r["full_seconds"]) for r in asked]),
            "added_retrieval_ms": percentiles([r["retrieval_ms"] - r["full_retrieval_ms"] for r in asked]),
            "by_kind": {kind: {"dialogues": len(part),
                               "turn2": round(sum(r["correct"] for r in part) / len(part), 4),
                               "full": round(sum(r["full_correct"] for r in part) / len(part), 4)}
                        for kind in sorted({r["kind"] for r in rows})
                        if (part := [r for r in rows if r["kind"] == kind])}}


def write_judge_inputs(folder: Path, tag: str, rows: dict[str, list[dict]]) -> list[Path]:
    """The LLM judge's inputs (i, id, answer_sha, question, gold, type, answer), one file per set
    and answer: turn 2 after turn 1, and the same question asked alone."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, part in rows.items():
        for which, key in (("turn2", "answer"), ("full", "full_answer")):
            path = folder / f"{tag}_{name}_{which}.in.jsonl"
            lines = [{"i": i, "id": r["id"], "answer_sha": verdicts.answer_sha(r[key]),
                      "question": r["full_question"], "gold": r["gold"], "type": r["type"], "answer": r[key]}
                     for i, r in enumerate(part)]
            path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            written.append(path)
    return written


def _stamps(rag: EdgeRAG) -> Callable[[list[str]], list[str]]:
    """Document id -> the chat's time stamp, as the evidence names it."""
    from benchmarks.core.datasets import document_timestamp

    known = {d.id: document_timestamp(rag.chunks(d.id)[0].text) for d in rag.documents()}
    return lambda ids: [known.get(i) or "" for i in ids]


@contextmanager
def _library(rag: EdgeRAG, method: str) -> Iterator[tuple[Asker, Finder]]:
    stamps = _stamps(rag)

    def ask(question: str, history: list[dict[str, str]]) -> tuple[str, dict | None, float, float]:
        start = time.perf_counter()
        answer = rag.ask(question, method=method, history=history or None)
        seconds = time.perf_counter() - start
        return answer.text, answer.to_dict()["plan"], seconds, retrieval_ms(answer.timings)

    def find(question: str, history: list[dict[str, str]]) -> tuple[list[str], bool]:
        found = rag.retrieve(question, method=method, history=history or None, top_k=K)
        return stamps([c.doc_id for c in found.chunks]), bool(found.plan and found.plan.follow_up)

    yield ask, find


@contextmanager
def _served(rag: EdgeRAG, slm: str, method: str) -> Iterator[tuple[Asker, Finder]]:
    """``edge-rag serve`` on a copy of the index; the ``openai`` client asks, /v1/retrieve finds."""
    import http.client

    import openai

    stamps = _stamps(rag)
    with tempfile.TemporaryDirectory(prefix="edge-rag-dialogue-") as work:
        index = Path(work) / "index"
        shutil.copytree(rag.directory, index, ignore=shutil.ignore_patterns("*.lock"))
        command = [sys.executable, "-m", "edge_rag.cli", "serve", "--index", str(index),
                   "--host", "127.0.0.1", "--port", "0", "--json"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            url = json.loads(process.stdout.readline() if process.stdout else "{}")["url"]
            client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
            host, port = url.removeprefix("http://").rsplit(":", 1)

            def ask(question: str, history: list[dict[str, str]]) -> tuple[str, dict | None, float, float]:
                start = time.perf_counter()
                reply = client.chat.completions.create(
                    model=slm, messages=[*history, {"role": "user", "content": question}],
                    extra_body={"method": method})
                seconds = time.perf_counter() - start
                extra = reply.model_extra or {}
                spent = retrieval_ms(extra.get("timings_ms", {}))
                return reply.choices[0].message.content or "", extra.get("plan"), seconds, spent

            def find(question: str, history: list[dict[str, str]]) -> tuple[list[str], bool]:
                connection = http.client.HTTPConnection(host, int(port), timeout=120)
                body = json.dumps({"question": question, "top_k": K, "method": method,
                                   "history": history or None})
                connection.request("POST", "/v1/retrieve", body, {"Content-Type": "application/json"})
                found = json.loads(connection.getresponse().read())
                connection.close()
                plan = found.get("plan") or {}
                return stamps([c["doc_id"] for c in found["chunks"]]), bool(plan.get("follow_up"))

            yield ask, find
        finally:
            process.terminate()
            process.wait(60)


# The answer stage's entries of an answer's timings; the others are retrieval's.
ANSWER_STAGES = {"prompt_tokens", "cached_tokens", "focus", "prefill", "decode", "first_token", "generate",
                 "hops"}


def retrieval_ms(timings: dict[str, float]) -> float:
    """The retrieval stages' milliseconds of an answer's timings (a follow-up's ``dialogue`` too)."""
    return sum(v for k, v in timings.items() if k not in ANSWER_STAGES)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks dialogue",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--via", choices=("api", "serve"), default="api",
                        help="ask through the Python API or through edge-rag serve and the openai client")
    parser.add_argument("--limit", type=int, default=None, help="the first N dialogues of each set")
    parser.add_argument("--slm", default=None, help=f"exported SLM folder name (default: {Settings().slm})")
    parser.add_argument("--method", default="auto", help="retrieval method (default: %(default)s)")
    parser.add_argument("--reuse", default=None, metavar="RESULT",
                        help="an earlier run's JSON: its turn-1 and full answers are reused, turn 2 is asked")
    parser.add_argument("--judge-dir", default=None,
                        help=f"write the LLM judge's input files here (e.g. {JUDGE_DIR})")
    parser.add_argument("--rescore", default=None, metavar="RESULT",
                        help="only recompute RESULT's LLM-judged figures from the committed verdicts")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
