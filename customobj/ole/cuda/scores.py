"""The training scores of ``TreeBooster(device="cuda")`` on the device: each round's gradients there.

When the objective has GPU kernels (its ``device_route()``, ``customobj.objectives._<family>_route``),
:class:`DeviceScores` uploads the scores once per fit, computes every round's gradients and
hessians on the device (``Objective.grad_hess_prepared`` with device scores: ``objectives.devices``)
into two buffers it reuses, hands those device arrays to the grower (the backend sums and histograms
them where they are) and adds each finished tree to the scores with :mod:`._scores_kernels`.
When the criterion needs the objective's pair couplings (``ole``, ``ole_fast``, ``ole_float64`` with a
pairwise objective), the same call computes them there too (``objectives._couplings_route``, the
objective's ``device_route().couplings``, or its fused ``grad_hess_couplings``: every built-in loss, the
composites and ``Unbiased`` included), into a pair
buffer it reuses, in the CPU's pair order with the CPU's values (with bagging, the out-of-bag pairs
are dropped there too); the grower's pair histograms and partitions take those device arrays as they
are. Nothing of size ``n`` (or of the pair count) crosses the bus per tree for the gradients and
pairs; ``ole_fast`` prunes them per query where they are (:mod:`.pruning`).

Otherwise the gradients stay on the host, and :func:`host_gradients_reason` says why:

- the criterion needs pair couplings that have no GPU kernel (a user's loss without a ``couplings``
  driver, or a composite holding one),
  or that the host must see (``leaf_solver="joint"`` solves the leaves from every pair:
  ``pairs_on_host``); with ``bagging_fraction < 1`` the out-of-bag pairs are dropped on the device;
- ``line_search`` evaluates the loss on the host;
- the objective has no GPU kernel (its ``device_route()`` raises, saying so).

Under the simulator the device gradients and couplings equal the CPU's bit for bit (the same float64
operations), so the trees do; on a GPU an ``exp`` or ``log`` of the device's libm may differ in the
last bit (tests/_cuda_cases.py), which can only change a split that ties to rounding.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ..._cuda_runtime import THREADS, blocks
from ...objectives.devices import Device, kernels_for
from .memory import DeviceMemory

__all__ = ["DeviceScores", "host_gradients_reason"]


def host_gradients_reason(obj: Any, need_pairs: bool, line_search: bool,
                          pairs_on_host: Optional[str] = None) -> Optional[str]:
    """Why a ``device="cuda"`` fit takes its gradients on the host, or None when the device computes them
    (``pairs_on_host``: why the fit needs its pairs on the host, if it does).

    Examples
    --------
    >>> import customobj
    >>> host_gradients_reason(customobj.RankNet(), need_pairs=False, line_search=False) is None
    True
    >>> host_gradients_reason(2.0 * customobj.RankNet(), need_pairs=True, line_search=False) is None  # its pairs too
    True
    >>> host_gradients_reason(customobj.LambdaRank(), need_pairs=True, line_search=True)
    'line_search evaluates the loss on the host'
    >>> host_gradients_reason(customobj.LambdaRank(), need_pairs=True, line_search=False) is None
    True
    """
    from ...objectives._couplings_route import couplings_reason

    if need_pairs:
        why = pairs_on_host if pairs_on_host is not None else couplings_reason(obj)
        if why is not None:
            return why
    if line_search:
        return "line_search evaluates the loss on the host"
    try:
        kernels_for(obj, Device.CUDA)
    except NotImplementedError as exc:
        return str(exc)
    return None


class DeviceScores:
    """A fit's training scores on the device and the buffers of its gradients.

    Parameters
    ----------
    memory : DeviceMemory
        The backend's allocator (the scores and gradients count toward the fit's peak).
    bins, n_bins : device arrays
        The binned matrix ``(features, rows)`` and each feature's bin count (its NaN bin), on the device.
    obj, prep
        The objective and its prepared data.
    scores : ndarray
        The initial raw scores, ``(n,)`` or ``(n, K)``.
    index_dtype : dtype or None
        The pairs' row index dtype when the tree needs the objective's pair couplings; None when not.
    """

    def __init__(self, memory: DeviceMemory, bins: Any, n_bins: Any, obj: Any, prep: Any,
                 scores: np.ndarray, index_dtype: Optional[type] = None) -> None:
        from . import _scores_kernels as kernels
        from .stats import CountedKernels

        self._kernels, self._mem, self._bins, self._n_bins = CountedKernels(kernels, memory.counter), memory, bins, n_bins
        self.obj, self.prep = obj, prep
        self.scores = memory.upload(np.asarray(scores, dtype=np.float64))
        self.grad = memory.array(self.scores.shape, np.float64)
        self.hess = memory.array(self.scores.shape, np.float64)
        self._objective_bytes = 0
        self._index = index_dtype
        self._pairs: dict = {}  # the pair buffers (the objective's, the bag's), reused while large enough
        self._bag: Any = None  # the round's bag (a bool a row), reused
        self._tree: dict = {}  # a tree's node fields and leaf values, reused while large enough

    def gradients(self, in_bag: Optional[np.ndarray] = None) -> tuple:
        """``(grad, hess, pairs)`` at the current scores, computed on the device (the same two buffers
        each round); ``pairs`` = ``(i, j, c)`` device arrays when the tree needs couplings, else None:
        with ``in_bag`` (bool per row) only those with coupling > 0 and both rows in the bag, as on the CPU."""
        if self._index is None:
            g, h = self.obj.grad_hess_prepared(self.scores, self.prep, self.grad, self.hess)
            pairs = None
        else:
            from ...objectives._couplings_route import grad_hess_couplings_prepared, in_bag_pairs

            g, h, pairs = grad_hess_couplings_prepared(self.obj, self.scores, self.prep, self.grad, self.hess,
                                                       lambda m: self._pair_buffer("objective", m))
            if in_bag is not None:  # a bool a row goes up: the round's bag
                if self._bag is None or self._bag.shape[0] != in_bag.shape[0]:
                    self._bag = self._mem.array(in_bag.shape, np.bool_)
                bag = self._mem.copy_in(self._bag, np.asarray(in_bag, dtype=np.bool_))
                pairs = in_bag_pairs(pairs, bag, lambda m: self._pair_buffer("bag", m))
        held = self.prep.device_data.nbytes()  # the objective's labels, queries and scratch on the device
        self._mem.hold(held - self._objective_bytes)
        self._objective_bytes = held
        return g, h, pairs

    def _pair_buffer(self, name: str, m: int) -> tuple:
        """``m`` pairs' worth of the reused pair buffer ``name`` (grown, by half again, when too small)."""
        buf = self._pairs.get(name)
        if buf is None or buf[0].shape[0] < m:
            self._pairs.pop(name, None)  # freed before the larger one exists
            c = max(1, m + m // 2)
            mem, index = self._mem, self._index if self._index is not None else np.int64  # set when pairs are asked
            buf = self._pairs[name] = (mem.array((c,), index), mem.array((c,), index), mem.array((c,), np.float64))
        return tuple(a[:m] for a in buf)

    def _tree_buffer(self, name: str, m: int, dtype: type) -> Any:
        """A device buffer of at least ``m`` items for a tree's field ``name`` (trees of a fit share it)."""
        buf = self._tree.get(name)
        if buf is None or buf.shape[0] < m:
            buf = self._tree[name] = self._mem.array((max(m, 1),), dtype)
        return buf

    def add_trees(self, trees: List[Any]) -> None:
        """Add tree ``k`` of the round to score column ``k`` (one tree: the scores)."""
        mem, n = self._mem, self.scores.shape[0]
        for k, tree in enumerate(trees):
            out = self.scores if self.scores.ndim == 1 else self.scores[:, k]
            nodes = tree.nodes
            args = [mem.copy_in(self._tree_buffer(name, nodes.shape[0], dtype), nodes[name]) for name, dtype in
                    (("split_feature", np.int64), ("threshold_bin", np.int64), ("default_left", np.bool_),
                     ("left_child", np.int64), ("right_child", np.int64))]
            leaves = tree.leaves["leaf_value"]
            values = mem.copy_in(self._tree_buffer("leaf_value", leaves.shape[0], np.float64), leaves)
            self._kernels.add_tree_bins[blocks(n), THREADS](self._bins, self._n_bins, *args, values, out)
