"""On-device benchmarks: ``python -m benchmarks NAME [options]`` runs one, ``--list`` names them all.

Each benchmark prints a table and writes ``benchmarks/results/NAME*.json``, stamped with the
commit, the settings that differ from the defaults and the machine; ``python -m
benchmarks.results_md`` renders those files into ``benchmarks/RESULTS.md`` with the prose of
``benchmarks/notes/``. The benchmarks live in one sub-package per concern (retrieval, answers, slm,
index, scale, server, peers, checks), are listed in ``registry.GROUPS``, and import only
``benchmarks.core`` (what they all share) and their own group's helpers.
"""
