"""On-device benchmark scripts: each prints a table and writes JSON to benchmarks/results/."""
