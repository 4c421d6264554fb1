"""``Unbiased``'s GPU route (``Unbiased.device_route()``): the wrapped loss's pairs and raw terms
on the device, debiased there, eq. 30-31's per-position sums reduced there
(kernels: ``_unbiased_cuda``).

Per round, for each pairwise leaf of the wrapped loss (as ``Unbiased._run`` on the CPU):

- LambdaRank: its own GPU pass (``objectives._lambdarank_route.lambdarank_debiased_terms``) on the
  unweighted data gives its pairs by query and their terms, the propensities passed into its pair
  function, as the CPU's ``LambdaRank.debiased_pair_terms`` does.
- a pair loss (RankNet, RankSVM, MPBoost, QBRank, PreferencePairs): its ``listed_pairs`` (label
  only: uploaded once, with their order by query), ``loss_terms_pairs`` for the debiased terms.

then ``debias_queries`` adds the debiased terms and writes each query's partial sums (and its debiased
loss: ``grad_hess_loss``, ``MultiObjective``'s per-label GPU cost). Pointwise
parts of a sum (and QBRank's labelled rows) run their own GPU route into scratch, added times their
factor. Only the propensities (``n_positions`` each) go up and the ``2 n_positions`` sums come back;
the host updates the propensities with the CPU's ``update_propensities`` (pooled over distributed
workers as on the CPU: ``Unbiased._finish_estimate``).

With pairs (``grad_hess_couplings``: ``TreeBooster(device="cuda", criterion="ole")``, an ``Unbiased`` label of
``MultiObjective``), each leaf's debiased couplings (``Outputs.c``, in its list order) are copied one leaf
after the other into the caller's buffer (``_composite_route.concat_pairs``): one launch a pairwise leaf.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..objectives import _launch as R
from ..objectives._lambdarank_route import lambdarank_debiased_terms
from ..objectives._pairwise_route import check_spec
from ..objectives._pointwise_terms import RowKind
from ..objectives.base import PairSource
from . import _unbiased_kernels as CK
from ._pairs import leaf_parts

__all__ = ["grad_hess", "grad_hess_couplings", "grad_hess_loss"]


def _padded(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a`` as ``dtype``, or a length-1 stand-in the kernels never read when it is empty (no empty uploads)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.size else np.zeros(1, dtype=dtype)


def _terms(cuda: Any, m: int) -> CK.DebiasedTerms:
    return CK.DebiasedTerms(*(cuda.device_array(max(m, 1), np.float64) for _ in range(4)))


def _own_pass(obj: Any, part: Any, s: Any, prep: Any, data: Any, state: Any, props: CK.Propensities,
              swapped: bool) -> tuple:
    """``(QueryPairs, DebiasedTerms, PairWeights, norm, pairs)`` of an ``OWN_PASS`` leaf (LambdaRank): its own pass
    on the unweighted data with the propensities passed into its pair function (the CPU's
    ``LambdaRank.debiased_pair_terms``)."""
    from ..objectives import devices
    from . import _unbiased_cuda as CU

    cuda = data.cuda
    unweighted = state.unweighted
    du = devices.device_data(unweighted, cuda)
    unweighted.state_for(part)

    def buffer(m: int) -> tuple:
        return (cuda.device_array(m, np.int64), cuda.device_array(m, np.int64), cuda.device_array(m, np.float64))

    i, j, h, t = lambdarank_debiased_terms(part, s, unweighted, du, props.pos, props.tplus, props.tminus, swapped,
                                             buffer)
    qp = CU.QueryPairs(i, j, du.ptr, False, R.segments(du, du.n_queries)[1])  # pairs by query: no permutation
    terms = CK.DebiasedTerms(t.lam, h, t.cost, t.est)
    inp = part.pass_inputs(s, prep)  # the row weights its own pass takes (a convention's, or the data's), its norm
    w = data.arrays((obj, part, "unbiased_weights"), lambda: (_padded(inp.weights, np.float64),))[0]
    return qp, terms, CK.PairWeights(w, bool(inp.use_weights), w, False), bool(inp.norm), int(i.shape[0])


def _listed(obj: Any, part: Any, s: Any, prep: Any, data: Any, state: Any, props: CK.Propensities,
            swapped: bool) -> tuple:
    """``(QueryPairs, DebiasedTerms, PairWeights, norm, pairs)`` of a pair loss: its listed pairs, by query once per data set."""
    from . import _unbiased_cuda as CU

    lp = part.listed_pairs(prep)

    def build() -> tuple:
        if lp is None:  # a QBRank without pairs
            return tuple(np.zeros(1, dtype=t) for t in (np.int64, np.int64, np.float64, np.float64, np.int64)) + (
                np.zeros(data.n_queries + 1, dtype=np.int64),)
        qi, qj = state.row_query[lp.pi], state.row_query[lp.pj]
        if np.any(qi != qj):
            raise NotImplementedError(
                f"Unbiased({part!r}) on the GPU: some of its pairs join rows of two queries, so one thread per "
                "query cannot own its rows' gradients; pass host (numpy) scores to run it on the CPU")
        perm = np.argsort(qi, kind="stable")
        qptr = np.searchsorted(qi[perm], np.arange(data.n_queries + 1), side="left")
        return (_padded(lp.pi, np.int64), _padded(lp.pj, np.int64), _padded(lp.theta, np.float64),
                _padded(lp.pair_w, np.float64), _padded(perm, np.int64), qptr.astype(np.int64))

    pi, pj, theta, pair_w, perm, qptr = data.arrays((obj, part, "unbiased_pairs"), build)
    m = 0 if lp is None else int(lp.pi.size)
    terms = _terms(data.cuda, m)
    if m:
        check_spec(lp.spec)
        R.launch(CU.loss_terms_pairs, m, s, pi, pj, theta, int(lp.spec.kind), float(lp.spec.scale), swapped, props,
                 terms)
    use_pw = lp is not None and bool(lp.use_pw)
    weights = CK.PairWeights(data.weights, data.use_weights, pair_w, use_pw)
    return CU.QueryPairs(pi, pj, perm, True, qptr), terms, weights, False, m


def _add_part(key: Any, route: Any, part: Any, scale: float, s: Any, prep: Any, data: Any, g: Any, h: Any,
              per_query: Any = None) -> None:
    """``out += scale * (part's route into scratch)``: an undebiased part, as the CPU adds it; with
    ``per_query``, ``route`` is the part's ``grad_hess_loss`` and its per-query losses are added times ``scale``
    (the CPU adds ``scale`` times the part's total: equal to rounding)."""
    from ..objectives import _pointwise_cuda as CW

    cg = data.scratch(("unbiased_part_grad", key), g.shape, np.float64)
    ch = data.scratch(("unbiased_part_hess", key), h.shape, np.float64)
    R.zero(cg, ch)
    if per_query is None:
        route(part, s, prep, data, cg, ch)
    else:
        pq = data.scratch(("unbiased_part_loss", key), per_query.shape, np.float64)
        route(part, s, prep, data, cg, ch, pq)
        R.launch(CW.add_scaled, per_query.shape[0], per_query, pq, scale)
    for dst, src in ((g, cg), (h, ch)):
        R.launch(CW.add_scaled, dst.size, R.flat(dst), R.flat(src), scale)


def _labelled_rows(part: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
    """QBRank's squared error on its labelled rows (``_pairs.pair_terms_of``: undebiased); with ``per_query``,
    also each query's loss of them (the rows in order, ``_pointwise_cuda.query_sums``)."""
    from ..objectives import _pointwise_cuda as CW

    lab_w = part.squared_error_weight(prep)
    w = data.array((part, "unbiased_labeled_weight"), lambda: lab_w)
    kind = int(RowKind.SQUARED_ERROR)
    R.launch(CW.pointwise_rows, data.n_rows, kind, s, data.labels, w, True, 0.0, g, h)
    if per_query is not None:
        rows = data.scratch("unbiased_labelled_loss_rows", (max(data.n_rows, 1),), np.float64)
        R.launch(CW.pointwise_loss_rows, data.n_rows, kind, s, data.labels, w, True, 0.0, rows)
        R.launch(CW.query_sums, data.n_queries, data.ptr, rows, per_query)


def _round(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any, pair_buffer: Any = None) -> Any:
    """One round of ``obj`` (an ``Unbiased``); each query's loss into ``per_query`` unless it is None; with
    ``pair_buffer``, returns the round's couplings written there (:func:`grad_hess_couplings`), else None."""
    from ..objectives import _pointwise_cuda as CW
    from . import _unbiased_cuda as CU

    state = prep.state_for(obj)
    estimate = obj._start_estimate(prep, state)
    cuda = data.cuda
    k, nq = state.tplus.size, data.n_queries
    pos = data.array((obj, "unbiased_position"), lambda: state.position)
    props = CK.Propensities(pos, cuda.to_device(state.tplus), cuda.to_device(state.tminus))  # 2k floats up
    sums = data.scratch(("unbiased_sums", obj), (2, k), np.float64)
    R.zero(sums)
    if per_query is not None:
        R.zero(per_query)
    pieces = []  # each pairwise leaf's (i, j, c), in leaf order
    for n, (part, scale) in enumerate(leaf_parts(obj.objective)):
        prep.state_for(part)
        if not part.pairwise:
            route = part.device_route()
            _add_part((obj, n), route.grad_hess if per_query is None else route.grad_hess_loss, part, scale, s, prep,
                      data, g, h, per_query)
            continue
        if part.squared_error_weight(prep) is not None:
            _add_part((obj, n), _labelled_rows, part, scale, s, prep, data, g, h, per_query)
        pairs_of = _own_pass if part.pair_source() == PairSource.OWN_PASS else _listed  # leaf_parts: OWN_PASS or LISTED
        qp, terms, weights, norm, m = pairs_of(obj, part, s, prep, data, state, props, obj._swapped)
        size = max(m, 1)
        loss = data.scratch(("unbiased_loss", obj, n), (max(nq, 1),), np.float64)
        out = CU.Outputs(g, h, cuda.device_array(size, np.float64), cuda.device_array((2, size), np.float64),
                         cuda.device_array((2, size), np.int64), loss)
        R.launch(CU.debias_queries, nq, qp, terms, weights, props, float(scale), norm or obj.query_norm, estimate, out)
        if per_query is not None:  # 0 + x and 1 x are x: one pairwise leaf gives the CPU's per-query sums' bits
            R.launch(CW.add_scaled, per_query.shape[0], per_query, loss, 1.0)
        if estimate:
            R.launch(CU.position_sums, 2 * k, out.terms, out.at, m, sums)
        pieces.append((qp.i[:m], qp.j[:m], out.c[:m]))  # debias_queries wrote pair p's coupling at p: list order
    if estimate:
        li, lj = sums.copy_to_host()  # 2k floats down
        obj._finish_estimate(prep, state, li.copy(), lj.copy())
    if pair_buffer is None:
        return None
    from ..objectives._composite_route import concat_pairs

    return concat_pairs(pieces, pair_buffer, "pair_couplings of Unbiased")


def grad_hess(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """One round of ``obj`` (an ``Unbiased``) at device scores ``s`` into the device outputs (``base.DeviceRoute``)."""
    _round(obj, s, prep, data, g, h, None)


def grad_hess_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """:func:`grad_hess`, and each query's debiased loss at the propensities the round's gradients take (before
    the round's estimate: ``Unbiased._grad_hess_loss``) into ``per_query`` (``base.DeviceRoute.grad_hess_loss``).
    Its pairs' losses are summed in the CPU's order (``_unbiased_kernels.debias_pairs``): with one pairwise
    leaf and no QBRank labelled rows, the CPU's per-query sums to the bit; the parts of a wrapped sum are
    added query by query, where the CPU adds their totals (equal to rounding)."""
    _round(obj, s, prep, data, g, h, per_query)


def grad_hess_couplings(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, pair_buffer: Any,
                        per_query: Any = None) -> tuple:
    """:func:`grad_hess` (with ``per_query``: :func:`grad_hess_loss`) and the round's pair couplings in
    ``pair_buffer`` (``base.DeviceRoute.grad_hess_couplings``), as the CPU's ``Unbiased._grad_hess_couplings``:
    each pairwise leaf's pairs in its list order with the debiased hessian ``debias_queries`` writes for each
    (``w_ij h_ij``: its factor, its query's norm and the propensities in), the leaves concatenated in order;
    every pair, as the CPU returns them (a zero coupling changes no sum of the booster). Every leaf's pair
    count is known on the host (a listed loss's list; LambdaRank's, read by its own pass): nothing more is read."""
    out = _round(obj, s, prep, data, g, h, per_query, pair_buffer)
    assert out is not None
    return out
