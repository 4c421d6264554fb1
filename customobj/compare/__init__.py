"""``customobj compare``: train many rankers on the same folds and compare them.

``methods`` parses method names, ``trainers`` trains one method on one fold, ``report`` builds the
tables, the paired test, the serialised CSV/JSON files and the learning-curve plot, ``output``
checks the ``--out`` folder before training and writes the files atomically, and ``command``
wires it all to the command line (``add_arguments(parser)``, ``run(args) -> int``). ``runner`` is
the loop over folds, methods and seeds (``--seeds``), ``tuning`` the Optuna search (``--tune``),
``ensemble`` the ``ens:A+B`` methods and ``stats`` Holm's correction of the paired tests.
"""
from .methods import MethodSpec, parse_method, parse_methods, split_methods

__all__ = ["MethodSpec", "parse_method", "parse_methods", "split_methods"]
