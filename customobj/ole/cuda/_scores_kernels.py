"""numba.cuda kernel of the training-score update of ``TreeBooster(device="cuda")``: the GPU twin of
:func:`customobj.ole.predictor.add_tree_bins`.

One thread per row walks the tree on the row's bins (feature-major ``(features, rows)``, as the
backend holds them: :mod:`.backend`), each step the CPU's own
:func:`customobj.ole.predictor.child_of_bin` (a device function here), and adds its leaf's value once, the addition the CPU makes
(``add_tree_bins``, or ``grower.add_leaf_values`` from the partition: the same leaf, the same single
``+=`` per row and tree), so the scores stay equal bit for bit. The walk stops after as many steps as
the tree has nodes: a malformed tree cannot make the kernel loop.
"""
from ..._cuda_runtime import cuda_module, device_function
from ..predictor import child_of_bin

cuda = cuda_module()
_child = device_function(child_of_bin)

__all__ = ["add_tree_bins"]


@cuda.jit(cache=True)
def add_tree_bins(bins_fm, n_bins, feature, tbin, default_left, left, right, leaf_value, out):
    """Thread ``i``: ``out[i] += leaf_value[leaf of row i]`` (bin ``n_bins[f]`` is the NaN bin)."""
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    n_nodes = feature.shape[0]
    if n_nodes == 0:
        out[i] += leaf_value[0]
        return
    node = 0
    for _ in range(n_nodes):
        f = feature[node]
        nxt = _child(node, bins_fm[f, i], n_bins[f], tbin, default_left, left, right)
        if nxt < 0:
            out[i] += leaf_value[-nxt - 1]  # ~nxt: leaves are stored as one's complements
            return
        node = nxt
