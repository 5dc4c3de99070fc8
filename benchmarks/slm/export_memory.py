"""Peak memory of a command (an export, the README's first command) under a watchdog.

Runs ``COMMAND`` in its own process group, samples the resident set of every process in the
group every ``--interval`` seconds, and kills the group as soon as one process holds more than
``--limit-gib`` (an export that would push a shared machine into the out-of-memory killer is
stopped first). Reported: the peak RSS of the largest process (``ru_maxrss`` of the waited-for
tree, which the kernel keeps exactly), the largest sampled sum over the group, the wall time
and the exit status. With ``--name`` the result is written to
``benchmarks/results/export_memory_NAME.json``; several runs of one name are kept side by side
under their ``--label``.

    python -m benchmarks export_memory --name q05 --label new -- \\
        edge-rag export slm qwen2.5-coder-0.5b --bits 4 --name q05-new
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.core.paths import RESULTS
from benchmarks.core.results import markdown_table, write_result

PAGE = os.sysconf("SC_PAGE_SIZE")


def group_rss(pgid: int) -> tuple[int, int]:
    """(largest, total) resident bytes of the processes in process group ``pgid``."""
    largest = total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            rss = int((entry / "statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        largest, total = max(largest, rss), total + rss
    return largest, total


def watch(command: list[str], limit_gib: float, interval: float) -> dict:
    """Run ``command`` under the watchdog; its peaks, time and exit status."""
    started = time.perf_counter()
    process = subprocess.Popen(command, start_new_session=True)
    sampled = summed = 0
    killed = False
    while process.poll() is None:
        largest, total = group_rss(process.pid)
        sampled, summed = max(sampled, largest), max(summed, total)
        if largest > limit_gib * 2**30 and not killed:
            print(f"[watchdog] {largest / 2**30:.2f} GiB > {limit_gib} GiB: killing", file=sys.stderr)
            os.killpg(process.pid, signal.SIGKILL)
            killed = True
        time.sleep(interval)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"command": " ".join(command), "exit_status": process.returncode, "killed": killed,
            "peak_rss_gib": round(max(peak, sampled) / 2**30, 3),
            "sampled_group_gib": round(summed / 2**30, 3),
            "seconds": round(time.perf_counter() - started, 1), "limit_gib": limit_gib}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-gib", type=float, default=8.0, help="kill above this RSS")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples")
    parser.add_argument("--name", help="write benchmarks/results/export_memory_NAME.json")
    parser.add_argument("--label", default="run", help="this run's key in that file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    result = watch(command, args.limit_gib, args.interval)
    print(markdown_table(["label", "peak RSS GiB", "group GiB", "s", "exit", "killed"],
                         [[args.label, result["peak_rss_gib"], result["sampled_group_gib"],
                           result["seconds"], result["exit_status"], result["killed"]]]))
    if args.name:
        path = RESULTS / f"export_memory_{args.name}.json"
        runs = json.loads(path.read_text())["runs"] if path.is_file() else {}
        runs[args.label] = result
        write_result(f"export_memory_{args.name}", {"runs": runs}, None)
    return 0 if result["exit_status"] == 0 and not result["killed"] else 1


if __name__ == "__main__":
    sys.exit(main())
