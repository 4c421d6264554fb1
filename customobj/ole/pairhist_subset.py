r"""Pair-coupling histograms of a few features: ``criterion="ole_fast"``'s per-node pass.

Same histogram as :func:`customobj.ole.pairhist.build_pair_hist` (channels ``[hi, nanp, R]``,
see that module; for the node hessian ``H - 2C`` of Xia, Zhai, Wang, "Analysis of Regression Tree
Fitting Algorithms in Learning to Rank", section 3.1), built pair by pair: for each of the ``k`` features a pair ``(i, j)`` with coupling
``c`` and bins ``x, y`` (NaN slot ``nb``) adds

.. math::

    R[x] \mathrel{+}= c,\quad R[y] \mathrel{+}= c,\quad
    \begin{cases} \mathrm{nanp}[\text{the non-NaN bin}] \mathrel{+}= c & \text{one of } x, y = nb \\
                  \mathrm{hi}[\max(x, y)] \mathrel{+}= c & \text{otherwise.} \end{cases}

Why a second kernel: the chunked kernel of ``pairhist`` spends most of its time per touched row
(entering a chunk, flushing its sums into every feature's histogram), which pays off when all
features are built from the same pairs, but not for the ``k`` of ``ole_fast`` on pruned pairs
(a few pairs per row): three scatters per pair and feature are cheaper there. Sums are float64.
Blocks of pairs (their number depends only on the pair count) fill their own histograms, summed
in block order, so results do not depend on the thread count.

Examples
--------
>>> import numpy as np
>>> from customobj.ole.pairhist_subset import build_pair_hist_subset
>>> bins = np.array([[0, 1], [2, 1], [1, 0]], np.uint8)       # 3 rows, 2 features of 3 bins
>>> offsets = np.array([0, 4]); n_bins = np.array([3, 3])      # slots: 3 bins + NaN slot each
>>> pi = np.array([0, 1]); pj = np.array([1, 2]); pc = np.array([1.0, 0.5])
>>> ph = build_pair_hist_subset(bins, pi, pj, pc, 0, 2, offsets, n_bins, 8, np.array([0]))
>>> ph[:3].tolist()   # feature 0: hi at bin 2 (both pairs' larger bin), R at the rows' bins
[[0.0, 0.0, 1.0], [0.0, 0.0, 0.5], [1.5, 0.0, 1.5]]
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import PH_CHANNELS, PH_HI, PH_NANP, PH_R
from .histogram import n_blocks_for

__all__ = ["build_pair_hist_subset", "reduce_feature_slots", "subset_output", "zero_feature_slots"]

_BLOCK_PAIRS = 65536
_MAX_BLOCKS = 8


@njit(cache=True)
def _subset_block(bins, pi, pj, pc, lo, hi, feats, foff, fnb, out):
    n_feat = feats.shape[0]
    for p in range(lo, hi):
        a = pi[p]
        b = pj[p]
        c = pc[p]
        for t in range(n_feat):
            f = feats[t]
            top = fnb[t]
            base = foff[t]
            x = np.int64(bins[a, f])
            y = np.int64(bins[b, f])
            out[base + x, PH_R] += c
            out[base + y, PH_R] += c
            xn = x == top
            yn = y == top
            if xn != yn:  # one NaN row: the pair shares a child only if NaN follows the other row
                out[base + (y if xn else x), PH_NANP] += c
            else:
                out[base + (x if x > y else y), PH_HI] += c


@njit(cache=True)
def zero_feature_slots(out, foff, fnb):
    """Zero the histogram slots of the features whose slots start at ``foff`` (``fnb + 1`` each:
    the bins and the NaN slot); both pair-histogram kernels build over such feature subsets."""
    for t in range(foff.shape[0]):
        for s in range(foff[t], foff[t] + fnb[t] + 1):
            for ch in range(PH_CHANNELS):
                out[s, ch] = 0.0


@njit(cache=True)
def reduce_feature_slots(buf, n_blocks, s0, s1, out):
    """``out[s0:s1]`` = the sum of the per-block histograms ``buf[:n_blocks, s0:s1]``, added in block
    order: the same sums for any thread count (both pair-histogram kernels)."""
    for s in range(s0, s1):
        for ch in range(PH_CHANNELS):
            v = buf[0, s, ch]
            for b in range(1, n_blocks):
                v += buf[b, s, ch]
            out[s, ch] = v


@njit(cache=True, parallel=True)
def _subset_parallel(bins, pi, pj, pc, start, end, feats, foff, fnb, n_blocks, buf, out):
    n = end - start
    for b in prange(n_blocks):
        zero_feature_slots(buf[b], foff, fnb)
        _subset_block(bins, pi, pj, pc, start + (n * b) // n_blocks, start + (n * (b + 1)) // n_blocks, feats,
                      foff, fnb, buf[b])
    for t in prange(foff.shape[0]):  # features in parallel, each in block order
        reduce_feature_slots(buf, n_blocks, foff[t], foff[t] + fnb[t] + 1, out)


def subset_output(scratch: dict | None, n_slots: int, foff: np.ndarray, fnb: np.ndarray) -> np.ndarray:
    """A zero ``(n_slots, 3)`` histogram: fresh without ``scratch``, else the scratch's array, where
    only the slots of the previous call's features (``foff, fnb`` kept in the scratch) can be nonzero."""
    if scratch is None:
        return np.zeros((n_slots, PH_CHANNELS), dtype=np.float64)
    out = scratch.get("out")
    if out is None or out.shape[0] != n_slots:
        out = scratch["out"] = np.zeros((n_slots, PH_CHANNELS), dtype=np.float64)
    else:
        zero_feature_slots(out, scratch["foff"], scratch["fnb"])
    scratch["foff"], scratch["fnb"] = foff, fnb
    return out


def build_pair_hist_subset(bins: np.ndarray, pi: np.ndarray, pj: np.ndarray, pc: np.ndarray, start: int, end: int,
                           offsets: np.ndarray, n_bins: np.ndarray, n_slots: int, features: np.ndarray,
                           scratch: dict | None = None) -> np.ndarray:
    """Pair histogram ``(n_slots, 3)`` of pairs ``start:end`` for ``features`` only (other slots 0).

    ``bins``: (rows, features), any strides. ``scratch``: a dict the histograms are kept in
    between calls; the result is then the scratch's array, **valid until the next call with the
    same scratch** (the grower searches a node's split before it builds the next node's histogram):
    a fresh ``(n_slots, 3)`` array per node cost ~0.2 ms (allocation and page faults), more than
    the pair pass of most nodes.
    """
    feats = np.asarray(features, dtype=np.int64)
    if feats.size > 1 and not np.all(feats[1:] > feats[:-1]):
        feats = np.unique(feats)
    if feats.size and (feats[0] < 0 or feats[-1] >= bins.shape[1]):
        raise ValueError(f"features must be in [0, {bins.shape[1]}), got {feats[0]}..{feats[-1]}")
    foff = np.ascontiguousarray(np.asarray(offsets)[feats], dtype=np.int64)
    fnb = np.ascontiguousarray(np.asarray(n_bins)[feats], dtype=np.int64)
    out = subset_output(scratch, n_slots, foff, fnb)
    nb = n_blocks_for(end - start, block=_BLOCK_PAIRS, max_blocks=_MAX_BLOCKS)
    if nb == 1:
        _subset_block(bins, pi, pj, pc, start, end, feats, foff, fnb, out)
        return out
    scratch = {} if scratch is None else scratch
    buf = scratch.get("blocks")
    if buf is None or buf.shape[0] < nb or buf.shape[1] != n_slots:
        buf = scratch["blocks"] = np.empty((_MAX_BLOCKS, n_slots, PH_CHANNELS), dtype=np.float64)
    _subset_parallel(bins, pi, pj, pc, start, end, feats, foff, fnb, nb, buf, out)
    return out
