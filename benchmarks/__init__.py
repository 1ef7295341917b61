"""The benchmarks of cubecl-server: ``python -m benchmarks`` writes BENCHMARKS.md.

One module per figure group (``hot_path``, ``obtain``, ``peers``, ``batches``, ``store``,
``kernel_throughput``, ``growth``), the harness that runs them, and the worker that
fresh processes run.
"""
