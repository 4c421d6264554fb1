"""numba.cuda kernels of the OLE grower's histograms: the GPU twins of :mod:`.histogram` and :mod:`.pairhist`.

Deterministic by construction (issue "OLE at scale": the GPU must grow the CPU's trees, ties
broken the same way). No atomics: a node's rows (or pairs) are cut into blocks whose number
depends only on their count (:func:`customobj.ole.cuda_backend.n_blocks`), one thread per (block,
feature) sums its block **in node order** into its own partial histogram, and one thread per
(slot, channel) adds the partials in block order. A node of at most ``cuda_backend.ROW_BLOCK``
rows is one block: its row histogram then adds every row in the CPU kernel's order
(``histogram.build_row_hist_fm``: per feature, rows in node order), bit for bit. More blocks, and
the pair histograms (the CPU's ``criterion="ole"`` sums chunks in float32 first), differ from the
CPU's sums only by float64 rounding: two features or thresholds that tie on the CPU (the same
rows, the same bins) tie here too, because equal inputs go through equal arithmetic. Only
additions: no multiply-add the compiler could fuse differently from the CPU.

The pair channels follow :mod:`.pairhist`: ``hi`` at the larger bin (ties: the first row's),
``nanp`` at the non-NaN row's bin when the other row's bin is the NaN slot, ``R`` at both rows'
bins. Bins are feature-major ``(features, rows)``: a thread walks one feature's column.
"""
from .._cuda_runtime import cuda_module
from .common import HIST_COUNT, HIST_G, HIST_H, PH_HI, PH_NANP, PH_R

cuda = cuda_module()

__all__ = ["zero", "row_hist_blocks", "pair_hist_blocks", "reduce_blocks"]

@cuda.jit(cache=True)
def zero(flat):
    """``flat[:] = 0`` (a partial buffer before a feature subset fills only its own slots)."""
    i = cuda.grid(1)
    if i < flat.shape[0]:
        flat[i] = 0.0


@cuda.jit(device=True)
def _block_of_thread(t, n_feat, n, nb):
    """Thread ``t`` of ``n_feat * nb``: its block ``b``, its feature ``f`` and the block's items
    ``lo:hi`` of ``n``; ``b = -1`` for a thread past the end. Neighbouring threads take one block and
    neighbouring features, so a warp reads the same rows (or pairs)."""
    if t >= n_feat * nb:
        return -1, 0, 0, 0
    b = t // n_feat
    return b, t - b * n_feat, (n * b) // nb, (n * (b + 1)) // nb


@cuda.jit(cache=True)
def row_hist_blocks(bins_fm, rows, n, nb, grad, hess, offsets, partial):
    """Thread ``(b, f)``: ``partial[b]``'s slots of feature ``f`` = [g, h, count] sums of the rows
    ``rows[lo:hi]`` of block ``b``, in order."""
    b, f, lo, hi = _block_of_thread(cuda.grid(1), bins_fm.shape[0], n, nb)
    if b < 0:
        return
    part = partial[b]
    for s in range(offsets[f], offsets[f + 1]):
        part[s, HIST_G] = 0.0
        part[s, HIST_H] = 0.0
        part[s, HIST_COUNT] = 0.0
    col = bins_fm[f]
    base = offsets[f]
    for k in range(lo, hi):
        r = rows[k]
        s = base + col[r]
        part[s, HIST_G] += grad[r]
        part[s, HIST_H] += hess[r]
        part[s, HIST_COUNT] += 1.0


@cuda.jit(cache=True)
def pair_hist_blocks(bins_fm, pi, pj, pc, n, nb, feats, foff, fnb, partial):
    """Thread ``(b, q)``: ``partial[b]``'s slots of feature ``feats[q]`` = [hi, nanp, R] of the pairs
    ``lo:hi`` of block ``b``, in pair order (``partial`` zeroed outside the features' slots)."""
    b, q, lo, hi = _block_of_thread(cuda.grid(1), feats.shape[0], n, nb)
    if b < 0:
        return
    part = partial[b]
    base = foff[q]
    top = fnb[q]  # the NaN slot's bin
    for s in range(base, base + top + 1):
        part[s, PH_HI] = 0.0
        part[s, PH_NANP] = 0.0
        part[s, PH_R] = 0.0
    col = bins_fm[feats[q]]
    for k in range(lo, hi):
        c = pc[k]
        x = col[pi[k]]
        y = col[pj[k]]
        part[base + x, PH_R] += c
        part[base + y, PH_R] += c
        if x < y:
            if y == top:  # the larger row is NaN: nanp at the other row's bin
                part[base + x, PH_NANP] += c
            else:
                part[base + y, PH_HI] += c
        elif y < x and x == top:
            part[base + y, PH_NANP] += c
        else:  # the first row holds the larger (or equal) bin; two NaN rows land on the NaN slot
            part[base + x, PH_HI] += c


@cuda.jit(cache=True)
def reduce_blocks(partial, nb, out):
    """``out[s, ch] = sum_b partial[b, s, ch]``, blocks added in order (one thread per entry)."""
    i = cuda.grid(1)
    n_ch = out.shape[1]
    if i >= out.shape[0] * n_ch:
        return
    s = i // n_ch
    ch = i - s * n_ch
    acc = partial[0, s, ch]
    for b in range(1, nb):
        acc += partial[b, s, ch]
    out[s, ch] = acc
