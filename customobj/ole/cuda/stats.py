"""What ``TreeBooster(device="cuda")`` asks of the card, counted: ``model.device_stats_``.

Every kernel launch, blocking device-to-host read, device allocation and byte copied each way that
the GPU backend (:mod:`.backend`, :mod:`.scores`, :mod:`.memory`) makes goes through
one :class:`DeviceCounter`, a few Python integers: no synchronisation is added and nothing runs on
the device, so the counts are the same under numba's CUDA simulator and on a real card, and cost
well under a microsecond per event (a launch costs several).

The counts are kept per tree, from the tree's first call (its root sums) to its row order
(:class:`DeviceCounts`, one per tree, in growth order), and outside the trees (``outside``: the
fit's uploads and pool, each round's bag and the finished trees added to the scores). The
objective's own kernels (gradients and pair couplings, :mod:`customobj.objectives`) launch outside
the backend: their launches and reads over the fit are counted apart
(``objective_launches``, ``objective_reads``, from ``objectives._launch.LaunchCount``), so the
trees' budget stays the trees'; the arrays they keep on the device are in
``TreeBooster.device_memory_peak_``.

A split is one of the tree's nodes; :meth:`DeviceStats.per_split` divides the trees' counts by their
splits: what the launch budget of :data:`BUDGET` bounds. ``expansions`` counts the splits the card
made (one a leaf of the backend's ``expand`` batches): the tree's and, best-first with lookahead
(:data:`customobj.ole.cuda.backend.BEST_FIRST_LOOKAHEAD`), those it never used; their work is in the
tree's counts.

Examples
--------
>>> counter = DeviceCounter()
>>> counter.begin_tree(); counter.launch(); counter.read(96); counter.split(); counter.end_tree()
>>> counter.allocation(800)
>>> stats = counter.stats()
>>> stats.n_trees, stats.trees[0].launches, stats.trees[0].reads, stats.outside.allocations
(1, 1, 1, 1)
>>> stats.per_split()["reads"]
1.0
"""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple

__all__ = ["DeviceCounts", "DeviceStats", "DeviceCounter", "CountedKernels", "BUDGET", "BATCH_BUDGET", "FIELDS"]

#: The counted quantities, in the order of :class:`DeviceCounts`.
FIELDS = ("launches", "reads", "allocations", "bytes_to_device", "bytes_to_host", "splits", "expansions")

#: Issue 32's launch budget, per split on average over a fit's trees: kernel launches and
#: blocking device-to-host reads; allocations: in every tree (the pool is made before the first).
#: The one home of these limits (tests/test_ole_cuda_stats.py asserts them for every criterion).
BUDGET = {"launches": 8.0, "reads": 1.0, "allocations": 0}

#: Issue 42's budget per batch of splits (a best-first leaf, a breadth-first level: the grower's
#: ``expand`` call): blocking reads, and split-search launches (every criterion; ``ole_fast`` chooses
#: each split's features first and keeps each node's choice for the batch's one search). A batch
#: whose children are never searched reads nothing. Row partitions of a batch of several splits: its
#: rows marked in one launch, placed (with the pairs counted) in another (``partitions.level``).
#: ``ole_fast``'s feature choice of such a batch: one launch for every searched child
#: (``_choice_kernels.wse_choose_level``; a lone split's children: ``wse_choose``), and their pair
#: histograms over the features chosen: one more (``chosen_level_pairs``; a lone split's:
#: ``chosen_child_pairs``). Its searched splits' pair placings and smaller children's row histograms:
#: one launch (``_level_place_kernels.place_sides_row_hist_level``; a lone split's: ``place_sides_row_hist``).
BATCH_BUDGET = {"reads": 1, "search_launches": 1, "partition_launches": 2, "choice_launches": 1,
                "chosen_pairs_launches": 1, "placing_launches": 1}


class DeviceCounts(NamedTuple):
    """One tree's (or the outside's) counts."""

    launches: int  # kernel launches
    reads: int  # blocking device-to-host copies (each waits for every kernel before it)
    allocations: int  # device arrays allocated (uploads included)
    bytes_to_device: int
    bytes_to_host: int
    splits: int  # the tree's splits; 0 outside
    expansions: int = 0  # the splits made on the card: the tree's and, best-first, those it never used


class DeviceStats(NamedTuple):
    """A fit's device counts: ``model.device_stats_`` of ``TreeBooster(device="cuda")`` (None on the CPU).

    Attributes
    ----------
    trees : tuple of DeviceCounts
        Per tree grown, in growth order.
    outside : DeviceCounts
        What the fit did outside the trees' growth: uploads of the data, the pool, each round's bag
        and the trees added to the device scores.
    objective_launches, objective_reads : int
        The objective's own kernel launches and blocking reads over the fit (its gradients and pair
        couplings, every round), apart from the trees' budget.
    """

    trees: Tuple[DeviceCounts, ...]
    outside: DeviceCounts
    objective_launches: int = 0  # the objective's kernel launches over the fit (gradients, couplings)
    objective_reads: int = 0  # its blocking reads (the pair total of each round's couplings)

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    def total(self, first: int = 0) -> DeviceCounts:
        """The counts of trees ``first:`` summed."""
        return DeviceCounts(*(sum(t[k] for t in self.trees[first:]) for k in range(len(FIELDS))))

    def per_split(self, first: int = 0) -> Dict[str, float]:
        """The trees' (from tree ``first``) launches, reads and allocations per split, on average."""
        tot = self.total(first)
        n = max(tot.splits, 1)
        return {name: getattr(tot, name) / n for name in ("launches", "reads", "allocations")}

    def as_dict(self) -> Dict[str, Any]:
        """Plain types for JSON: totals, per split, per tree and outside."""
        return {"n_trees": self.n_trees, "total": self.total()._asdict(), "per_split": self.per_split(),
                "outside": self.outside._asdict(), "trees": [t._asdict() for t in self.trees],
                "objective_launches": self.objective_launches, "objective_reads": self.objective_reads}


class DeviceCounter:
    """The counters the backend bumps (see the module docstring); :meth:`stats` makes the record."""

    def __init__(self) -> None:
        self._trees: list = []
        self._outside = [0] * len(FIELDS)
        self._now = self._outside

    def begin_tree(self) -> None:
        """Counts go to a new tree from here on."""
        self._now = [0] * len(FIELDS)
        self._trees.append(self._now)

    def end_tree(self) -> None:
        """Counts go outside the trees from here on."""
        self._now = self._outside

    def launch(self) -> None:
        self._now[0] += 1

    def read(self, nbytes: int) -> None:
        """A blocking device-to-host copy of ``nbytes``."""
        self._now[1] += 1
        self._now[4] += int(nbytes)

    def allocation(self, nbytes_uploaded: int = 0) -> None:
        """A device array allocated (``nbytes_uploaded`` copied into it from the host)."""
        self._now[2] += 1
        self._now[3] += int(nbytes_uploaded)

    def to_device(self, nbytes: int) -> None:
        """A host-to-device copy into an array that exists."""
        self._now[3] += int(nbytes)

    def split(self) -> None:
        """A split made on the card (counted as the tree's until :meth:`tree_splits` says otherwise)."""
        self._now[5] += 1
        self._now[6] += 1

    def tree_splits(self, n: int) -> None:
        """The last tree begun has ``n`` splits (best-first lookahead: fewer than the card made)."""
        if self._trees:
            self._trees[-1][5] = int(n)

    def stats(self) -> DeviceStats:
        return DeviceStats(tuple(DeviceCounts(*t) for t in self._trees), DeviceCounts(*self._outside))


class _CountedKernel:
    """``kernel[grid](*args)`` as numba.cuda's, counting one launch per configuration."""

    __slots__ = ("_kernel", "_counter")

    def __init__(self, kernel: Any, counter: DeviceCounter) -> None:
        self._kernel, self._counter = kernel, counter

    def __getitem__(self, config: Any) -> Any:
        self._counter.launch()  # every configuration in the backend is launched at once
        return self._kernel[config]


class CountedKernels:
    """A kernel module whose kernels count their launches in ``counter`` (other names pass through).

    >>> import types
    >>> class Kernel:
    ...     def __getitem__(self, config): return lambda *args: None
    >>> counter = DeviceCounter()
    >>> k = CountedKernels(types.SimpleNamespace(add=Kernel()), counter)
    >>> k.add[4, 128](1, 2); k.add[1, 1]()
    >>> counter.stats().outside.launches
    2
    """

    def __init__(self, module: Any, counter: DeviceCounter) -> None:
        self._module, self._counter = module, counter

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self._module, name)
        wrapped = _CountedKernel(obj, self._counter) if hasattr(obj, "__getitem__") else obj
        setattr(self, name, wrapped)  # looked up once
        return wrapped
