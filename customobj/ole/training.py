"""The boosting loop of :class:`~customobj.ole.TreeBooster`: rounds of gradients, trees, score updates.

Everything here receives validated values (:func:`customobj.ole.params.check_params`, the
``fit`` input checks); the estimator API lives in :mod:`customobj.ole.booster`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

from .evaluation import Progress, update_evals
from .grower import GrowParams, _Ctx, add_leaf_values, grow_tree
from .pair_pruning import query_of_rows
from .predictor import add_tree_bins
from .splitting import CRITERIA, PAIR_CRITERIA

if TYPE_CHECKING:
    from ..objectives.base import Objective, Prepared

__all__ = ["boost", "line_search", "grow_params", "feature_infos", "Threads"]


def feature_infos(value_range):
    """LightGBM's ``feature_infos`` entries: ``[min:max]`` of the training values, ``none`` if all NaN."""
    return ["none" if np.isnan(lo) else f"[{lo!r}:{hi!r}]" for lo, hi in value_range]


class Threads:
    """Run numba kernels with ``n_jobs`` threads, restoring the caller's setting afterwards."""

    def __init__(self, n_jobs):
        self.n_jobs = n_jobs

    def __enter__(self):
        self.saved = numba.get_num_threads()
        if self.n_jobs is not None:
            numba.set_num_threads(max(1, min(int(self.n_jobs), numba.config.NUMBA_NUM_THREADS)))

    def __exit__(self, *exc):
        numba.set_num_threads(self.saved)


def grow_params(p):
    """The grower's options from validated hyperparameters."""
    return GrowParams(criterion=CRITERIA[p["criterion"]], num_leaves=p["num_leaves"],
                      min_data_in_leaf=p["min_data_in_leaf"],
                      min_sum_hessian_in_leaf=p["min_sum_hessian_in_leaf"], lambda_l2=p["lambda_l2"],
                      max_depth=p["max_depth"], growth=p["growth"], leaf_solver=p["leaf_solver"],
                      learning_rate=p["learning_rate"], ole_fast_features=p["ole_fast_features"],
                      ole_fast_epsilon=p["ole_fast_epsilon"])


def boost(model, p, obj, prep, scores, bins_fm, mapper, evals, tracker, callbacks):
    """Grow ``p["n_estimators"]`` rounds of trees into ``model.trees_`` / ``model.tree_class_``.

    ``scores`` (the training rows' raw scores) is updated in place; ``evals`` and ``tracker`` record
    the validation history and decide early stopping; the progress bar says why it ended early.
    """
    n, F = bins_fm.shape[1], bins_fm.shape[0]
    K = obj.n_outputs
    bins = bins_fm.T  # (rows, features) view for tree traversal on bins
    ctx = _Ctx(bins_fm, mapper)
    ctx.queries = (query_of_rows(prep.ptr), prep.ptr.shape[0] - 1)  # ole_fast's per-query pair pruning
    params = grow_params(p)
    rng = np.random.default_rng(p["random_state"])
    need_pairs = obj.pairwise and (p["criterion"] in PAIR_CRITERIA or p["leaf_solver"] == "joint")
    all_rows = np.arange(n, dtype=np.int64)
    progress = Progress(p["n_estimators"], p["verbose"])
    done, reason = 0, None
    try:
        for it in range(p["n_estimators"]):
            rows, in_bag = all_rows, None
            if p["bagging_fraction"] < 1.0:
                m = max(1, int(round(p["bagging_fraction"] * n)))
                rows = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
                in_bag = np.zeros(n, dtype=bool)
                in_bag[rows] = True
            mask = np.ones(F, dtype=np.bool_)
            if p["feature_fraction"] < 1.0:
                m = max(1, int(round(p["feature_fraction"] * F)))
                mask[:] = False
                mask[rng.choice(F, size=m, replace=False)] = True
            pairs = None  # drop the previous round's pair arrays before new ones exist
            if need_pairs:
                if not obj.writes_pair_buffer:
                    # large pair buffers go first: the objective's own (int64, int64, float64)
                    # couplings plus the compacted int32 pairs would be the peak
                    ctx.release_pair_buffers()
                # one per-query pass for gradients, hessians and couplings where the objective fuses them
                grad, hess, couplings = obj.grad_hess_couplings_prepared(scores, prep, pair_buffer=ctx.pair_buffer)
                pairs = ctx.load_pairs(couplings, in_bag)
                del couplings
            else:
                grad, hess = obj.grad_hess_prepared(scores, prep)
            new_trees = []
            for k in range(K):
                g = grad if K == 1 else np.ascontiguousarray(grad[:, k])
                h = hess if K == 1 else np.ascontiguousarray(hess[:, k])
                # grow_tree reorders the pair arrays in place; later classes need the original set
                pk = pairs if (pairs is None or K == 1) else tuple(a.copy() for a in pairs)
                tree, order, ranges = grow_tree(ctx, g, h, rows, pk, mask, params)
                model.trees_.append(tree)
                model.tree_class_.append(k)
                new_trees.append((k, tree, order, ranges))
            for k, tree, order, ranges in new_trees:
                if p["line_search"]:
                    line_search(obj, prep, scores, k, tree, bins, mapper.n_bins, p["learning_rate"])
                out = scores if K == 1 else scores[:, k]
                if in_bag is None:  # every row sits in a leaf's range: no traversal needed
                    starts = np.array([r[0] for r in ranges], dtype=np.int64)
                    ends = np.array([r[1] for r in ranges], dtype=np.int64)
                    add_leaf_values(order, starts, ends, np.asarray(tree["leaf_value"], np.float64), out)
                else:
                    add_tree_bins(bins, mapper.n_bins, tree, out)
            update_evals(evals, [(k, tree) for k, tree, _, _ in new_trees], model.evals_result_)
            done = it + 1
            progress.update()
            if tracker.update(done, model.evals_result_):
                reason = (f"stopped early at iteration {done}/{p['n_estimators']} (no improvement in "
                          f"{tracker.rounds} rounds; {tracker.describe()})")
            for cb in callbacks:
                if cb(model, it, model.evals_result_) and reason is None:
                    reason = f"stopped by a callback at iteration {done}/{p['n_estimators']}"
            if reason is not None:
                break
    finally:
        progress.close(reason)


def line_search(obj: "Objective", prep: "Prepared", scores: np.ndarray, k: int, tree: dict, bins: np.ndarray,
                n_bins: np.ndarray, lr: float, max_newton: int = 5, max_halvings: int = 20) -> None:
    """Rescale ``tree`` by the ``rho`` minimising ``L(s + rho t)`` (t = the unshrunk tree); in place.

    Newton steps from ``rho = 0`` (no tree) with the exact ``t' H t`` (pair couplings included),
    each halved until the loss does not rise; stops when the curvature is not positive.
    ``customobj.adapters.callbacks.LineSearch.search`` solves the same 1-D problem differently on
    purpose and is not shared: it starts from ``rho = 1`` (LightGBM has already added the tree),
    keeps ``rho >= 0``, accepts by Armijo's condition, steps by the gradient's sign when the
    curvature is not positive and reports the loss at ``rho = 1``; the tests pin both behaviours.
    """
    t = np.zeros(bins.shape[0])
    add_tree_bins(bins, n_bins, tree, t)
    t /= lr
    if not np.any(t):
        return

    def shifted(rho):
        out = scores.copy()
        if out.ndim == 1:
            out += rho * t
        else:
            out[:, k] += rho * t
        return out

    rho, cur = 0.0, obj.loss_prepared(scores, prep)
    for _ in range(max_newton):
        s = shifted(rho)
        g, h = obj.grad_hess_prepared(s, prep)
        if g.ndim > 1:
            g, h = g[:, k], h[:, k]
        d1 = float(g @ t)
        d2 = float(h @ (t * t))
        if obj.pairwise:
            pi, pj, pc = obj.pair_couplings_prepared(s, prep)
            d2 -= 2.0 * float(np.sum(pc * t[pi] * t[pj]))
        if not d2 > 0:
            break
        step = -d1 / d2
        for _ in range(max_halvings):
            new = obj.loss_prepared(shifted(rho + step), prep)
            if new <= cur:
                break
            step /= 2
        else:
            break
        rho, cur = rho + step, new
        if abs(step) <= 1e-8 * max(1.0, abs(rho)):
            break
    tree["leaf_value"] = [v * rho for v in tree["leaf_value"]]
    tree["internal_value"] = [v * rho for v in tree["internal_value"]]
