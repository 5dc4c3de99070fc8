"""What every benchmark uses, one module per concern; no module here imports a benchmark.

- ``paths``: ``ROOT`` (this checkout), ``SHARED`` (the data sets), ``RESULTS``, ``INDEXES``.
- ``datasets``: ``DATASETS`` (documents, dev queries, evidence recall), ``open_index``, LiHua-World
  and 2Wiki loaders, ``half`` (the fixed halves of dev) and ``stratified`` subsets.
- ``answers``: judging (``judge``, ``is_correct``, ``token_f1``) and the answer cache (``answer_all``).
- ``measure``: ``peak_rss_mb``, ``percentiles``, ``RssSampler``, ``stored_files``,
  ``method_footprint``, ``evaluate_recall``.
- ``results``: ``write_result`` (the stamped JSON), ``markdown_table``, ``pyplot``, ``save_figure``.
- ``options``: the shared command-line options (``options``) and ``setting`` (``FIELD=VALUE``).
- ``runtime``: another commit's or checkout's ``edge_rag`` for A/B runs (``runtime_at``,
  ``runtime_of``, ``child_env``).
"""
