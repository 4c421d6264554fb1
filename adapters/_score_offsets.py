"""What a ``lightgbm.Dataset`` carries for customobj during a training: its own record, no registry.

LightGBM calls a custom objective with ``(preds, train_set)``, an ``feval`` with ``(preds, data)``,
and a callback with ``env.model`` (whose ``train_set`` and ``valid_sets`` are those Datasets). The
Dataset is the one object all of them see, so each Dataset owns a :class:`DatasetRecord` (attribute
``_customobj``, created on first write) holding what they tell one another:

- ``offset``: score corrections LightGBM does not know about. :class:`~customobj.adapters.callbacks.
  LineSearch` and :class:`~customobj.adapters.exact_leaves.ExactLeaves` change each new tree's
  leaves after LightGBM has added the tree as built to its cached scores of every Dataset, and
  LightGBM offers no way to rewrite those caches; the difference is accumulated here, and every
  reader of LightGBM's scores adds it back: the training objective
  (:class:`~customobj.adapters.lightgbm.LightGBMObjective`) before its gradients, the metric
  (:class:`~customobj.adapters.metrics.LightGBMMetric`) before scoring.
- ``trained_by``: the customobj objective a ``lightgbm_objective`` trained on this Dataset (it sees
  the Dataset only through ``lightgbm.train``), read by those callbacks to check they search the
  loss LightGBM trains.
- ``couplings``: ExactLeaves' request for each round's pair couplings from the objective's own pass.
- ``claimed_by``: the booster (weakly) whose callback corrects this Dataset's scores, so a second
  correcting callback in the same training, or a Dataset reused from an earlier one, is refused.

The record lives and dies with its Dataset: nothing here keeps a Dataset alive, nothing is global.
"""
from __future__ import annotations

import weakref
from typing import Any, Literal, overload

import numpy as np

__all__ = ["DatasetRecord", "record_of", "apply_offset"]

#: The attribute of a Dataset that holds its record.
_ATTR = "_customobj"


class DatasetRecord:
    """customobj's state of one Dataset (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> class Dataset:  # any object with a writable attribute stands for a lightgbm.Dataset
    ...     pass
    >>> ds = Dataset()
    >>> apply_offset(ds, np.array([1.0, 2.0])).tolist()  # nothing recorded: unchanged
    [1.0, 2.0]
    >>> record_of(ds, create=True).add_offset(np.array([0.5, -0.5]))
    >>> record_of(ds).add_offset(np.array([0.5, 0.5]))
    >>> apply_offset(ds, np.array([1.0, 2.0])).tolist()
    [2.0, 2.0]
    """

    __slots__ = ("offset", "trained_by", "couplings", "claimed_by")

    def __init__(self) -> None:
        self.offset: np.ndarray | None = None
        self.trained_by: Any = None  # customobj Objective
        self.couplings: Any = None  # ExactLeaves' request (never refers to the Dataset: no cycle)
        self.claimed_by: weakref.ref | None = None  # weakref to the booster of the correcting callback

    def add_offset(self, delta: np.ndarray) -> None:
        """Accumulate ``delta`` (a float64 copy is kept; the first call fixes the shape)."""
        if self.offset is None:
            self.offset = np.array(delta, dtype=np.float64, copy=True)
        else:
            self.offset += delta

    def claimed_by_booster(self, booster: object) -> bool:
        """Whether a callback of ``booster``'s training already corrects this Dataset's scores."""
        return self.claimed_by is not None and self.claimed_by() is booster


@overload
def record_of(dataset: object, *, create: Literal[True]) -> DatasetRecord: ...


@overload
def record_of(dataset: object, *, create: bool = False) -> DatasetRecord | None: ...


def record_of(dataset: object, *, create: bool = False) -> DatasetRecord | None:
    """The record of ``dataset``: ``None`` when it has none, unless ``create``."""
    record = getattr(dataset, _ATTR, None)
    if record is None and create:
        record = DatasetRecord()
        setattr(dataset, _ATTR, record)
    return record


def apply_offset(dataset: object, preds: np.ndarray) -> np.ndarray:
    """``preds`` plus the score offset of ``dataset``: ``preds`` itself when there is none."""
    record = getattr(dataset, _ATTR, None)
    if record is None or record.offset is None:
        return preds
    return np.asarray(preds) + record.offset
