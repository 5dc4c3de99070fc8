"""Side by side with the peers: LightRAG and edge-rag on one subset, one embedder, one SLM.

    pip install -e '.[peers]'
    python -m benchmarks peers [--dataset lihua|2wiki] [--queries 10] [--documents 24]
                               [--systems edge-rag,lightrag,minirag]

The subset: ``--queries`` type-stratified dev questions that have evidence, and a corpus of all
their evidence documents plus the documents next to them in corpus order (LiHua-World: the
conversations around the same time; 2Wiki: the neighbouring passages) up to ``--documents``.
Every system indexes that corpus and answers those questions with edge-rag's exported int8
MiniLM embedder and the default profile's SLM (Qwen2.5-Coder-0.5B, 4-bit GQA graph), each in
its own process (peak RSS is the process's VmHWM):

- **edge-rag** (dev profile, fast extractor): vector, topology and auto.
- **LightRAG** (``lightrag-hku``): naive, local, hybrid and mix, with the SLM and the embedder
  plugged into its model hooks, the SLM's own tokenizer (no tiktoken download), reranking off,
  one LLM call at a time. Its prompts need a 4,096-token window; its query context is capped at
  the 2,048 tokens edge-rag's window holds. A socket guard makes any network access an error.
- **MiniRAG** (``minirag-hku``): attempted; its PyPI wheel is recorded as skipped with the reason
  when it does not import and construct unmodified.

Reported per system and mode: answer accuracy (normalised containment), token F1, evidence
recall among the first 5 distinct documents of the context (where the system exposes it),
index build time, index bytes on disk, peak RSS and query latency. Answers and build times
are cached (``benchmarks/results/cache/peers-*.jsonl`` and the working folders under
``benchmarks/.peers``), so a rerun only does what is new. Writes ``peers_<dataset>.json``,
``.md`` and a PNG of accuracy against index size.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.core.answers import judge
from benchmarks.core.datasets import DATASETS, document_timestamp, stratified
from benchmarks.core.measure import peak_rss_mb, percentiles, stored_files
from benchmarks.core.paths import RESULTS, ROOT
from benchmarks.core.results import markdown_table, pyplot, save_figure, write_result
from edge_rag import Document, EdgeRAG, Settings

WORK = ROOT / "benchmarks" / ".peers"
RECALL_AT = 5
SYSTEMS = ("edge-rag", "lightrag", "minirag")
EDGE_METHODS = ("vector", "topology", "auto")
LIGHTRAG_MODES = ("naive", "local", "hybrid", "mix")
SLM_NAME = Settings().slm  # the default profile's SLM
LIGHTRAG_WINDOW = 4096
LIGHTRAG_CONTEXT = 2048
MAX_TOKENS = {"extract": 512, "keyword": 128, "query": 96}


def main(argv: list[str] | None = None) -> int:
    """Run every system in its own process, then print and write the comparison."""
    args = _parser().parse_args(argv)
    if args.child:
        return _child(args)
    results = {}
    for system in args.systems.split(","):
        print(f"[{time.strftime('%H:%M:%S')}] {system}", flush=True)
        results[system] = _run_child(args, system)
    payload = {"dataset": args.dataset, "queries": args.queries, "documents": args.documents,
               "slm": SLM_NAME, "recall_at": RECALL_AT, "systems": results}
    name = f"peers_{args.dataset}"
    table = _table(payload)
    print(table)
    (RESULTS / f"{name}.md").write_text(table + "\n", encoding="utf-8")
    print(f"wrote {write_result(name, payload, Settings.load('dev', slm=SLM_NAME))}")
    _plot(payload, RESULTS / f"{name}.png")
    return 0


def _run_child(args: argparse.Namespace, system: str) -> dict:
    command = [sys.executable, "-m", "benchmarks.peers.peers", "--child", system, "--dataset", args.dataset,
               "--queries", str(args.queries), "--documents", str(args.documents)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode:
        return {"skipped": f"{system} exited with status {done.returncode} (see its output above)"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the subset ---------------------------------------------------------------------------


def subset(dataset: str, queries: int, documents: int) -> tuple[list[dict], list[Document]]:
    """The questions and the corpus every system gets (see the module docstring)."""
    data = DATASETS[dataset]
    asked = stratified([q for q in data.queries() if q["evidence"]], queries)
    corpus = data.documents()
    keys = [evidence_key(dataset, d) for d in corpus]
    wanted = {e for q in asked for e in q["evidence"]}
    chosen = {i for i, key in enumerate(keys) if key in wanted}
    for distance in range(1, len(corpus)):
        if len(chosen) >= documents:
            break
        for i in sorted(chosen):
            for j in (i - distance, i + distance):
                if 0 <= j < len(corpus) and len(chosen) < documents:
                    chosen.add(j)
    return asked, [corpus[i] for i in sorted(chosen)]


def evidence_key(dataset: str, document: Document) -> str:
    """What a question's evidence names a document by: a conversation's time or a passage's title."""
    if dataset == "lihua":
        return document_timestamp(text_of(document)) or document.source
    return document.metadata.get("title", document.source)


def text_of(document: Document) -> str:
    """The whole text of a document."""
    return "".join(document.blocks())


def recall(query: dict, keys: list[str]) -> float:
    """Share of the evidence among the first RECALL_AT distinct documents of a context."""
    found = set(list(dict.fromkeys(keys))[:RECALL_AT])
    return len(found & set(query["evidence"])) / len(query["evidence"])


# -- one system per process -----------------------------------------------------------------


def _child(args: argparse.Namespace) -> int:
    asked, corpus = subset(args.dataset, args.queries, args.documents)
    work = WORK / f"{args.dataset}-q{args.queries}-d{args.documents}" / args.child
    work.mkdir(parents=True, exist_ok=True)
    runner = {"edge-rag": _edge_rag, "lightrag": _lightrag, "minirag": _minirag}[args.child]
    print(f"{args.child}: {len(asked)} questions, {len(corpus)} documents", file=sys.stderr, flush=True)
    result = runner(args, asked, corpus, work)
    result.setdefault("peak_rss_mb", _peak_rss(work))
    print(json.dumps(result))
    return 0


def _cache(args: argparse.Namespace, system: str) -> tuple[Path, dict]:
    path = RESULTS / "cache" / f"peers-{args.dataset}-q{args.queries}-d{args.documents}-{system}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line] if path.is_file() else []
    return path, {(r["mode"], r["id"]): r for r in rows}


def _append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def _build_state(work: Path) -> dict:
    path = work / "state.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_state(work: Path, **values: Any) -> None:
    (work / "state.json").write_text(json.dumps({**_build_state(work), **values}) + "\n")


def _peak_rss(work: Path) -> float:
    """The highest peak RSS of any run that loaded the SLM (a fully cached run loads nothing)."""
    peak = max(_build_state(work).get("peak_rss_mb", 0.0), peak_rss_mb())
    _save_state(work, peak_rss_mb=round(peak, 1))
    return round(peak, 1)


def _folder_bytes(folder: Path) -> int:
    return sum(stored_files(folder, recursive=True).values())


def _summarise(rows: list[dict], asked: list[dict]) -> dict:
    by_id = {q["id"]: q for q in asked}
    judged = [judge(by_id[r["id"]], r["answer"]) for r in rows]
    recalls = [r["recall"] for r in rows if r.get("recall") is not None]
    return {"accuracy": round(statistics.mean(j["correct"] for j in judged), 4),
            "token_f1": round(statistics.mean(j["f1"] for j in judged), 4),
            "recall": round(statistics.mean(recalls), 4) if recalls else None,
            "latency_s": percentiles([r["seconds"] for r in rows], 2)}


def _edge_rag(args: argparse.Namespace, asked: list[dict], corpus: list[Document], work: Path) -> dict:
    cache_path, cache = _cache(args, "edge-rag")
    keys = {d.source: evidence_key(args.dataset, d) for d in corpus}
    with EdgeRAG.open(work / "index", "dev", slm=SLM_NAME, progress=False) as rag:
        if not _build_state(work).get("build_seconds"):
            report = rag.insert(*corpus)
            _save_state(work, build_seconds=round(report.seconds, 1))
        modes = {}
        for method in EDGE_METHODS:
            for query in asked:
                if (method, query["id"]) not in cache:
                    start = time.perf_counter()
                    answer = rag.ask(query["question"], method=method)
                    row = {"mode": method, "id": query["id"], "answer": answer.text,
                           "seconds": round(time.perf_counter() - start, 2),
                           "recall": recall(query, [keys[c.source] for c in answer.sources])}
                    cache[(method, query["id"])] = row
                    _append(cache_path, row)
            modes[method] = _summarise([cache[(method, q["id"])] for q in asked], asked)
    return {"modes": modes, "build_seconds": _build_state(work)["build_seconds"],
            "index_bytes": _folder_bytes(work / "index"), "settings": "profile dev, fast extractor"}


def _lightrag(args: argparse.Namespace, asked: list[dict], corpus: list[Document], work: Path) -> dict:
    _forbid_network()
    try:
        from lightrag import LightRAG, QueryParam
    except ImportError:
        return {"skipped": "lightrag-hku is not installed: pip install -e '.[peers]'"}

    cache_path, cache = _cache(args, "lightrag")
    # LightRAG keeps only a file's base name: name each document by its position.
    names = [f"doc-{i:05d}.txt" for i in range(len(corpus))]
    keys = {name: evidence_key(args.dataset, d) for name, d in zip(names, corpus)}
    hooks = _LightRAGHooks(Settings.load("dev"))

    async def run() -> dict:
        rag = LightRAG(working_dir=str(work / "index"), **hooks.options())
        await rag.initialize_storages()
        try:
            if not _build_state(work).get("build_seconds"):
                start = time.perf_counter()
                await rag.ainsert([text_of(d) for d in corpus], ids=names, file_paths=names)
                _save_state(work, build_seconds=round(time.perf_counter() - start, 1))
            modes = {}
            for mode in LIGHTRAG_MODES:
                for query in asked:
                    if (mode, query["id"]) not in cache:
                        row = await _lightrag_ask(rag, QueryParam, mode, query, keys)
                        cache[(mode, query["id"])] = row
                        _append(cache_path, row)
                modes[mode] = _summarise([cache[(mode, q["id"])] for q in asked], asked)
            return modes
        finally:
            await rag.finalize_storages()

    modes = asyncio.run(run())
    return {"modes": modes, "build_seconds": _build_state(work)["build_seconds"],
            "index_bytes": _folder_bytes(work / "index"), "llm_calls": hooks.calls,
            "settings": f"lightrag-hku {_version('lightrag-hku')}, window {LIGHTRAG_WINDOW}, query context "
                        f"{LIGHTRAG_CONTEXT} tokens, chunk_top_k 5, rerank off, gleaning 0"}


async def _lightrag_ask(rag: Any, query_param: Any, mode: str, query: dict, keys: dict) -> dict:
    param = query_param(mode=mode, enable_rerank=False, chunk_top_k=5, top_k=20,
                        max_total_tokens=LIGHTRAG_CONTEXT, max_entity_tokens=400, max_relation_tokens=400)
    start = time.perf_counter()
    result = await rag.aquery_llm(query["question"], param=param)
    seconds = time.perf_counter() - start
    chunks = (result.get("data") or {}).get("chunks") or []
    answer = (result.get("llm_response") or {}).get("content") or ""
    return {"mode": mode, "id": query["id"], "answer": answer, "seconds": round(seconds, 2),
            "recall": recall(query, [keys.get(c.get("file_path"), "") for c in chunks])}


class _LightRAGHooks:
    """edge-rag's SLM, embedder and tokenizer in the shapes LightRAG's hooks take."""

    def __init__(self, settings: Settings) -> None:
        from edge_rag.models import Embedder
        from edge_rag.models.slm import SLM

        self.embedder = Embedder.from_path(settings.home / "models" / settings.embedder)
        self.slm = SLM.from_path(settings.home / "models" / SLM_NAME, context_tokens=LIGHTRAG_WINDOW)
        self.calls: dict[str, int] = {}

    def options(self) -> dict[str, Any]:
        from lightrag.llm_roles import RoleLLMConfig
        from lightrag.utils import EmbeddingFunc, Tokenizer

        # LightRAG deep-copies its fields: hand it closures (copied by reference), never bound methods
        # (which would copy this object and its onnxruntime sessions).
        roles = {role: RoleLLMConfig(func=self._role(role)) for role in MAX_TOKENS}
        embedder = self.embedder

        async def embed(texts: list[str], **_: Any):
            return await asyncio.to_thread(embedder.embed, texts)

        embedding = EmbeddingFunc(embedding_dim=embedder.dim, max_token_size=embedder.max_tokens,
                                  func=embed, model_name=embedder.folder.name)
        return {"llm_model_func": self._role("query"), "role_llm_configs": roles, "embedding_func": embedding,
                "tokenizer": Tokenizer(SLM_NAME, _SharedTokenizer(self.slm.tokenizer)),
                "llm_model_max_async": 1, "embedding_func_max_async": 1, "max_parallel_insert": 1,
                "entity_extract_max_gleaning": 0, "default_llm_timeout": 3600}

    def _role(self, role: str):
        generate = self._generate

        async def complete(prompt: str, system_prompt: str | None = None, history_messages=None,
                           **_: Any) -> str:
            return await asyncio.to_thread(generate, role, prompt, system_prompt)

        return complete

    def _generate(self, role: str, prompt: str, system: str | None) -> str:
        from edge_rag.models.slm import GenerationConfig

        chat = self.slm.chat(prompt, system)
        room = LIGHTRAG_WINDOW - self.slm.count_tokens(chat) - 8
        self.calls[role] = self.calls.get(role, 0) + 1
        if room < 16:
            return ""  # LightRAG treats an empty completion as nothing extracted / no answer
        config = GenerationConfig(max_new_tokens=min(MAX_TOKENS[role], room))
        return self.slm.generate(chat, config).text


class _SharedTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer as LightRAG's encode/decode interface (thread-safe)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, content: str) -> list[int]:
        return self.tokenizer.encode(content, add_special_tokens=False).ids

    def decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens)

    def __deepcopy__(self, memo: dict) -> _SharedTokenizer:
        return self


def _minirag(args: argparse.Namespace, asked: list[dict], corpus: list[Document], work: Path) -> dict:
    """Try MiniRAG as published; report why it cannot run instead of patching it."""
    _forbid_network()
    spec = importlib.util.find_spec("minirag")
    if spec is None:
        return {"skipped": f"minirag-hku {_version('minirag-hku')}"}
    storages = Path(spec.origin).parent / "kg"
    missing = "" if storages.is_dir() else "; the wheel has no minirag/kg package (every storage backend)"
    try:
        from minirag import MiniRAG

        MiniRAG(working_dir=str(work / "index"))
    except Exception as error:  # noqa: BLE001 - the reason is the result
        return {"skipped": f"minirag-hku {_version('minirag-hku')}: {type(error).__name__}: {error}"
                           f" (it declares no dependencies){missing}"}
    return {"skipped": "MiniRAG constructed; running it is not implemented (it did not, when this was "
                       "written)"}


def _forbid_network() -> None:
    """Any socket connection becomes an error: the peers must run offline."""
    def refuse(*_: Any, **__: Any) -> None:
        raise OSError("benchmarks.peers: network access attempted while running offline")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed (pip install -e '.[peers]')"


# -- output ---------------------------------------------------------------------------------


def _table(payload: dict) -> str:
    headers = ["system", "mode", "accuracy", "F1", f"R@{RECALL_AT}", "latency p50 / p95 s",
               "index build s", "index MiB", "peak RSS MiB"]
    rows, skipped = [], []
    for system, result in payload["systems"].items():
        if "skipped" in result:
            skipped.append(f"{system} skipped: {result['skipped']}")
            continue
        for mode, r in result["modes"].items():
            rows.append([system, mode, r["accuracy"], r["token_f1"], r["recall"] if r["recall"] is not None
                         else "", f"{r['latency_s']['p50']} / {r['latency_s']['p95']}",
                         result["build_seconds"], round(result["index_bytes"] / 2**20, 2),
                         result["peak_rss_mb"]])
    foot = (f"\n{payload['dataset']}: {payload['queries']} questions, {payload['documents']} documents, "
            f"SLM {payload['slm']}, embedder all-MiniLM-L6-v2 int8, 2 cores.")
    return "\n".join([markdown_table(headers, rows) + foot, *skipped])


def _plot(payload: dict, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    figure, axes = plt.subplots(figsize=(6, 4))
    for system, result in payload["systems"].items():
        for mode, r in result.get("modes", {}).items():
            size = result["index_bytes"] / 2**20
            axes.scatter(size, r["accuracy"], marker="o" if system == "edge-rag" else "s")
            axes.annotate(f"{system} {mode}", (size, r["accuracy"]), fontsize=7)
    axes.set_xlabel("index size on disk (MiB)")
    axes.set_ylabel("answer accuracy")
    axes.set_title(f"{payload['dataset']} subset · {payload['slm']}")
    save_figure(plt, figure, path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="lihua", choices=("lihua", "2wiki"))
    parser.add_argument("--queries", type=int, default=10, help="questions (default: %(default)s)")
    parser.add_argument("--documents", type=int, default=24, help="corpus size (default: %(default)s)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated (default: all)")
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
