"""The per-query steps of Chapelle's structured-output DCG loss, shared by the CPU kernels
(``_structured_kernels``) and the GPU kernels (``_structured_cuda``, through
``customobj._cuda_runtime.device_function``).

Design note (see ``_pairwise_terms`` for what the terms modules share and why): the candidates, the
exact assignment (shortest augmenting paths with potentials) and the loss of one query are written
once here over 1-D arrays: the query's scores and gains, its candidate rows, the position weights
``A``, ``D`` and the search's work arrays. What stays per target is where those arrays live: the
CPU allocates them per query; the GPU hands each query its own slices of two scratch arrays (one
thread per query), so the same code runs on both and picks the same assignment.

Examples
--------
>>> import numpy as np
>>> keep = np.empty(4, dtype=np.int64)
>>> select_candidates(np.array([0, 1, 2, 3]), np.array([1.0, 1.0, 0.0, 0.0]), 1, keep), keep[:2].tolist()
(2, [0, 2])
"""
import math

from numba import njit


@njit(cache=True)
def select_candidates(star, gain, m, out):
    """Rows that can fill an optimal assignment, written to ``out``; returns their count: the ``m``
    best-scored rows of each gain level.

    Within one gain level ``w(j, r) = s_j A[r] - G D[r]`` orders rows by score at every position
    (``A > 0``). A row with ``m`` same-gain rows scored at least as high can be exchanged for one
    of them left free (only ``m - 1`` other positions) without lowering the total, so some optimum
    uses candidates only. ``star`` (label, then score, descending) lists each level best first.
    """
    c = 0
    run = 0
    for t in range(star.shape[0]):
        if t > 0 and gain[star[t]] != gain[star[t - 1]]:
            run = 0
        if run < m:
            out[c] = star[t]
            c += 1
        run += 1
    return c


@njit(cache=True)
def assign_core(s, gain, cand, A, D, u, v, minv, p, way, used, at):
    """Rows ``cand[at[r]]`` assigned to positions ``r = 0..m-1`` (``m = A.shape[0]``) maximising
    ``sum s_i A[r] - G_i D[r]`` over the candidates ``cand`` (``c = cand.shape[0]`` of them).

    ``u`` (``m + 1`` entries), ``v``, ``minv``, ``p``, ``way``, ``used`` (``c + 1`` each; ``used``
    any integer or bool array) are work arrays; ``at`` gets ``m`` entries. Returns False when a
    search step found no finite reduced cost (a non-finite score or gain): the search then stops
    instead of looping forever, and ``at`` is meaningless.
    """
    c = cand.shape[0]
    m = A.shape[0]
    for j in range(c + 1):  # 1-based potentials: u over positions, v over candidates
        v[j] = 0.0
        p[j] = 0  # p[j] = position (1-based) holding candidate j, 0 = none
        way[j] = 0
    for i in range(m + 1):
        u[i] = 0.0
    for i in range(1, m + 1):
        p[0] = i
        j0 = 0
        for j in range(c + 1):
            minv[j] = math.inf
            used[j] = 0
        while True:
            used[j0] = 1
            i0 = p[j0]
            a0 = A[i0 - 1]
            d0 = D[i0 - 1]
            delta = math.inf
            j1 = 0
            for j in range(1, c + 1):
                if used[j] == 0:
                    row = cand[j - 1]
                    cur = -(s[row] * a0 - gain[row] * d0) - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(c + 1):
                if used[j] != 0:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            if j1 == 0:  # no finite reduced cost: inf/NaN input; stop rather than spin
                return False
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    for j in range(1, c + 1):
        if p[j] != 0:
            at[p[j] - 1] = j - 1
    return True


@njit(cache=True)
def assignment_loss(s, gain, cand, at, star, A, D):
    """``(loss, scale)``: ``sum_r (s_hat - s_star) A[r] - (G_hat - G_star) D[r]`` of the assignment
    (rows ``cand[at[r]]``) against the ideal order ``star``, and the magnitude it is compared with
    (``loss <= 1e-12 scale``: ``pi*`` attains the max, zero loss and subgradient)."""
    loss = 0.0
    scale = 1.0
    for r in range(A.shape[0]):
        hat = cand[at[r]]
        st = star[r]
        loss += (s[hat] - s[st]) * A[r] - (gain[hat] - gain[st]) * D[r]
        scale += (abs(s[hat]) + abs(s[st])) * A[r] + (gain[hat] + gain[st]) * D[r]
    return loss, scale


@njit(cache=True)
def position_weights(k, m, A, D):
    """``A[r] = k - r`` and ``D[r] = 1 / log2(2 + r)`` for the positions ``r < m``."""
    for r in range(m):
        A[r] = float(k - r)
        D[r] = 1.0 / math.log2(2.0 + r)
