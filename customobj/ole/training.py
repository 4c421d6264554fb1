"""The boosting loop of :class:`~customobj.ole.TreeBooster`: rounds of gradients, trees, score updates.

Everything here receives validated values (:func:`customobj.ole.params.check_params`, the
``fit`` input checks); the estimator API lives in :mod:`customobj.ole.booster`.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ContextManager, List, NamedTuple, Optional

import numba
import numpy as np

from .._cuda_runtime import is_device_array, on_device, require_gpu
from .._device import Device
from ..objectives._launch import LaunchCount
from .backend import CPUBackend, TreeBackend
from .context import BinnedData, GrowContext
from .criterion import criterion_for
from .evaluation import EarlyStopping, Progress, update_evals
from .fixed_point import check_tree_values
from .grower import GrowParams, GrownTree, TreeGrower, add_leaf_values
from .pair_pruning import query_of_rows
from .predictor import add_tree_bins
from .tree import Tree
from .tree_schema import MAGNITUDE_LIMITS

if TYPE_CHECKING:
    from ..objectives.base import Objective, Prepared

__all__ = ["boost", "sample_round", "round_gradients", "grow_round", "update_scores", "stop_reason", "line_search",
           "grow_params", "feature_infos", "Threads", "RoundSample", "RoundGradients", "make_backend", "check_gpu",
           "check_finite_tree"]


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


def grow_params(p: dict) -> GrowParams:
    """The grower's options from validated hyperparameters: the criterion's name becomes its
    :class:`~customobj.ole.criterion.Criterion` here, once per fit, and ``growth`` and
    ``leaf_solver`` flags (nothing below compares their strings)."""
    criterion = criterion_for(p["criterion"], ole_fast_features=p["ole_fast_features"],
                              ole_fast_epsilon=p["ole_fast_epsilon"])
    return GrowParams(criterion=criterion, num_leaves=p["num_leaves"], min_data_in_leaf=p["min_data_in_leaf"],
                      min_sum_hessian_in_leaf=p["min_sum_hessian_in_leaf"], lambda_l2=p["lambda_l2"],
                      max_depth=p["max_depth"], best_first=p["growth"] == "best_first",
                      joint_leaves=p["leaf_solver"] == "joint", learning_rate=p["learning_rate"])


def make_backend(ctx: GrowContext, params: GrowParams, device: Device) -> TreeBackend:
    """The fit's backend on ``device``: the CPU kernels, or the GPU's (:mod:`.cuda.backend`, imported
    only then; it raises ``GPUUnavailableError`` without a usable GPU)."""
    if not device.is_cuda:
        return CPUBackend(ctx, params)
    from .cuda.backend import CUDABackend
    return CUDABackend(ctx, params)


def check_gpu(device: Device) -> ContextManager:
    """``device="cuda[:N]"``: a usable GPU with that ordinal, or ``GPUUnavailableError`` now; the ``with``
    block that runs the fit on it. Nothing for the CPU."""
    if not device.is_cuda:
        return contextlib.nullcontext()
    return on_device(require_gpu(f'TreeBooster(device="{device}")', device), device)


class RoundSample(NamedTuple):
    """The rows and features one boosting round grows on."""
    rows: np.ndarray  # in-bag rows, increasing (int64)
    in_bag: Optional[np.ndarray]  # bool per row; None without bagging (every row in the bag)
    features: np.ndarray  # bool per feature


class RoundGradients(NamedTuple):
    """The objective's derivatives at the current scores: ``(n,)`` or ``(n, K)``, and the in-bag pairs."""
    grad: np.ndarray
    hess: np.ndarray
    pairs: Optional[tuple]  # (pi, pj, pc) in the context's pair buffer, or None


def boost(model, p, obj, prep, scores, bins_fm, mapper, evals, tracker, callbacks):
    """Grow ``p["n_estimators"]`` rounds of trees into ``model.trees_`` / ``model.tree_class_``.

    Each round: sample rows and features, take the objective's gradients (and pair couplings),
    grow one tree per output, add them to the scores, evaluate, decide whether to stop.
    ``scores`` (the training rows' raw scores) is updated in place; ``evals`` and ``tracker`` record
    the validation history and decide early stopping; the progress bar says why it ended early.
    """
    params = grow_params(p)
    ctx = GrowContext(bins_fm, mapper)
    if params.criterion.fast:  # its per-query pair pruning needs each row's query
        ctx.queries = (query_of_rows(prep.ptr), prep.ptr.shape[0] - 1)
    backend = make_backend(ctx, params, p["device"])  # every tree's kernels, one object per fit
    rng = np.random.default_rng(p["random_state"])
    need_pairs = obj.pairwise and (params.criterion.uses_pairs or params.joint_leaves)
    # device="cuda": scores, gradients (and pairs) on the device when the objective's kernels allow (cuda.scores)
    on_device = backend.device_scores(obj, prep, scores, need_pairs, p["line_search"],
                                      pairs_on_host=pairs_on_host(params.joint_leaves))
    progress = Progress(p["n_estimators"], p["verbose"])
    reason = None
    objective_calls = LaunchCount.snapshot()  # the objective's own launches and reads (device_stats_)
    try:
        for it in range(p["n_estimators"]):
            sample = sample_round(rng, bins_fm.shape[1], bins_fm.shape[0], p)
            gradients = None  # drop the previous round's arrays (pairs included) before new ones exist
            if on_device is None:
                gradients = round_gradients(obj, prep, scores, ctx, sample.in_bag, need_pairs)
            else:
                gradients = RoundGradients(*on_device.gradients(sample.in_bag))
            grown = grow_round(backend, gradients, sample, params, obj.n_outputs)
            model.trees_.extend(g.tree for g in grown)
            model.tree_class_.extend(range(len(grown)))
            if on_device is None:
                update_scores(obj, prep, scores, grown, sample, ctx.data, p)
            else:
                on_device.add_trees([g.tree for g in grown])
            update_evals(evals, [g.tree for g in grown], model.evals_result_)
            progress.update()
            reason = stop_reason(model, it, p["n_estimators"], tracker, callbacks)
            if reason is not None:
                break
    finally:
        progress.close(reason)
        model.device_memory_peak_, model.device_gradients_ = backend.device_memory_peak(), backend.gradients_where
        model.device_stats_ = backend.device_stats()
        if model.device_stats_ is not None:
            launches, reads = LaunchCount.since(objective_calls)
            model.device_stats_ = model.device_stats_._replace(objective_launches=launches, objective_reads=reads)


def pairs_on_host(joint_leaves: bool) -> Optional[str]:
    """Why a fit needs its pairs on the host (so a GPU fit computes them there), or None."""
    if joint_leaves:
        return 'leaf_solver="joint" solves the leaves from every pair on the host'
    return None


def sample_round(rng: np.random.Generator, n: int, n_features: int, p: dict) -> RoundSample:
    """Bagging (rows without replacement) then feature sampling, in that order of draws from ``rng``."""
    rows, in_bag = np.arange(n, dtype=np.int64), None
    if p["bagging_fraction"] < 1.0:
        m = max(1, int(round(p["bagging_fraction"] * n)))
        rows = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
        in_bag = np.zeros(n, dtype=bool)
        in_bag[rows] = True
    mask = np.ones(n_features, dtype=np.bool_)
    if p["feature_fraction"] < 1.0:
        m = max(1, int(round(p["feature_fraction"] * n_features)))
        mask[:] = False
        mask[rng.choice(n_features, size=m, replace=False)] = True
    return RoundSample(rows, in_bag, mask)


def round_gradients(obj: "Objective", prep: "Prepared", scores: np.ndarray, ctx: GrowContext,
                    in_bag: Optional[np.ndarray], need_pairs: bool) -> RoundGradients:
    """Gradients and hessians at ``scores``; with ``need_pairs`` also the in-bag pairs of positive coupling."""
    out_grad, out_hess = ctx.gradient_outputs(scores.shape)  # reused every round (no fresh pages)
    if not need_pairs:
        grad, hess = obj.grad_hess_prepared(scores, prep, out_grad, out_hess)
        check_tree_values(grad, hess)
        return RoundGradients(grad, hess, None)
    if not obj.writes_pair_buffer:
        # large pair buffers go first: the objective's own (int64, int64, float64)
        # couplings plus the compacted int32 pairs would be the peak
        ctx.pairs.release()
    # one per-query pass for gradients, hessians and couplings where the objective fuses them
    grad, hess, couplings = obj.grad_hess_couplings_prepared(scores, prep, out_grad, out_hess,
                                                             pair_buffer=ctx.pairs.pair_buffer)
    if couplings is None:  # pairs are asked of pairwise objectives only
        raise TypeError(f"{type(obj).__name__} returned no pair couplings")
    check_tree_values(grad, hess)
    return RoundGradients(grad, hess, ctx.pairs.load(couplings, in_bag))


def grow_round(backend: TreeBackend, gradients: RoundGradients, sample: RoundSample, params: GrowParams,
               n_outputs: int) -> List[GrownTree]:
    """One tree per output column (McRank: per grade), in column order."""
    grad, hess, pairs = gradients
    out = []
    for k in range(n_outputs):
        g = grad if n_outputs == 1 else _column(grad, k)
        h = hess if n_outputs == 1 else _column(hess, k)
        # the grower reorders the pair arrays in place; later classes need the original set
        pk = pairs if (pairs is None or n_outputs == 1) else tuple(a.copy() for a in pairs)
        out.append(TreeGrower(backend, g, h, sample.rows, pk, sample.features, params).grow())
        check_finite_tree(out[-1].tree)
    return out


def check_finite_tree(tree: Tree) -> None:
    """A tree's values within what a model file holds (``tree_schema.MAGNITUDE_LIMITS``: leaf values
    up to ``SCORE_LIMIT``, finite gains), or ``ValueError`` naming the gradients and hessians: values
    inside :data:`~customobj.ole.fixed_point.VALUE_LIMIT` can still make ``-G / (D + lambda_l2)``
    overflow when ``D`` is tiny (hessians of 5e-324 with ``lambda_l2=0``). Checked on the host, where
    both backends finish their trees, so the CPU and the GPU refuse alike."""
    for field, limit in MAGNITUDE_LIMITS.items():
        values = np.asarray(tree[field], dtype=np.float64)
        bad = np.flatnonzero(~(np.abs(values) <= limit))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"the objective's gradients and hessians made a tree's {field}[{k}] = "
                             f"{float(values[k])!r}, beyond {limit:g} (what a model holds): the Newton step "
                             f"-G / (H + lambda_l2) grows this large where the hessians are tiny against the gradients; "
                             f"raise lambda_l2 or min_sum_hessian_in_leaf, or rescale the objective")


def _column(a, k: int):
    """Column ``k`` of ``(n, K)`` gradients: contiguous on the host, a strided view on the device."""
    return a[:, k] if is_device_array(a) else np.ascontiguousarray(a[:, k])


def update_scores(obj: "Objective", prep: "Prepared", scores: np.ndarray, grown: List[GrownTree],
                  sample: RoundSample, data: BinnedData, p: dict) -> None:
    """Add the round's trees to the training scores (each line-searched first when asked)."""
    bins = data.feature_major.T  # (rows, features) view for tree traversal on bins
    for k, g in enumerate(grown):
        if p["line_search"]:
            line_search(obj, prep, scores, k, g.tree, bins, data.n_bins, p["learning_rate"])
        out = scores if scores.ndim == 1 else scores[:, k]
        if sample.in_bag is None:  # every row sits in a leaf's range: no traversal needed
            add_leaf_values(g.order, g.starts, g.ends, np.ascontiguousarray(g.tree.leaves["leaf_value"]), out)
        else:
            add_tree_bins(bins, data.n_bins, g.tree, out)


def stop_reason(model, it: int, n_estimators: int, tracker: EarlyStopping, callbacks: list) -> Optional[str]:
    """Why boosting stops after round ``it`` (0-based): early stopping or a callback; None to go on.

    Every callback runs, even after early stopping has decided.
    """
    done = it + 1
    tracker.update(done, model.evals_result_)
    reason = None
    if tracker.should_stop:
        reason = (f"stopped early at iteration {done}/{n_estimators} (no improvement in "
                  f"{tracker.rounds} rounds; {tracker.describe()})")
    for cb in callbacks:
        if cb(model, it, model.evals_result_) and reason is None:
            reason = f"stopped by a callback at iteration {done}/{n_estimators}"
    return reason


def line_search(obj: "Objective", prep: "Prepared", scores: np.ndarray, k: int, tree: Tree, bins: np.ndarray,
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
            couplings = obj.pair_couplings_prepared(s, prep)
            if couplings is None:  # a pairwise objective always has its couplings
                raise TypeError(f"{type(obj).__name__} returned no pair couplings")
            pi, pj, pc = couplings
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
    tree.leaves["leaf_value"] *= rho
    tree.nodes["internal_value"] *= rho
