"""Fuzz harness for issue 13: hostile inputs for every public entry point, run out of process.

- :mod:`.runner`: a persistent worker process that runs many examples; a segfault or a hang
  (timeout) becomes a reported failure with the offending example, and the worker is restarted.
- :mod:`.strategies`, :mod:`.model_files`: hypothesis strategies for hostile arrays, groups,
  hyperparameters, labels, LETOR files and mutated model files.
- :mod:`.properties`, :mod:`.properties_ole`, :mod:`.properties_io`: one property per entry
  point (a strategy of :class:`.runner.Example`); the ``test_fuzz_*`` modules run them on a short,
  derandomised budget (``CUSTOMOBJ_FUZZ_EXAMPLES``, default 25 each), and ``benchmarks/fuzz.py``
  runs a longer campaign with random seeds.
- :mod:`.issue_examples`: the examples named in issue 13, one test each (a checklist).
- ``_targets*``: what the worker executes for each example, and the output checks (finite,
  right shape, agreement with a direct call or a reference, previous file intact, ...).

Environment: ``CUSTOMOBJ_FUZZ_TIMEOUT`` (hang timeout, default 10 s), ``CUSTOMOBJ_FUZZ_MEMORY_GB``
(worker address-space limit, default 4), ``CUSTOMOBJ_FUZZ_SHRINK=1`` (shrink failing examples).

Nothing here imports customobj in the test process except through the worker, so a crash never
takes pytest down.
"""
