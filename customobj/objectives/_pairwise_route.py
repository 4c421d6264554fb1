"""The pairwise losses' GPU route (RankNet, RankSVM, MPBoost, QBRank, PreferencePairs: their
``device_route()``): label pairs and pair lists on the device (kernels: ``_pairwise_cuda``), and the
listed pairs' couplings. See ``_launch`` for what a route is.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _launch as L
from . import _pairwise_kernels as PK
from ._launch import PairBuffer, chunks, launch, segments, sized, zero
from ._pair_sets import row_incidence
from ._pointwise_terms import RowKind


def _label_order(prep: Any, state: Any) -> tuple:
    """Per row its position in the label order, and per position the first position of its label block."""
    lpos = np.empty(prep.n_rows, dtype=np.int64)
    lpos[state.order] = np.arange(prep.n_rows, dtype=np.int64)
    y = prep.labels[state.order]
    t = np.arange(prep.n_rows, dtype=np.int64)
    new = np.ones(prep.n_rows, dtype=bool)
    new[1:] = y[1:] != y[:-1]
    new[prep.ptr[:-1][np.diff(prep.ptr) > 0]] = True  # every query starts a block
    return lpos, np.maximum.accumulate(np.where(new, t, 0)) if t.size else t


def check_spec(spec: PK.PairSpec) -> None:
    # The shared pair math gives NaN for an unknown code: refuse it here, before any launch.
    if spec.kind not in set(PK.PairKind) or spec.theta_mode not in set(PK.Theta):
        raise ValueError(f"no GPU pair kernel for kind={spec.kind}, theta_mode={spec.theta_mode}")


def _label_rows(lp: Any, obj: Any, prep: Any, data: Any) -> Any:
    """The device ``_pairwise_cuda.LabelRows`` of the label pairs ``lp`` (uploaded once per data set)."""
    from . import _pairwise_cuda as CP

    order, lower = data.arrays((obj, "label_pairs"), lambda: (lp.order, lp.lower))
    lpos, block = data.arrays((obj, "label_order"), lambda: _label_order(prep, lp))
    return CP.LabelRows(data.labels, data.ptr, data.qid, order, lower, lpos, block, data.weights, data.use_weights)


def _label_pairs(lp: Any, obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, spec: PK.PairSpec) -> None:
    from . import _pairwise_cuda as CP

    check_spec(spec)
    launch(CP.label_pairs_rows, data.n_rows, s, _label_rows(lp, obj, prep, data), spec, g, h)


def _device_list(obj: Any, name: str, data: Any, pi: np.ndarray, pj: np.ndarray, theta: np.ndarray,
                 pair_w: Optional[np.ndarray]) -> Any:
    """The pair list as the device ``_pairwise_cuda.PairList`` record (uploaded once per data set)."""
    from . import _pairwise_cuda as CP

    dpi, dpj, dth = data.arrays((obj, name, "pairs"), lambda: (pi, pj, theta))
    pw, use_pw = data.array((obj, name, "pair_w"), lambda: pair_w if pair_w is not None else np.ones(1)), \
        pair_w is not None
    return CP.PairList(dpi, dpj, dth, pw, use_pw, data.weights, data.use_weights)


def _pair_list(obj: Any, name: str, s: Any, data: Any, g: Any, h: Any, pairs: tuple,
               pair_w: Optional[np.ndarray], spec: PK.PairSpec, by_row: Any = None) -> None:
    """The listed pairs' gradients; with ``by_row``, each row's losses of the pairs it is first in."""
    from . import _pairwise_cuda as CP

    check_spec(spec)
    plist = _device_list(obj, name, data, pairs[0], pairs[1], pairs[2], pair_w)
    incidence = data.arrays((obj, name, "incidence"), lambda: row_incidence(pairs[0], pairs[1], data.n_rows))
    launch(CP.pair_list_rows, data.n_rows, s, plist, *incidence, spec, g, h)
    if by_row is not None:
        launch(CP.pair_list_loss_rows, data.n_rows, s, plist, *incidence, spec, by_row)


def _add_query_sums(data: Any, rows: Any, per_query: Any) -> None:
    """``per_query[q] +=`` the values of ``rows`` over query ``q``'s rows, in row order."""
    from . import _pointwise_cuda as CW

    part = data.scratch("pair_loss_part", per_query.shape, np.float64)
    launch(CW.query_sums, data.n_queries, data.ptr, rows, part)
    launch(CW.add_scaled, per_query.shape[0], per_query, part, 1.0)


def label_pair_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """RankNet, RankSVM, MPBoost and any loss on the label pairs of each query with a ``pair_spec``."""
    _label_pairs(prep.state_for(obj), obj, s, prep, data, g, h, obj.pair_spec())


def label_pair_loss_with_cost(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """:func:`label_pair_loss`, then each query's loss into ``per_query`` (the CPU's ``_loss`` query by query,
    to rounding: each upper row's pairs are summed first, where the CPU keeps one running sum a query)."""
    from . import _pairwise_cuda as CP
    from . import _pointwise_cuda as CW

    label_pair_loss(obj, s, prep, data, g, h)
    by_position = data.scratch("pair_loss_rows", (max(data.n_rows, 1),), np.float64)
    launch(CP.label_pairs_loss_rows, data.n_rows, s, _label_rows(prep.state_for(obj), obj, prep, data),
           obj.pair_spec(), by_position)
    launch(CW.query_sums, data.n_queries, data.ptr, by_position, per_query)


def qbrank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
    """QBRank: its label pairs, its explicit pairs, and the squared error of its labelled rows. Given
    ``per_query`` (its ``grad_hess_loss``), each query's loss too: its label pairs' (as RankNet's), its
    explicit pairs' (each at its first row's query) and its labelled rows' squared error, added in that order
    query by query (the CPU adds the three totals, each over all queries: equal to rounding)."""
    from . import _pairwise_cuda as CP
    from . import _pointwise_cuda as CW

    state = prep.state_for(obj)
    spec = obj.pair_spec()
    rows = None if per_query is None else data.scratch("pair_loss_rows", (max(data.n_rows, 1),), np.float64)
    if per_query is not None:
        zero(per_query)
    if state.label_pairs is not None and spec.scale > 0.0:
        _label_pairs(state.label_pairs, obj, s, prep, data, g, h, spec)
        if per_query is not None:
            launch(CP.label_pairs_loss_rows, data.n_rows, s, _label_rows(state.label_pairs, obj, prep, data), spec,
                   rows)
            _add_query_sums(data, rows, per_query)
    if state.explicit is not None and spec.scale > 0.0:
        _pair_list(obj, "explicit", s, data, g, h, tuple(state.explicit), None, spec, rows)
        if per_query is not None:
            _add_query_sums(data, rows, per_query)
    if state.labeled_weight is not None:
        kind = int(RowKind.SQUARED_ERROR)
        lab_w = data.array((obj, "labeled_weight"), lambda: state.labeled_weight)
        launch(CW.pointwise_rows, data.n_rows, kind, s, data.labels, lab_w, True, 0.0, g, h)
        if per_query is not None:
            launch(CW.pointwise_loss_rows, data.n_rows, kind, s, data.labels, lab_w, True, 0.0, rows)
            _add_query_sums(data, rows, per_query)


def preference_pairs(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
    """PreferencePairs: its explicit pairs with their own weights; given ``per_query`` (its ``grad_hess_loss``),
    each query's loss, each pair counted at its first row's query (the CPU keeps one running sum over the
    list: equal to rounding)."""
    by_row = None if per_query is None else data.scratch("pair_loss_rows", (max(data.n_rows, 1),), np.float64)
    _pair_list(obj, "explicit", s, data, g, h, tuple(prep.state_for(obj)), obj.weight, obj.pair_spec(), by_row)
    if per_query is not None:
        zero(per_query)
        _add_query_sums(data, by_row, per_query)


def listed_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """The pairs of ``obj.listed_pairs(prep)`` with coupling > 0, in list order (the CPU booster keeps
    those of the objective's list): ``_pairwise_cuda.count_kept_pairs`` / ``fill_kept_pairs``, a
    chunk of the list a one-warp block."""
    lp = obj.listed_pairs(prep)
    if lp is None:  # no coupled pairs (QBRank's diagonal bound, or no pairs at all)
        return pair_buffer(0)
    check_spec(lp.spec)
    plist = _device_list(obj, "listed", data, lp.pi, lp.pj, lp.theta, lp.pair_w if lp.use_pw else None)
    return kept_pairs(s, data, pair_buffer, plist, lp.spec)


def kept_pairs(s: Any, data: Any, pair_buffer: PairBuffer, plist: Any, spec: PK.PairSpec) -> tuple:
    """The pairs of the device list ``plist`` (a ``_pairwise_cuda.PairList``) with coupling > 0 under
    ``spec``, in list order, written to ``pair_buffer(m)``."""
    from . import _pairwise_cuda as CP

    n_seg = chunks(plist.pi.shape[0], L.LIST_CHUNK)
    args = (s, plist, spec, L.LIST_CHUNK)  # read at the call: a test changes it
    offsets, out = sized(segments(data, n_seg), pair_buffer, CP.count_kept_pairs, n_seg, *args)
    if out[0].shape[0] > 0:
        launch(CP.fill_kept_pairs, n_seg, *args, offsets, *out)
    return out
