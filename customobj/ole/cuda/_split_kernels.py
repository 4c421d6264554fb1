"""numba.cuda kernels of the OLE grower's split search and histogram arithmetic: the GPU twins of
:func:`customobj.ole.splitting.find_best_split_parallel` and ``feature_gains``.

The search is the CPU's own code: :func:`node_bests` runs one thread per feature and node (a split's
two children in one launch), and each calls ``splitting._best_in_feature`` (numba's CUDA target
compiles a ``@njit`` function called from a kernel as a device function), so a feature's thresholds,
NaN directions, constraints and gains are evaluated by the same source in the same order.
:func:`feature_bests` is it alone (a node's WSE ranking, read back; ``ole_fast`` ranks on the card:
:func:`._choice_kernels.wse_choose`);
:func:`._search_kernels.search_nodes` then takes, by a block reduction, the first feature whose
gain is strictly larger than every earlier one: the CPU's tie-breaking (lower feature, then lower
bin, then NaN right before NaN left). Only the chosen split, a ``float64[SPLIT_SIZE]`` record
(:mod:`.common`), goes back to the host; the histograms stay.

Under numba's CUDA simulator a kernel's arrays are Python objects that ``@njit`` code cannot take,
so there the kernels call the function's Python source (``py_func``), whose helpers
(``node_hessian``, ``_score``) still run compiled on the same scalars: the same arithmetic.

The arithmetic kernels: :func:`subtract3` (up to three ``parent -= child``, elementwise, as numpy
does on the host; exact on the grid of :mod:`.fixed_point`; a split's, queued by
:class:`~customobj.ole.cuda.memory.SubtractQueue`) and :func:`subtract_children` (a split's rows'
``parent -= child`` and its children's pair histograms completed by the plan made on the card:
``larger = parent - smaller - split pairs``, the CPU's order, or nothing).
"""
from ..._cuda_runtime import cuda_module, device_function
from ..common import PART_PLAN, PH_CHANNELS, PH_R, ChildSums
from ..pairhist import PAIRS_LEFT_SMALL, PAIRS_RIGHT_SMALL
from ..splitting import _best_in_feature, parent_score

cuda = cuda_module()

__all__ = ["feature_bests", "node_bests", "subtract3", "subtract_children"]

_best, _parent = device_function(_best_in_feature), device_function(parent_score)


@cuda.jit(device=True)
def node_bests(h, use_pairs, bins, node_a, node_b, rules, sums, on_device, per, gains):
    """Thread ``f`` of node ``b`` (``cuda.blockIdx.y``, at most two: a split's children): ``gains[b, f]`` =
    feature ``f``'s best gain > 0 (0 outside node ``b``'s mask), ``per[b, f]`` its split record
    (written only when its gain > 0). ``h``: the nodes' histograms and masks (``search.NodeHists``);
    ``bins``, ``node_a`` / ``node_b``, ``rules``: the records of ``splitting.find_best_split`` (with
    ``rules.score`` WSE and no pairs: ``feature_gains``'s gains). With ``on_device`` node 0's ``G, H, C``
    are ``sums[0:3]`` (a tree's root, never read back before its search), not its record's; the
    parent's score is the CPU's function."""
    b = cuda.blockIdx.y
    f = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if f >= bins.n_bins.shape[0]:
        return
    node = node_a if b == 0 else node_b
    if on_device and b == 0:
        node = ChildSums(sums[0], sums[1], node.N, sums[2])
    gains[b, f] = 0.0
    if (h.mask_a if b == 0 else h.mask_b)[f]:
        gains[b, f] = _best(f, h.row_a if b == 0 else h.row_b, h.pair_a if b == 0 else h.pair_b, use_pairs, bins,
                            node, rules, _parent(node, rules), per[b, f])


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
