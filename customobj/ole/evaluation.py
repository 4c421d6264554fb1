"""Evaluation during and after boosting: eval sets, metrics, early stopping, the progress bar, ``score``.

Kept apart from the tree growing in :mod:`customobj.ole.booster`: this is all Python bookkeeping
around :func:`customobj.metrics.get_metric` metrics, computed per query on ranking scores.
"""
from __future__ import annotations

from typing import Callable, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from .._validation import as_1d_float
from ..groups import Groups
from ..metrics import Metric, get_metric
from ..objectives.pointwise import McRank
from .inputs import as_matrix, resolve_groups
from .predictor import PackedTrees, predict_raw

__all__ = ["EvalSet", "EarlyStopping", "Progress", "resolve_metrics", "prepare_evals", "update_evals",
           "ranking_score", "score_queries", "SCORE_METRIC"]

#: What ``TreeBooster.score`` reports unless told otherwise (LightGBM's usual ranking metric).
SCORE_METRIC = "ndcg@10"

MetricLike = Union[str, Callable]


class EvalSet(NamedTuple):
    """One validation set: its name in ``evals_result_``, data, queries, metrics and running raw scores."""
    name: str
    X: np.ndarray
    y: np.ndarray
    groups: Groups
    metrics: List[Metric]
    raw: np.ndarray


def resolve_metrics(eval_metric: Union[MetricLike, Sequence[MetricLike]]) -> List[Metric]:
    """Metric names of :func:`customobj.metrics.get_metric` or callables ``f(scores, labels, group)``."""
    items = eval_metric if isinstance(eval_metric, (list, tuple)) else [eval_metric]
    out = []
    for m in items:
        if isinstance(m, str):
            out.append(get_metric(m))
        elif callable(m):
            out.append(Metric(getattr(m, "__name__", "custom"), m, True))
        else:
            raise TypeError(f"eval_metric entries must be metric names or callables, got {type(m).__name__}")
    return out


def _per_set(value, n_sets, name):
    if value is None:
        return [None] * n_sets
    if not isinstance(value, (list, tuple)) or len(value) != n_sets:
        raise ValueError(f"{name} must be a list with one entry per eval_set entry ({n_sets})")
    return list(value)


def prepare_evals(eval_set, eval_group, eval_qid, eval_metric, n_features: int, n_outputs: int) -> List[EvalSet]:
    """Check the eval sets once, before the first tree (a bad eval set must not cost a training run)."""
    if eval_set is None:
        return []
    if isinstance(eval_set, tuple) and len(eval_set) == 2:
        eval_set = [eval_set]
    if not isinstance(eval_set, (list, tuple)):
        raise TypeError(f"eval_set must be a list of (X, y) pairs, got {type(eval_set).__name__}")
    groups = _per_set(eval_group, len(eval_set), "eval_group")
    qids = _per_set(eval_qid, len(eval_set), "eval_qid")
    metrics = resolve_metrics(eval_metric)
    out = []
    for k, (item, ge, qe) in enumerate(zip(eval_set, groups, qids)):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TypeError(f"eval_set[{k}] must be an (X, y) pair")
        Xe = as_matrix(item[0], f"eval_set[{k}] X")
        if Xe.shape[1] != n_features:
            raise ValueError(f"eval_set[{k}] X has {Xe.shape[1]} features but X has {n_features}")
        ye = as_1d_float(item[1], f"eval_set[{k}] y")
        if ye.shape[0] != Xe.shape[0]:
            raise ValueError(f"eval_set[{k}] X has {Xe.shape[0]} rows but y has {ye.shape[0]}")
        g = resolve_groups(ge, qe, Xe.shape[0], name=f"eval_group[{k}]", qid_name=f"eval_qid[{k}]")
        g = g if g is not None else Groups.from_sizes([Xe.shape[0]])
        out.append(EvalSet(f"valid_{k}", Xe, ye, g, metrics, np.zeros((Xe.shape[0], n_outputs))))
    return out


def ranking_score(raw: np.ndarray) -> np.ndarray:
    """Ranking score from raw outputs: the score itself, or McRank's expected grade ``sum_k k p_k``."""
    if raw.ndim == 1 or raw.shape[1] == 1:
        return raw.reshape(-1)
    return McRank.expected_grade(raw)


def update_evals(evals: List[EvalSet], new_trees: list, evals_result: dict) -> None:
    """Add one round's trees (one per output column, in column order) to every eval set's raw
    scores; record each metric."""
    if not evals:
        return
    packed = PackedTrees(new_trees)
    cols = np.arange(len(new_trees), dtype=np.int64)
    for ev in evals:
        ev.raw[...] += predict_raw(ev.X, packed, cols, ev.raw.shape[1], 0, len(new_trees))
        s = ranking_score(ev.raw)
        for m in ev.metrics:
            evals_result[ev.name][m.name].append(float(m.func(s, ev.y, ev.groups)))


class EarlyStopping:
    """Tracks the first metric of the first eval set; ``should_stop`` says when to stop.

    ``rounds=None`` only tracks (``best_iteration`` is then reported but not used by ``predict``).
    """

    def __init__(self, evals: List[EvalSet], rounds: Optional[int]):
        self.rounds = rounds
        first = evals[0] if evals else None
        self.set_name = first.name if first else None
        self.metric = first.metrics[0] if first else None
        self.best_value: Optional[float] = None
        self.best_iteration: Optional[int] = None  # 1-based
        self.since_best = 0

    def update(self, iteration: int, evals_result: dict) -> None:
        """Record the metric of round ``iteration`` (1-based): a new best, or one more round without."""
        if self.metric is None:
            return
        value = evals_result[self.set_name][self.metric.name][-1]
        if self.best_value is None or (value > self.best_value if self.metric.higher_is_better
                                       else value < self.best_value):
            self.best_value, self.best_iteration, self.since_best = value, iteration, 0
        else:
            self.since_best += 1

    @property
    def should_stop(self) -> bool:
        """True when ``rounds`` rounds have passed without improvement."""
        return self.metric is not None and self.rounds is not None and self.since_best >= self.rounds

    def describe(self) -> str:
        """``best iteration M, valid_0 ndcg@10 = 0.7123`` (empty without an eval set)."""
        if self.best_iteration is None or self.metric is None:
            return ""
        return f"best iteration {self.best_iteration}, {self.set_name} {self.metric.name} = {self.best_value:.6g}"


class Progress:
    """A tqdm bar over the boosting rounds that says why it ends early instead of freezing at 70/300."""

    def __init__(self, total: int, enabled: bool, desc: str = "TreeBooster"):
        from tqdm.auto import tqdm
        self.desc = desc
        self.bar = tqdm(total=total, disable=not enabled, desc=desc)

    def update(self) -> None:
        self.bar.update(1)

    def close(self, reason: Optional[str] = None) -> None:
        """Close the bar; ``reason`` (e.g. ``"stopped early at iteration 70/300 (...)"``) replaces its label."""
        if reason is not None and not self.bar.disable:
            self.bar.set_description_str(f"{self.desc} {reason}", refresh=False)
        self.bar.close()


def score_queries(scores: np.ndarray, y: np.ndarray, groups: Groups, metric: MetricLike,
                  weight: Optional[np.ndarray] = None) -> float:
    """Mean of ``metric`` over queries (a name of :func:`~customobj.metrics.get_metric` or a callable).

    ``weight`` (one per row, checked by the caller): a weighted mean, each query weighing the mean
    of its rows' weights (LightGBM's query weights); queries the metric leaves out (NaN) or of weight
    0 take no part."""
    if not isinstance(metric, str) and not callable(metric):
        raise TypeError(f"metric must be a metric name (e.g. 'ndcg@10') or a callable, got {type(metric).__name__}")
    (m,) = resolve_metrics(metric)
    if not m.higher_is_better:
        raise ValueError(f"metric {m.name!r} is lower-is-better; score must be higher-is-better (scikit-learn's "
                         "model selection maximises it): use it in eval_metric instead")
    if weight is None:
        return float(m.func(scores, y, groups))
    ptr = groups.ptr
    values, weights = [], []
    for a, b in zip(ptr[:-1], ptr[1:]):
        if b > a:
            values.append(float(m.func(scores[a:b], y[a:b], Groups.from_sizes([b - a]))))
            weights.append(float(weight[a:b].mean()))
    v, w = np.array(values, dtype=np.float64), np.array(weights, dtype=np.float64)
    used = np.isfinite(v) & (w > 0)
    if not used.any():
        return float("nan")
    return float(np.dot(v[used], w[used]) / w[used].sum())
