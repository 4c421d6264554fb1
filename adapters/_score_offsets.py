"""Score corrections that LightGBM does not know about, kept per ``lightgbm.Dataset``.

:class:`~customobj.adapters.callbacks.LineSearch` rescales each new tree's leaves after LightGBM
has already added the unscaled tree to its own cached scores of every Dataset; LightGBM offers no
way to rewrite those caches. The difference ``(scale - 1) * tree`` is therefore recorded here, and
every reader of LightGBM's scores adds it back: the training objective
(:class:`~customobj.adapters.lightgbm.LightGBMObjective`) before computing gradients, and the
evaluation metric (:class:`~customobj.adapters.metrics.LightGBMMetric`) before scoring.

Two writers (``LineSearch`` and ``ExactLeaves``), two readers, one owner: :data:`SCORE_OFFSETS`. Entries are held
weakly, so an offset leaves with its Dataset.
"""
from __future__ import annotations

import weakref

import numpy as np

__all__ = ["ScoreOffsets", "SCORE_OFFSETS"]


class ScoreOffsets:
    """Per-Dataset float64 offsets added to LightGBM's scores (weakly keyed by the Dataset).

    Examples
    --------
    >>> import numpy as np
    >>> class Dataset:  # any weak-referenceable object stands for a lightgbm.Dataset
    ...     pass
    >>> offsets, ds = ScoreOffsets(), Dataset()
    >>> offsets.apply(ds, np.array([1.0, 2.0])).tolist()  # nothing recorded: unchanged
    [1.0, 2.0]
    >>> offsets.add(ds, np.array([0.5, -0.5])); offsets.add(ds, np.array([0.5, 0.5]))
    >>> offsets.apply(ds, np.array([1.0, 2.0])).tolist()
    [2.0, 2.0]
    """

    def __init__(self) -> None:
        self._by_dataset: "weakref.WeakKeyDictionary[object, np.ndarray]" = weakref.WeakKeyDictionary()

    def get(self, dataset: object) -> "np.ndarray | None":
        """The accumulated offset of ``dataset`` (float64, the shape of its scores), or ``None``."""
        return self._by_dataset.get(dataset)

    def add(self, dataset: object, delta: np.ndarray) -> None:
        """Accumulate ``delta`` (a copy is kept; the first call fixes the shape) for ``dataset``."""
        off = self._by_dataset.get(dataset)
        if off is None:
            self._by_dataset[dataset] = np.array(delta, dtype=np.float64, copy=True)
        else:
            off += delta

    def __contains__(self, dataset: object) -> bool:
        return dataset in self._by_dataset

    def discard(self, dataset: object) -> None:
        """Forget the offset of ``dataset`` (an earlier training's), if any."""
        self._by_dataset.pop(dataset, None)

    def apply(self, dataset: object, preds: np.ndarray) -> np.ndarray:
        """``preds`` plus the offset of ``dataset``: ``preds`` itself when there is none."""
        off = self.get(dataset)
        return preds if off is None else np.asarray(preds) + off


#: The process-wide registry: written by ``LineSearch`` and ``ExactLeaves``, read by the LightGBM objective and metric.
SCORE_OFFSETS = ScoreOffsets()
