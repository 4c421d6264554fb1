"""The GPU drivers of each family of objectives: what ``Objective.device_route()`` returns.

A route is a pair of plain functions (``base.DeviceRoute``): ``grad_hess(obj, scores, prep, data,
out_grad, out_hess)`` adds the objective's gradients at float64 device ``scores`` into the device
outputs, and ``couplings(obj, scores, prep, data, pair_buffer)`` writes its pair couplings
``(i, j, c)`` after the gradient launches (``_cuda_couplings``). ``data`` is the prepared data's
``devices.DeviceData`` (device copies uploaded once per data set). A route reads the objective only
through its public methods (``pair_spec``, ``listed_pairs``, ``pass_inputs``, ``parts``) and its
label-only state (``prep.state_for``), so every loss of a family shares it, and a subclass of a
loss inherits its parent's route with ``device_route``. Nothing here imports an objective class.

Kernel modules (``_cuda_*``, which need numba.cuda) are imported inside the routes: the CPU path
never loads them.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .._cuda_runtime import THREADS, blocks
from . import _pairwise_kernels as PK
from ._pair_sets import row_incidence
from ._row_terms import RowKind

#: ``m -> (i, j, c)``: device arrays of length ``m`` the pairs are written to.
PairBuffer = Callable[[int], tuple]
#: Listed pairs per thread of the list kernels (their result does not depend on it: stable, in order).
LIST_CHUNK = 1024


def launch(kernel: Any, n: int, *args: Any) -> None:
    """``kernel`` over ``n`` work items (threads), :data:`THREADS` per block; a kernel that works a
    block per query (``_cuda_lambdarank.BLOCK_PER_QUERY``) gets ``n`` blocks of :func:`query_threads`."""
    from . import _cuda_lambdarank as CL

    if any(kernel is k for k in CL.BLOCK_PER_QUERY):
        kernel[max(n, 1), query_threads()](*args)
    else:
        kernel[blocks(n), THREADS](*args)


def query_threads() -> int:
    """Threads of a block-per-query kernel: ``_cuda_lambdarank.QUERY_THREADS``, 8 under the simulator
    (each a Python thread)."""
    from .._cuda_runtime import simulated
    from . import _cuda_lambdarank as CL

    return 8 if simulated() else CL.QUERY_THREADS


def flat(a: Any) -> Any:
    return a.reshape(a.size) if a.ndim != 1 else a


def zero(*arrays: Any) -> None:
    from . import _cuda_pointwise as CW

    for a in arrays:
        launch(CW.fill, a.size, flat(a), 0.0)


# --- LambdaRank ------------------------------------------------------------------------------------
def _lambdarank_inputs(obj: Any, s: Any, prep: Any, data: Any) -> tuple:
    """``(device Inputs record, hess_scale)`` from the objective's own ``pass_inputs``."""
    from . import _cuda_lambdarank as CL

    inp = obj.pass_inputs(s, prep)
    row_gain, qnorm, disc = data.arrays((obj, "lambdarank"), lambda: (inp.row_gain, inp.qnorm, inp.disc))
    if prep.state_for(obj).weight is None:  # the row weights, already on the device
        w, use_w = data.weights, data.use_weights
    else:  # a convention's per-query weights
        w, use_w = data.array((obj, "weight"), lambda: inp.weights), True
    return CL.Inputs(data.ptr, data.qid, row_gain, qnorm, disc, w, use_w, int(inp.metric), int(inp.k),
                     int(inp.trunc), float(inp.sigma), bool(inp.norm)), float(inp.hess_scale)


def _lambdarank_setup(obj: Any, s: Any, prep: Any, data: Any) -> tuple:
    """The first two launches of every LambdaRank pass (each query sorted, its tables filled);
    returns ``(Inputs, hess_scale, scratch)``."""
    from . import _cuda_lambdarank as CL

    inp, hess_scale = _lambdarank_inputs(obj, s, prep, data)
    n, nq = data.n_rows, data.n_queries
    scratch = CL.scratch(data, n, nq)
    order, pos, F, Q, _ = scratch
    launch(CL.rank_rows, n, s, data.ptr, data.qid, order, pos)
    launch(CL.setup_queries, nq, s, inp, order, F, Q)
    return inp, hess_scale, scratch


def lambdarank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    from . import _cuda_lambdarank as CL

    inp, hess_scale, (order, pos, F, Q, factor) = _lambdarank_setup(obj, s, prep, data)
    n, nq = data.n_rows, data.n_queries
    launch(CL.pair_rows, n, inp, pos, F, Q)
    launch(CL.finish_queries, nq, inp, hess_scale, F, Q, factor)
    launch(CL.write_rows, n, data.qid, pos, data.ptr, F, Q, factor, g, h)


def lambdarank_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """LambdaRank's pairs from the scratch its gradient launches just filled (``_cuda_lambdarank``)."""
    from . import _cuda_lambdarank as CL

    inp, _ = _lambdarank_inputs(obj, s, prep, data)
    nq = data.n_queries
    order, _, F, Q, factor = CL.scratch(data, data.n_rows, nq)
    offsets, out = sized(segments(data, nq), pair_buffer, CL.count_pairs, nq, inp, F, Q)
    if out[0].shape[0] > 0:
        launch(CL.fill_pairs, nq, inp, order, F, Q, factor, offsets, False, _debias(data, 0), *out)
    return out


def _debias(data: Any, m: int, position: Any = None, tplus: Any = None, tminus: Any = None,
            swapped: bool = False) -> Any:
    """A ``_lambdarank_records.Debias`` of device arrays for ``m`` pairs' terms; without ``position``
    (plain couplings) one-entry stand-ins the kernel never reads, kept across rounds."""
    from ._lambdarank_records import Debias

    if position is None:
        pos, stand_in = data.scratch("no_debias_pos", (1,), np.int64), data.scratch("no_debias", (1,), np.float64)
        return Debias(pos, stand_in, stand_in, False, stand_in, stand_in, stand_in)
    return Debias(position, tplus, tminus, bool(swapped),
                  *(data.cuda.device_array(max(m, 1), np.float64) for _ in range(3)))


def lambdarank_debiased_terms(obj: Any, s: Any, prep: Any, data: Any, position: Any, tplus: Any, tminus: Any,
                              swapped: bool, pair_buffer: PairBuffer) -> tuple:
    """``(i, j, h, Debias)``: ``LambdaRank.debiased_pair_terms`` on the device (device ``position``,
    ``tplus``, ``tminus``), pairs by query from ``segments(data, n_queries)[1]``."""
    from . import _cuda_lambdarank as CL

    inp, hess_scale, (order, _, F, Q, factor) = _lambdarank_setup(obj, s, prep, data)
    nq = data.n_queries
    offsets, out = sized(segments(data, nq), pair_buffer, CL.count_pairs, nq, inp, F, Q)
    m = out[0].shape[0]
    deb = _debias(data, m, position, tplus, tminus, swapped)
    if m > 0:
        from . import _cuda_pointwise as CW

        launch(CW.fill, nq, factor[1], hess_scale)  # no norm factor: the hessian scale alone scales the terms
        launch(CL.fill_pairs, nq, inp, order, F, Q, factor, offsets, True, deb, *out)
    return (*out, deb)


# --- pair losses -----------------------------------------------------------------------------------
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


def _label_pairs(lp: Any, obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, spec: PK.PairSpec) -> None:
    from . import _cuda_pairwise as CP

    check_spec(spec)
    order, lower = data.arrays((obj, "label_pairs"), lambda: (lp.order, lp.lower))
    lpos, block = data.arrays((obj, "label_order"), lambda: _label_order(prep, lp))
    rows = CP.LabelRows(data.labels, data.ptr, data.qid, order, lower, lpos, block, data.weights, data.use_weights)
    launch(CP.label_pairs_rows, data.n_rows, s, rows, spec, g, h)


def _device_list(obj: Any, name: str, data: Any, pi: np.ndarray, pj: np.ndarray, theta: np.ndarray,
                 pair_w: Optional[np.ndarray]) -> Any:
    """The pair list as the device ``_cuda_pairwise.PairList`` record (uploaded once per data set)."""
    from . import _cuda_pairwise as CP

    dpi, dpj, dth = data.arrays((obj, name, "pairs"), lambda: (pi, pj, theta))
    pw, use_pw = data.array((obj, name, "pair_w"), lambda: pair_w if pair_w is not None else np.ones(1)), \
        pair_w is not None
    return CP.PairList(dpi, dpj, dth, pw, use_pw, data.weights, data.use_weights)


def _pair_list(obj: Any, name: str, s: Any, data: Any, g: Any, h: Any, pairs: tuple,
               pair_w: Optional[np.ndarray], spec: PK.PairSpec) -> None:
    from . import _cuda_pairwise as CP

    check_spec(spec)
    plist = _device_list(obj, name, data, pairs[0], pairs[1], pairs[2], pair_w)
    incidence = data.arrays((obj, name, "incidence"), lambda: row_incidence(pairs[0], pairs[1], data.n_rows))
    launch(CP.pair_list_rows, data.n_rows, s, plist, *incidence, spec, g, h)


def label_pair_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """RankNet, RankSVM, MPBoost and any loss on the label pairs of each query with a ``pair_spec``."""
    _label_pairs(prep.state_for(obj), obj, s, prep, data, g, h, obj.pair_spec())


def qbrank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """QBRank: its label pairs, its explicit pairs, and the squared error of its labelled rows."""
    from . import _cuda_pointwise as CW

    state = prep.state_for(obj)
    spec = obj.pair_spec()
    if state.label_pairs is not None and spec.scale > 0.0:
        _label_pairs(state.label_pairs, obj, s, prep, data, g, h, spec)
    if state.explicit is not None and spec.scale > 0.0:
        _pair_list(obj, "explicit", s, data, g, h, tuple(state.explicit), None, spec)
    if state.labeled_weight is not None:
        lab_w = data.array((obj, "labeled_weight"), lambda: state.labeled_weight)
        launch(CW.pointwise_rows, data.n_rows, int(RowKind.SQUARED_ERROR), s, data.labels, lab_w, True, 0.0, g, h)


def preference_pairs(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """PreferencePairs: its explicit pairs with their own weights."""
    _pair_list(obj, "explicit", s, data, g, h, tuple(prep.state_for(obj)), obj.weight, obj.pair_spec())


def listed_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """The pairs of ``obj.listed_pairs(prep)`` with coupling > 0, in list order (the CPU booster keeps
    those of the objective's list): ``_cuda_pairwise.count_kept_pairs`` / ``fill_kept_pairs``, a
    chunk of the list a thread."""
    lp = obj.listed_pairs(prep)
    if lp is None:  # no coupled pairs (QBRank's diagonal bound, or no pairs at all)
        return pair_buffer(0)
    check_spec(lp.spec)
    plist = _device_list(obj, "listed", data, lp.pi, lp.pj, lp.theta, lp.pair_w if lp.use_pw else None)
    return kept_pairs(s, data, pair_buffer, plist, lp.spec)


def kept_pairs(s: Any, data: Any, pair_buffer: PairBuffer, plist: Any, spec: PK.PairSpec) -> tuple:
    """The pairs of the device list ``plist`` (a ``_cuda_pairwise.PairList``) with coupling > 0 under
    ``spec``, in list order, written to ``pair_buffer(m)``."""
    from . import _cuda_pairwise as CP

    n_seg = chunks(plist.pi.shape[0], LIST_CHUNK)
    args = (s, plist, spec, LIST_CHUNK)
    offsets, out = sized(segments(data, n_seg), pair_buffer, CP.count_kept_pairs, n_seg, *args)
    if out[0].shape[0] > 0:
        launch(CP.fill_kept_pairs, n_seg, *args, offsets, *out)
    return out


def query_pairs(data: Any, pair_buffer: PairBuffer, count: Any, fill: Any, *args: Any) -> tuple:
    """The pairs a per-query ``count`` / ``fill`` kernel pair writes (one thread per query, ``args``
    then the counts / the offsets and buffers), in query order."""
    nq = data.n_queries
    offsets, out = sized(segments(data, nq), pair_buffer, count, nq, *args)
    if out[0].shape[0] > 0:
        launch(fill, nq, *args, offsets, *out)
    return out


def sized(scratch: tuple, pair_buffer: PairBuffer, count: Any, n_seg: int, *args: Any) -> tuple:
    """``(offsets, pair buffers)``: ``count`` (a thread or a block per segment, ``args`` then the counts)
    gives each segment's pairs, one block scans them into offsets; only the total comes back, to size the
    buffers. ``scratch``: the ``(counts, offsets)`` arrays, ``n_seg`` (at least 1) and ``n_seg + 1``."""
    from . import _cuda_lambdarank as CL

    counts, offsets = scratch
    launch(count, n_seg, *args, counts)
    CL.scan_pairs[1, query_threads()](counts, n_seg, offsets)
    return offsets, pair_buffer(int(offsets[n_seg:n_seg + 1].copy_to_host()[0]))


def chunks(m: int, chunk: int) -> int:
    """Chunks of ``chunk`` pairs covering ``m`` pairs."""
    return (m + chunk - 1) // chunk


def segments(data: Any, n_seg: int) -> tuple:
    """The ``(counts, offsets)`` scratch of ``n_seg`` segments, reused every round (a fixed count per fit)."""
    return (data.scratch("pair_counts", (max(n_seg, 1),), np.int64),
            data.scratch("pair_offsets", (n_seg + 1,), np.int64))


# --- pointwise, structured, composites ---------------------------------------------------------------
def _row_weights(obj: Any, prep: Any, data: Any) -> tuple:
    state = prep.state_for(obj)
    if state is None:
        return data.weights, data.use_weights
    return data.array((obj, "weight"), lambda: state), True  # Logistic(balanced=True): its state is the row weights


def pointwise(kind: RowKind, param: Optional[str] = None) -> Callable:
    """The route of a pointwise loss: one thread per row of ``_cuda_pointwise.pointwise_rows`` with
    its :class:`~._row_terms.RowKind` and the objective's attribute ``param``."""
    def route(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
        from . import _cuda_pointwise as CW

        w, use_w = _row_weights(obj, prep, data)
        p = float(getattr(obj, param)) if param is not None else 0.0
        launch(CW.pointwise_rows, data.n_rows, int(kind), s, data.labels, w, use_w, p, g, h)
    return route


SQUARED_ERROR = pointwise(RowKind.SQUARED_ERROR)
LOGISTIC = pointwise(RowKind.LOGISTIC, "sigma")
SQUARED_HINGE = pointwise(RowKind.SQUARED_HINGE, "C")


def mcrank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """McRank's route: one thread per row of ``_cuda_pointwise.mcrank_rows`` (a softmax over its outputs)."""
    from . import _cuda_pointwise as CW

    launch(CW.mcrank_rows, data.n_rows, s, data.labels, *_row_weights(obj, prep, data), g, h)


def structured(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    from . import _cuda_structured as CS

    state = prep.state_for(obj)
    gain = data.array((obj, "row_gain"), lambda: state.row_gain)
    n, nq = data.n_rows, data.n_queries
    star = data.scratch("star", (max(n, 1),), np.int64)
    SF = data.scratch("structured_f", (CS.N_SF, n + nq + 1), np.float64)
    SI = data.scratch("structured_i", (CS.N_SI, n + nq + 1), np.int64)
    failed = data.scratch("structured_failed", (max(nq, 1),), np.int64)
    launch(CS.ideal_rank_rows, n, s, gain, data.ptr, data.qid, star)
    rows = CS.Rows(gain, data.ptr, data.weights, data.use_weights, star)
    launch(CS.structured_queries, nq, s, rows, obj.k, obj.hess, SF, SI, g, h, failed)
    obj._raise_if_failed(failed.copy_to_host()[:nq] != 0)  # the CPU's guard, same message


def sum_parts(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """``Sum``: each part's route adds into the same outputs."""
    for part in obj.parts:
        prep.state_for(part)
        part.device_route().grad_hess(part, s, prep, data, g, h)


def scaled(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """``Scaled``: the child's route into scratch, then ``out += factor * scratch``."""
    from . import _cuda_pointwise as CW

    child = obj.objective
    prep.state_for(child)
    cg = data.scratch(("scaled_grad", obj), g.shape, np.float64)  # equal Scaled parts run one after the other
    ch = data.scratch(("scaled_hess", obj), h.shape, np.float64)
    zero(cg, ch)
    child.device_route().grad_hess(child, s, prep, data, cg, ch)
    for dst, src in ((g, cg), (h, ch)):
        launch(CW.add_scaled, dst.size, flat(dst), flat(src), obj.factor)
