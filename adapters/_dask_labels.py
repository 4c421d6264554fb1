"""``MultiObjective``'s label columns on Dask: split with the query-aligned partitions, checked where
they are, and found again by each worker's objective (issue 41, docs/multi-objective.md, "Dask").

Why the rows carry their identity: ``xgboost.dask`` builds a worker's DMatrix from the partitions the
scheduler lists for it, in the scheduler's order, and sorts the rows by ``qid`` (``np.argsort``, not
stable) when that order is not already sorted; so a worker cannot tell from its DMatrix which rows it
holds, nor in which order. Each row therefore carries its partition index and its offset inside the
partition, in XGBoost's ``label_lower_bound`` / ``label_upper_bound`` (read only by the survival
objectives, ``survival:aft``, which a customobj training never runs): float32, exact for whole numbers
below ``2**24``, hence :data:`MAX_PARTITION_ROWS`. The sort moves them with their rows.

The label columns themselves stay float64 and never pass the client: each partition's columns are
rechunked to its rows, checked by a task next to the partition (the same checks one machine runs, so a
bad column fails before any worker trains, instead of one worker failing while the others wait in an
allreduce), and kept there as one ``rows x columns`` block (a Dask future, published under a name of
the training's until it ends). A worker's objective takes each of its rows' labels from those blocks
(:func:`local_objective`: from its own memory, or through its client from a block held elsewhere), and trains a
:meth:`~customobj.multi.MultiObjective.with_labels` copy of the user's objective on them; the sums of
the round (costs, Gram matrix) then go over the workers (``Prepared.collective``: XGBoost's allreduce, or
for LightGBM Dask ``Variable``s, ``adapters._dask_collective``), so every worker solves the one-machine problem.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, NamedTuple, TypeGuard

import numpy as np

from customobj.multi import MultiObjective
from customobj.objectives.base import Objective

from ._dask_collective import COLLECTIVE_TIMEOUT_S, VariableCollective
from ._dask_partition import QueryPartitions, _as_dask_array, _workers
from .lightgbm import LightGBMObjective

__all__ = ["LabelBlocks", "LabelPlan", "LabelledLightGBMObjective", "MAX_PARTITION_ROWS", "PARTITION_WEIGHT_BASE",
           "has_label_columns", "split_labels", "released", "local_objective", "walk_objectives"]

#: Added to the partition index carried in LightGBM's weights (0 and all-1 weights would not arrive).
PARTITION_WEIGHT_BASE = 2
#: Rows a partition may hold when its rows carry their offset in a float32 field (exact below 2**24).
MAX_PARTITION_ROWS = 2**24


class LabelBlocks(NamedTuple):
    """Where a worker finds the partitions' checked ``rows x columns`` float64 label blocks."""

    dataset: str  # the name under which the client published the blocks' futures (``Client.publish_dataset``)
    keys: tuple  # per partition, its block's Dask key (in the memory of the partition's worker, normally)


class LabelPlan(NamedTuple):
    """What the workers need to find their rows' label columns."""

    template: MultiObjective  # the user's objective, each column an empty array (the columns never travel)
    blocks: LabelBlocks
    lower: Any  # Dask arrays chunked as the partitions: each row's partition index, and its offset in it
    upper: Any


def has_label_columns(objective: object) -> TypeGuard[MultiObjective]:
    """Whether ``objective`` is a ``MultiObjective`` with label columns; ValueError for one nested inside
    another objective (only the objective given to the trainer is split with the partitions)."""
    if isinstance(objective, MultiObjective) and any(y is not None for y in objective.labels):
        _refuse_nested(objective.objectives)
        return True
    _refuse_nested([objective])
    return False


def walk_objectives(roots: Any) -> Iterator[Any]:
    """Every objective in the trees of ``roots``: the parts of sums, the objectives of a ``MultiObjective``,
    the objective a wrapper (``Scaled``, ``Unbiased``) holds."""
    stack = list(roots)
    while stack:
        o = stack.pop()
        yield o
        stack.extend(getattr(o, "parts", ()))
        stack.extend(getattr(o, "objectives", ()))
        inner = getattr(o, "objective", None)
        if inner is not None:
            stack.append(inner)


def _refuse_nested(roots: Any) -> None:
    for o in walk_objectives(roots):
        if isinstance(o, MultiObjective) and any(y is not None for y in o.labels):
            raise ValueError("a MultiObjective(labels=[...]) inside another objective: on Dask only the objective "
                             "given to the trainer has its label columns split with the partitions; pass the "
                             "MultiObjective itself (its objectives may be sums, scaled or Unbiased)")


def _columns(objective: MultiObjective, n_rows: int, row_chunks: tuple) -> list:
    """Each label column as a Dask array with the partitions' row chunks (ValueError naming ``labels[k]``)."""
    out = []
    for k, y in enumerate(objective.labels):
        if y is None:
            continue
        col = _as_dask_array(y, f"labels[{k}]", two_d=False)
        if col.shape[0] != n_rows:
            raise ValueError(f"labels[{k}] has {col.shape[0]} entries but the training data has {n_rows} rows (one "
                             "label per row, in the rows' order: a column of the same Dask frame, or numpy)")
        out.append(col.rechunk({0: row_chunks}))
    return out


def _checked_block(template: MultiObjective, index: int, first: int, y: Any, group: Any, weight: Any,
                   *cols: Any) -> np.ndarray:
    """One partition's label columns, checked as one machine checks them (every objective on its own
    column, per query), as a float64 ``rows x columns`` block; the rows' weights (LightGBM) as one more
    column when given."""
    arrays = iter(np.asarray(c) for c in cols)
    labels = [None if t is None else next(arrays) for t in template.labels]
    w = None if weight is None else np.asarray(weight, dtype=np.float64)
    try:
        local = template.with_labels(labels)
        local.prepare(np.asarray(y, dtype=np.float64), np.asarray(group), w)
    except (ValueError, TypeError) as err:
        last = first + int(np.shape(y)[0]) - 1
        raise type(err)(f"partition {index} (rows {first}..{last} of the training data): {err}") from None
    return np.column_stack([np.asarray(c, dtype=np.float64) for c in cols] + ([] if w is None else [w]))


def _row_ids(block: np.ndarray, which: int, block_id: Any = None) -> np.ndarray:
    """A partition's rows' index of partition (``which`` 0) or offset inside it (1), as float32."""
    n = block.shape[0]
    if which == 0:
        return np.full(n, block_id[0], dtype=np.float32)
    return np.arange(n, dtype=np.float32)


def split_labels(client: Any, objective: MultiObjective, parts: QueryPartitions) -> LabelPlan:
    """The label columns of ``objective`` split with ``parts`` (placed as the partitions are: partition
    ``i`` on worker ``i % n_workers``) and checked there; raises the first partition's error."""
    import dask
    import distributed

    y: Any = parts.y  # Dask arrays (QueryPartitions holds them as object)
    row_chunks = tuple(int(c) for c in y.chunks[0])
    biggest = max(row_chunks, default=0)
    if biggest >= MAX_PARTITION_ROWS:
        raise ValueError(f"a partition of {biggest} rows: with label columns each row carries its offset in a "
                         f"float32 field, exact below {MAX_PARTITION_ROWS}; use more partitions (npartitions=)")
    cols = _columns(objective, int(y.shape[0]), row_chunks)
    template = objective.with_labels([None if c is None else np.zeros(0) for c in objective.labels])
    blocks = [list(a.to_delayed().ravel()) for a in cols]
    group: Any = parts.group
    weight: Any = parts.weight
    ys = list(y.to_delayed().ravel())
    groups = list(group.to_delayed().ravel())
    weights = list(weight.to_delayed().ravel()) if weight is not None else [None] * len(ys)
    workers = _workers(client, None)
    starts = np.concatenate(([0], np.cumsum(row_chunks)))
    futures = []
    for i in range(len(ys)):
        task = dask.delayed(_checked_block, pure=False)(template, i, int(starts[i]), ys[i], groups[i], weights[i],
                                                        *[b[i] for b in blocks])
        futures.append(client.compute(task, workers=[workers[i % len(workers)]], allow_other_workers=True))
    distributed.wait(futures)
    for f in futures:
        if f.status == "error":
            f.result()  # the partition's ValueError / TypeError, raised here on the client
    lower, upper = (y.map_blocks(_row_ids, which, dtype=np.float32) for which in (0, 1))
    name = f"customobj-labels-{uuid.uuid4().hex}"
    client.publish_dataset(futures, name=name)  # held by the scheduler until released(): no worker loses a block
    return LabelPlan(template, LabelBlocks(name, tuple(f.key for f in futures)), lower, upper)


def released(client: Any, plan: "LabelPlan | None") -> None:
    """After training: the label blocks are let go (the published name is removed)."""
    if plan is not None:
        client.unpublish_dataset(plan.blocks.dataset)


def _fetch(blocks: LabelBlocks, which: list) -> list:
    """The blocks of partitions ``which``: from this worker's memory (where they were placed), else through
    its client from the published futures (the scheduler may have put a block elsewhere)."""
    from distributed import get_client, get_worker

    data = get_worker().data
    missing = [i for i in which if blocks.keys[i] not in data]
    found: dict = {}
    if missing:
        client = get_client()
        futures = client.get_dataset(blocks.dataset)
        found = dict(zip(missing, client.gather([futures[i] for i in missing])))
    return [found[i] if i in found else data[blocks.keys[i]] for i in which]


def local_objective(template: MultiObjective, blocks: LabelBlocks, partition: np.ndarray,
                    offset: "np.ndarray | None") -> "tuple[MultiObjective, np.ndarray | None]":
    """On a worker: the user's objective with the label columns of the rows of its local data, in their
    order, and their weights when the blocks carry them (LightGBM), else None.

    ``partition``: each row's partition index; ``offset``: its row inside the partition (XGBoost's
    ``label_upper_bound``), or None when each partition's rows arrive whole and in order (LightGBM
    concatenates its parts), where the offsets are counted along each partition's run."""
    part = np.asarray(partition).astype(np.int64)
    n_cols = sum(t is not None for t in template.labels)
    if part.size == 0:  # a worker without rows: the template's empty columns are its columns
        return template, None
    held = np.unique(part)
    found = _fetch(blocks, [int(i) for i in held])
    sizes = np.array([b.shape[0] for b in found], dtype=np.int64)
    if offset is None:
        offset = _run_offsets(part, held, sizes)
    offset = np.asarray(offset).astype(np.int64)
    if offset.shape != part.shape or offset.min() < 0 or np.any(offset >= sizes[np.searchsorted(held, part)]):
        raise RuntimeError("the rows' identities (partition, offset) do not match the label blocks: this worker's "
                           "MultiObjective label columns cannot be found")
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    stacked = np.concatenate(found, axis=0)[start[np.searchsorted(held, part)] + offset]
    columns = iter(stacked.T)
    local = template.with_labels([None if t is None else next(columns) for t in template.labels])
    return local, (stacked[:, n_cols].copy() if stacked.shape[1] > n_cols else None)


def _run_offsets(part: np.ndarray, held: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each row's offset along its partition's run, the runs checked to be whole partitions."""
    starts = np.flatnonzero(np.concatenate(([True], part[1:] != part[:-1])))
    lengths = np.diff(np.concatenate((starts, [part.size])))
    if starts.size != held.size or np.any(lengths != sizes[np.searchsorted(held, part[starts])]):
        raise RuntimeError("a partition's rows do not arrive as one whole run: this worker's MultiObjective label "
                           "columns cannot be found")
    return np.arange(part.size) - np.repeat(starts, lengths)


class LabelledLightGBMObjective(LightGBMObjective):
    """The LightGBM objective of a ``MultiObjective`` with label columns on ``lightgbm.dask``. LightGBM hands a
    scikit-learn objective ``(y_true, y_pred, weight, group)`` only, so the weights carry each row's partition
    index plus 2 (never 0, and never all 1, which LightGBM drops as no weights; float32, exact); with a custom
    objective LightGBM reads the weights nowhere else (the objective applies them), and the user's weights
    travel as the last column of the label blocks. The parts arrive whole and in order, so the runs give the
    offsets. ``collective_run`` (a method that reads costs or the Gram matrix): the training's key, under which
    the round's sums go over the workers through Dask Variables (``adapters._dask_collective``); the callable
    that comes back with the model carries what the workers learned (``fitted``) and the calls made."""

    def __init__(self, objective: MultiObjective, *, label_blocks: "LabelBlocks | None" = None,
                 collective_run: "str | None" = None, collective_timeout: float = COLLECTIVE_TIMEOUT_S) -> None:
        super().__init__(objective)
        self.label_blocks = label_blocks
        self.collective_run = collective_run
        self.collective_timeout = collective_timeout
        self.collective: "VariableCollective | None" = None
        self.fitted: dict = {}
        self._prep: Any = None
        self._weight: "np.ndarray | None" = None

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__(), label_blocks=self.label_blocks, collective_run=self.collective_run,
                     collective_timeout=self.collective_timeout, fitted=self._fitted())
        c = self.collective
        return dict(state, calls=0 if c is None else c.calls, n_ranks=0 if c is None else (c.n_ranks or 0))

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["objective"], label_blocks=state.get("label_blocks"),
                            collective_run=state.get("collective_run"),
                            collective_timeout=state.get("collective_timeout", COLLECTIVE_TIMEOUT_S))
        self.fitted = state.get("fitted", {})
        self.calls, self.n_ranks = state.get("calls", 0), state.get("n_ranks", 0)

    def _fitted(self) -> dict:
        """What the objective learned on this worker's training rows (every worker the same: summed rounds)."""
        import warnings

        if self._prep is None:
            return dict(self.fitted)
        with warnings.catch_warnings():  # an unmet bound: said on the client (train_lightgbm)
            warnings.simplefilter("ignore", UserWarning)
            found = self.objective.fitted_attributes(self._prep)
        return {k: np.asarray(v) for k, v in found.items()}

    def _sklearn_state(self, y_true: Any, weight: Any, group: Any) -> Any:
        state = super()._sklearn_state(y_true, weight, group)
        state.prep.collective = self.collective  # the rounds' sums over the workers (None: nothing summed)
        self._prep = state.prep  # held: LightGBM's label array (the cache's key) is gone when the model ships
        return state

    def __call__(self, first: Any, second: Any, weight: Any = None, group: Any = None) -> Any:
        if self.label_blocks is not None:
            if weight is None:
                raise RuntimeError("LightGBM passed no weights: the rows' partition indices are lost")
            assert isinstance(self.objective, MultiObjective)
            part = np.asarray(weight) - PARTITION_WEIGHT_BASE
            if self.collective_run is not None and part.size:
                self.collective = VariableCollective(self.collective_run, len(self.label_blocks.keys),
                                                     np.unique(part.astype(np.int64)),
                                                     timeout=self.collective_timeout)
            self.objective, self._weight = local_objective(self.objective, self.label_blocks, part, None)
            self.label_blocks = None  # the training data's columns found: it is the only data set called
        return super().__call__(first, second, self._weight, group)


def converts_labels(objective: MultiObjective) -> bool:
    """Whether a loss inside ``objective`` converts its labels (``Logistic``: ``{-1, +1}`` to ``{0, 1}``): the
    data's label then passes through every ``None``-labelled loss's conversion in turn, which a column does not
    (:func:`data_label_columns` would change the objective). Wrappers (sums, ``Scaled``, ``Unbiased``) pass
    their losses' conversions on, so their losses are looked at."""
    for o in walk_objectives(objective.objectives):
        delegates = any(hasattr(o, name) for name in ("parts", "objectives", "objective"))
        if not delegates and type(o)._convert_labels is not Objective._convert_labels:
            return True
    return False


def data_label_columns(objective: MultiObjective, parts: Any) -> MultiObjective:
    """``objective`` with the data's label as every label column but the first (which stays the data's label):
    the same objective when no loss converts its labels (:func:`converts_labels`), since a ``None`` label is
    the data's label, which LightGBM hands the objective as float32 (so the columns are the label rounded to
    float32). Its rows then carry their partitions (this module), which find the training workers the
    round's sums need."""
    column = parts.y.astype(np.float32).astype(np.float64)
    labels = [None] + [column] * (len(objective.objectives) - 1)
    return _relabelled(objective, labels)


def _relabelled(objective: MultiObjective, labels: list) -> MultiObjective:
    """A copy of ``objective`` reading ``labels`` (``with_labels`` keeps which losses read the data's label;
    here the data's label becomes columns on purpose: :func:`data_label_columns`)."""
    import copy

    from customobj.multi._labels import check_labels

    out = copy.copy(objective)
    out.__dict__.pop("_last_prep", None)  # the public calls' data set belongs to the other columns
    out.labels = check_labels(labels, len(objective.objectives))
    return out
