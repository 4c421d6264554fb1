"""The shared pieces of the objectives' block-per-segment GPU kernels (issue 42, item 2): a block of
``QUERY_THREADS`` threads (one warp) works one query or one row, and these device functions are how its
threads agree, in a fixed order, so that the results never depend on the launch:

- :func:`block_sum` / :func:`block_scan`: integers (pair counts, kept flags) summed or scanned in
  shared memory: exact in any order;
- :func:`block_max`: the largest of one float per thread: exact in any order (a maximum rounds
  nothing);
- :func:`add_staged`: a float sum in the CPU's row order. Floating-point addition is not associative,
  so a tree over the lanes would round otherwise than the CPU's running sum; instead every thread
  *stages* one row's term (the ``exp``, ``log``, divisions: the costly part) in shared memory, and
  thread 0 adds the staged terms in row order. The serial path is one add per row, the terms are
  computed a warp's width at a time, and the sum is the CPU's bit for bit.
- :func:`add_rn`: a thread's own running sum ``acc + x`` that a card never fuses with the product
  that made ``x`` (numba-cuda contracts ``acc += b * c`` into one ``fma``, which the CPU does not):
  for the sums a thread keeps in registers, as the thread-per-row pair walks do;
- :func:`grid_item` / :func:`query_block`: a one-thread-per-item kernel's item, a block-per-query
  kernel's query (or -1 past the last): the preambles the kernels share; :func:`place_kept`: one
  step of a FILL pass placing the kept pairs in order.

Every function here is called by all threads of a block (the barriers need them all), except
:func:`grid_item` and :func:`add_rn`.
"""
import math

from .._cuda_runtime import cuda_module, simulated

cuda = cuda_module()

#: Threads of the block that works on one segment (a query, or an upper position / row of the pair
#: kernels): one warp, a power of two (the tree reductions halve it); fewer under the simulator
#: (``_launch.query_threads``).
QUERY_THREADS = 32


if simulated():  # Python floats: every add rounds on its own (libdevice's functions are stubs here)
    @cuda.jit(device=True)
    def add_rn(acc, x):
        """``acc + x`` rounded on its own: libdevice's ``__nv_dadd_rn`` on a card."""
        return acc + x
else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def add_rn(acc, x):
        """``acc + x`` rounded on its own: libdevice's ``__nv_dadd_rn`` (PTX ``add.rn.f64``, which the
        compilers never fuse with a product), so a running sum of products is the CPU's bit for bit."""
        return libdevice.dadd_rn(acc, x)


@cuda.jit(device=True)
def grid_item(n):
    """This thread's item of a one-thread-per-item launch over ``n`` items, -1 past the last."""
    i = cuda.grid(1)
    return i if i < n else -1


@cuda.jit(device=True)
def query_block(ptr):
    """``(q, lo, hi)``: this block's query and its rows ``lo:hi`` (``ptr`` the query offsets), ``q = -1``
    past the last query (then the whole block returns: no thread reaches a barrier)."""
    q = cuda.blockIdx.x
    if q >= ptr.shape[0] - 1:
        return -1, 0, 0
    return q, ptr[q], ptr[q + 1]


@cuda.jit(device=True)
def place_kept(sh, t, a, b, c, out):
    """One step of a FILL pass: each thread's pair ``(a, b, c)``, kept when ``c > 0``, written to
    ``out = (i, j, coupling)`` from ``t`` in thread order (a fixed-order :func:`block_scan` of the kept
    flags: the CPU's order); returns ``t`` past the block's kept pairs."""
    before, kept = block_scan(sh, 1 if c > 0.0 else 0)
    if c > 0.0:
        out_i, out_j, out_c = out
        out_i[t + before] = a
        out_j[t + before] = b
        out_c[t + before] = c
    return t + kept


@cuda.jit(device=True)
def block_sum(sh, v):
    """The block's sum of the integers ``v`` (one per thread), in every thread: a tree in shared
    memory (``sh``: ``QUERY_THREADS`` slots; ``blockDim.x`` a power of two). Integers: the same in
    any order."""
    t = cuda.threadIdx.x
    sh[t] = v
    cuda.syncthreads()
    half = cuda.blockDim.x // 2
    while half > 0:
        if t < half:
            sh[t] += sh[t + half]
        cuda.syncthreads()
        half //= 2
    total = sh[0]
    cuda.syncthreads()  # ``sh`` free again for the caller's next use
    return total


@cuda.jit(device=True)
def block_max(sh, v):
    """The largest of the floats ``v`` (one per thread), in every thread: the tree of :func:`block_sum`
    over a float64 ``sh``. NaN counts as ``-inf`` (as in the CPU's walks from ``-inf`` by ``>``): ``-inf``
    when no value is larger."""
    t = cuda.threadIdx.x
    sh[t] = v if v > -math.inf else -math.inf
    cuda.syncthreads()
    half = cuda.blockDim.x // 2
    while half > 0:
        if t < half and sh[t + half] > sh[t]:
            sh[t] = sh[t + half]
        cuda.syncthreads()
        half //= 2
    top = sh[0]
    cuda.syncthreads()
    return top


@cuda.jit(device=True)
def block_scan(sh, v):
    """``(sum of v over the threads before this one, sum over the block)``: an exclusive prefix sum
    of one integer per thread in thread order (Hillis and Steele's scan in shared memory ``sh``)."""
    t = cuda.threadIdx.x
    sh[t] = v
    cuda.syncthreads()
    off = 1
    while off < cuda.blockDim.x:
        x = sh[t - off] if t >= off else 0
        cuda.syncthreads()
        sh[t] += x
        cuda.syncthreads()
        off *= 2
    incl = sh[t]
    total = sh[cuda.blockDim.x - 1]
    cuda.syncthreads()
    return incl - v, total


@cuda.jit(device=True)
def add_staged(sh, total, count):
    """``total + sh[0] + ... + sh[count - 1]``, added in that order by thread 0, after the block's
    threads staged their terms in the float64 ``sh`` (the other threads get ``total`` back unchanged:
    broadcast the final sum with :func:`broadcast`). Both barriers are here: the staged terms are
    complete before thread 0 reads them, and read before the next step overwrites them."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        for k in range(count):
            total += sh[k]
    cuda.syncthreads()
    return total


@cuda.jit(device=True)
def broadcast(sh, v):
    """Thread 0's ``v`` in every thread (through ``sh[0]``)."""
    if cuda.threadIdx.x == 0:
        sh[0] = v
    cuda.syncthreads()
    v = sh[0]
    cuda.syncthreads()
    return v
