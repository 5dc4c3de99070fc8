"""The benchmark tool: ``python -m benchmarks NAME [options]`` runs one benchmark,
``python -m benchmarks --list`` names them all with what each measures."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

from benchmarks.registry import GROUPS, Benchmark, every, find, group_summary

USAGE = """usage: python -m benchmarks NAME [options]     run one benchmark (NAME --help: its options)
       python -m benchmarks --list              every benchmark, one line each: what it measures

Each benchmark prints a table and writes benchmarks/results/NAME*.json, stamped with the commit,
the settings that differ from the defaults and the machine; python -m benchmarks.results_md then
rewrites benchmarks/RESULTS.md. A benchmark also runs as python -m benchmarks.GROUP.NAME."""


def main(argv: list[str] | None = None) -> int:
    """List the benchmarks, or run the one named first with the remaining arguments."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(f"{USAGE}\n\n{listing()}")
        return 0 if args else 2
    if args[0] == "--list":
        print(listing())
        return 0
    try:
        benchmark = find(args[0])
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    return run(benchmark, args[1:])


def listing() -> str:
    """Every group with what it measures, then its benchmarks, one line each."""
    width = max(len(b.name) for b in every())
    lines = []
    for group, names in GROUPS.items():
        lines.append(f"{group}/  {group_summary(group)}")
        lines += [f"  {name:<{width}}  {Benchmark(name, group).summary}" for name in names]
    return "\n".join(lines)


def run(benchmark: Benchmark, args: list[str]) -> int:
    """Run a benchmark in this process (a shell script in bash), named as it was called: its usage
    line and its results record ``python -m benchmarks NAME``."""
    if benchmark.module is None:
        return subprocess.run(["bash", str(benchmark.path), *args], check=False).returncode
    main = import_module(benchmark.module).main
    called = sys.argv
    sys.argv = [f"python -m benchmarks {benchmark.name}", *args]
    try:
        return int(main(args) or 0)
    finally:
        sys.argv = called


if __name__ == "__main__":
    raise SystemExit(main())
