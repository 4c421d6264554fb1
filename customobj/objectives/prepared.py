"""Training data validated and converted once per data set, with each objective's label-only state.

Objectives build it in ``prepare`` (:mod:`customobj.objectives.base`); adapters and the OLE booster
pass it to every round's ``*_prepared`` call, so validation and label-only precomputation (pairs,
ideal DCGs, ...) run once, not every boosting round.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .._validation import as_labels, as_weight
from ..groups import GroupLike, Groups, as_groups

__all__ = ["Collective", "Prepared"]


class _StateOwner(Protocol):
    """What :meth:`Prepared.state_for` needs of an objective (``Objective`` provides it)."""

    def _cache_key(self) -> tuple: ...

    def check_prepared(self, prep: "Prepared") -> None: ...

    def _state(self, prep: "Prepared") -> Any: ...


class Collective(Protocol):
    """Element-wise sums and maxima of an array over the workers that train one model together.

    A distributed trainer sets it on each worker's :class:`Prepared` (XGBoost on Dask:
    ``xgboost.collective.allreduce``, ``customobj.adapters.xgboost``); every worker must make the
    same calls in the same order (a call blocks until all workers made it)."""

    def sum(self, values: np.ndarray) -> np.ndarray: ...

    def max(self, values: np.ndarray) -> np.ndarray: ...


class Prepared:
    """Validated, converted training data plus each objective's label-only state.

    Build with ``objective.prepare(labels, group, weight)``; it may be reused with any
    scores of the same rows, and by any objective: every objective runs its own label checks
    (``check_prepared``) the first time it sees a ``Prepared``, which records the objectives whose
    checks passed (:attr:`checked`), so a ``Prepared`` built by a lenient objective cannot carry
    labels past a strict one. States are cached per objective.

    ``position`` (each row's display position, 0 = top, or None) travels beside the weights and
    groups for the objectives that read it (:class:`customobj.clicks.Unbiased`, which checks it
    once, when it builds its state); the others ignore it.

    ``collective`` (a :class:`Collective`, or None on one machine): set by a distributed trainer when
    this is one worker's part of the training data. An objective that estimates something from all
    rows every round (``Unbiased``'s propensities) combines the workers' sums through it, so every
    worker derives the estimate of all the data.
    """

    __slots__ = ("labels", "groups", "weight", "position", "_states", "_checked", "device_data", "collective")

    def __init__(self, labels: np.ndarray, groups: "Groups | None", weight: "np.ndarray | None",
                 position: "np.ndarray | None" = None) -> None:
        self.labels = labels
        self.groups = groups
        self.weight = weight
        self.position = position
        self._states: dict[tuple, Any] = {}
        self._checked: list[str] = []
        self.device_data: object = None  # its copies in GPU memory (objectives.devices.DeviceData), on first use
        self.collective: "Collective | None" = None

    @property
    def checked(self) -> tuple:
        """``repr`` of each objective whose label checks this data passed, in order."""
        return tuple(self._checked)

    @property
    def ptr(self) -> np.ndarray:
        assert self.groups is not None  # build() always sets groups (one query when none given)
        return self.groups.ptr

    @property
    def n_rows(self) -> int:
        return self.labels.shape[0]

    def state_for(self, objective: _StateOwner) -> Any:
        """The objective's label-only state; on first use, its label checks run (once per data set)."""
        key = objective._cache_key()
        if key not in self._states:
            objective.check_prepared(self)
            self._checked.append(repr(objective))
            self._states[key] = objective._state(self)
        return self._states[key]

    @classmethod
    def build(cls, labels: npt.ArrayLike, group: "GroupLike | None", weight: "npt.ArrayLike | None" = None, *,
              integer_labels: bool = False, position: "npt.ArrayLike | None" = None) -> "Prepared":
        y = as_labels(labels, integer=integer_labels)
        g = as_groups(group, y.shape[0]) if group is not None else Groups.from_sizes([y.shape[0]])
        w = as_weight(weight, y.shape[0])
        return cls(y, g, w, None if position is None else np.asarray(position))
