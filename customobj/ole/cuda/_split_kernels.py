"""numba.cuda kernels of the OLE grower's split search and histogram arithmetic: the GPU twins of
:func:`customobj.ole.splitting.find_best_split_parallel` and ``feature_gains``.

The search is the CPU's: :func:`node_bests` runs a block (one warp) per feature and node (a split's two
children in one launch; issue 42, item 4: a thread per feature walked its 255 bins twice alone). The
lanes split the feature's thresholds into runs; a scan of the runs' sums gives each lane its left
child's sums before its run (exact: the histograms are on the grid of :mod:`..fixed_point`, so every
partial sum is the CPU's running sum, in any order); each lane evaluates its thresholds with the CPU's
own ``splitting.cut_gain`` (numba's CUDA target compiles a ``@njit`` function called from a kernel
as a device function) and the block keeps the CPU's first strictly best threshold, written by
``splitting.write_split``: the same record as ``splitting._best_in_feature``, bit for bit.
:func:`feature_bests` is it alone (a node's WSE ranking, read back; ``ole_fast`` ranks on the card:
:func:`._choice_kernels.wse_choose`);
:func:`._search_kernels.search_nodes` then takes, by a block reduction, the first feature whose
gain is strictly larger than every earlier one: the CPU's tie-breaking (lower feature, then lower
bin, then NaN right before NaN left). Only the chosen split, a ``float64[SPLIT_SIZE]`` record
(:mod:`.common`), goes back to the host; the histograms stay.

Under numba's CUDA simulator a kernel's arrays are Python objects that ``@njit`` code cannot take,
so there the kernels call the functions' Python source (``py_func``), whose helpers
(``node_hessian``, ``_score``) still run compiled on the same scalars: the same arithmetic.

The arithmetic kernels: :func:`subtract3` (up to three ``parent -= child``, elementwise, as numpy
does on the host; exact on the grid of :mod:`.fixed_point`; a split's, queued by
:class:`~customobj.ole.cuda.memory.SubtractQueue`) and :func:`subtract_children` (a split's rows'
``parent -= child`` and its children's pair histograms completed by the plan made on the card:
``larger = parent - smaller - split pairs``, the CPU's order, or nothing).
"""
from numba import float64, int64

from ..._cuda_runtime import THREADS, cuda_module, device_function
from ..common import HIST_COUNT, HIST_G, HIST_H, PART_PLAN, PH_CHANNELS, PH_HI, PH_NANP, PH_R, ChildSums
from ..pairhist import PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL
from ..splitting import add_bin, cut_gain, parent_score, write_split
from ...objectives._block_cuda import block_scan
from ._reduce_kernels import first_best

cuda = cuda_module()

__all__ = ["feature_bests", "node_bests", "node_features", "subtract3", "subtract_children"]

_cut_gain, _parent, _write_split = device_function(cut_gain), device_function(parent_score), device_function(write_split)
_add_bin = device_function(add_bin)


@cuda.jit(device=True)
def _run_sums(hist, ph, use_pairs, off, lo, hi):
    """A lane's run of bins ``lo:hi``: its row sums (g, h, count) and pair sums (hi, nanp, lo)."""
    run = (0.0, 0.0, 0.0)
    cuts = (0.0, 0.0, 0.0)
    for t in range(off + lo, off + hi):
        run, cuts = _add_bin(hist, ph, use_pairs, t, run, cuts)
    return run, cuts


@cuda.jit(device=True)
def _feature_best(f, hist, ph, use_pairs, bins, node, rules, parent, res):
    """``splitting._best_in_feature`` by the block: each lane takes a run of consecutive thresholds,
    a scan of the runs' sums gives each its left sums before its run (exact on the grid), the lane
    walks its run with the CPU's ``cut_gain`` in the CPU's order, keeping its first strictly best;
    the block keeps the largest gain, on ties the first threshold in the CPU's order (direction, then
    bin). The winning lane writes ``res``; returns the gain (0: none), in every thread."""
    nb = bins.n_bins[f]
    if nb < 2:
        return 0.0
    sh = cuda.shared.array(THREADS, dtype=float64)
    shk = cuda.shared.array(THREADS, dtype=int64)
    off = bins.offsets[f]
    per = (nb - 1 + cuda.blockDim.x - 1) // cuda.blockDim.x
    lo = min(nb - 1, cuda.threadIdx.x * per)
    hi = min(nb - 1, lo + per)
    run, cuts = _run_sums(hist, ph, use_pairs, off, lo, hi)
    # the runs' sums before each lane: a scan in shared memory (the simulator has no warp shuffles)
    eg, _ = block_scan(sh, run[0])
    eh, _ = block_scan(sh, run[1])
    en, _ = block_scan(sh, run[2])
    ehi = enp = elo = lo_tot = nanp_tot = c_nn = 0.0
    if use_pairs:
        ehi, _ = block_scan(sh, cuts[0])
        enp, nanp_tot = block_scan(sh, cuts[1])
        elo, lo_tot = block_scan(sh, cuts[2])
        last = off + nb - 1  # the last value bin: no threshold after it, but in the totals
        lo_tot += ph[last, PH_R] - ph[last, PH_HI] - ph[last, PH_NANP]
        nanp_tot += ph[last, PH_NANP]
        c_nn = ph[off + nb, PH_HI]
    n_nan = hist[off + nb, HIST_COUNT]
    best = 0.0
    key = -1
    wl = (0.0, 0.0, 0.0)
    wc = (0.0, 0.0)
    for d in range(2 if n_nan > 0 else 1):
        nan_left = d == 1
        left = (eg, eh, en)
        if nan_left:
            left = (hist[off + nb, HIST_G] + eg, hist[off + nb, HIST_H] + eh, n_nan + en)
        cuts = (ehi, enp, elo)
        for t in range(lo, hi):
            left, cuts = _add_bin(hist, ph, use_pairs, off + t, left, cuts)
            gain, cl, cr = _cut_gain(rules, node, parent, left, cuts, (lo_tot, nanp_tot, c_nn), nan_left, use_pairs)
            if gain > best:
                best = gain
                key = d * nb + t
                wl = left
                wc = (cl, cr)
    top, k = first_best(sh, shk, best, key)
    if k >= 0 and k == key:
        _write_split(res, top, (f, k % nb, k >= nb), node, wl, wc[0], wc[1])
    return top


@cuda.jit(device=True)
def node_bests(h, use_pairs, bins, node_a, node_b, rules, sums, on_device, per, gains):
    """Block ``(x, b)`` (node ``b = cuda.blockIdx.y``, at most two: a split's children) searches features
    ``x, x + gridDim.x, ...`` one at a time, all its threads on each (:func:`_feature_best`; launched a
    warp per feature: ``_launch.feature_launch``): ``gains[b, f]`` = feature ``f``'s best gain > 0 (0
    outside node ``b``'s mask), ``per[b, f]`` its split record (written only when its gain > 0). ``h``:
    the nodes' histograms and masks (``search.NodeHists``); ``bins``, ``node_a`` / ``node_b``,
    ``rules``: the records of ``splitting.find_best_split`` (with ``rules.score`` WSE and no pairs:
    ``feature_gains``'s gains). With ``on_device`` node 0's ``G, H, C`` are ``sums[0:3]`` (a tree's
    root, never read back before its search), not its record's; the parent's score is the CPU's
    function."""
    b = cuda.blockIdx.y
    node = node_a if b == 0 else node_b
    if on_device and b == 0:
        node = ChildSums(sums[0], sums[1], node.N, sums[2])
    mask = h.mask_a if b == 0 else h.mask_b
    hist = h.row_a if b == 0 else h.row_b
    ph = h.pair_a if b == 0 else h.pair_b
    node_features(hist, ph, use_pairs, mask, bins, node, rules, per[b], gains[b])


@cuda.jit(device=True)
def node_features(hist, ph, use_pairs, mask, bins, node, rules, per, gains):
    """One node's part of :func:`node_bests` (its histograms, mask and sums given): block ``x`` searches
    features ``x, x + gridDim.x, ...``; ``gains[f]``, ``per[f]`` as there."""
    parent = _parent(node, rules)
    for f in range(cuda.blockIdx.x, bins.n_bins.shape[0], cuda.gridDim.x):
        gain = 0.0
        if mask[f]:  # the same in every thread: the block searches together
            gain = _feature_best(f, hist, ph, use_pairs, bins, node, rules, parent, per[f])
        if cuda.threadIdx.x == 0:
            gains[f] = gain


@cuda.jit(cache=True)
def feature_bests(h, use_pairs, bins, node_a, node_b, rules, sums, on_device, per, gains):
    """Every feature's best split of one or two nodes (:func:`node_bests`; blocks: ``(features, nodes)``)."""
    node_bests(h, use_pairs, bins, node_a, node_b, rules, sums, on_device, per, gains)


@cuda.jit(cache=True)
def subtract3(a0, b0, a1, b1, a2, b2, n_ops):
    """``a0 -= b0``, then (``n_ops`` > 1) ``a1 -= b1``, then (> 2) ``a2 -= b2``, over flat arrays of one
    size (a grid-stride loop: each entry's subtractions in that order, as a target may appear twice; a
    bounded grid, so the simulator starts a few threads, not one per entry)."""
    for i in range(cuda.grid(1), a0.shape[0], cuda.gridsize(1)):
        a0[i] -= b0[i]
        if n_ops > 1:
            a1[i] -= b1[i]
        if n_ops > 2:
            a2[i] -= b2[i]


@cuda.jit(cache=True)
def subtract_children(a0, b0, n_ops, parent, left, right, record):
    """``a0 -= b0`` (``n_ops`` 1; 0: not), then a split's children's pair histograms (flat, one size)
    completed by ``record[PART_PLAN]`` (``_histograms_kernels.child_hists``):
    ``PAIRS_LEFT_SMALL``: ``right = (parent - left) - right`` (``right`` held the split pairs'),
    ``PAIRS_RIGHT_SMALL``: ``left = (parent - right) - left``, else nothing: the CPU's
    ``parent -= smaller; parent -= split pairs``, in its order (exact on the grid either way). Channel
    ``PH_R`` is left alone: both children's come from their rows (``child_hists``)."""
    mode = record[PART_PLAN]
    for i in range(cuda.grid(1), parent.shape[0], cuda.gridsize(1)):
        if n_ops > 0:
            a0[i] -= b0[i]
        if i % PH_CHANNELS == PH_R:
            continue
        if mode == PAIRS_LEFT_SMALL:
            right[i] = (parent[i] - left[i]) - right[i]
        elif mode == PAIRS_RIGHT_SMALL:
            left[i] = (parent[i] - right[i]) - left[i]
