"""Fuzz harness for issue 13: hostile inputs for every public entry point, run out of process.

- :mod:`.runner`: a persistent worker process that runs many examples; a segfault or a hang
  (timeout) becomes a reported failure with the offending example, and the worker is restarted.
- :mod:`.strategies`, :mod:`.model_files`: hypothesis strategies for hostile arrays, groups,
  hyperparameters, labels, LETOR files and mutated model files.
- :mod:`.properties`: one property per entry point (a strategy of :class:`.runner.Example`);
  the ``test_fuzz_*`` modules run them on a short, derandomised budget, and
  ``benchmarks/fuzz.py`` runs a longer campaign with random seeds.
- ``_targets_*``: what the worker executes for each example, and the output checks
  (finite, right shape, ...).

Nothing here imports customobj in the test process except through the worker, so a crash never
takes pytest down.
"""
