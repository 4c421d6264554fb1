"""The OLE GPU histograms' layout on the host (:mod:`._histograms_kernels` launches by it): the features
packed into groups whose slots fit one block's shared memory, and a histogram's grid and block shape.
Pure numpy: nothing here runs on the card."""
from __future__ import annotations

import numpy as np

from ._launch import pow2_threads

__all__ = ["feature_groups", "launch_for", "launch_shape", "chunks_for", "CHUNK_UPDATES", "MAX_CHUNKS",
           "GROUP_COLUMNS", "MEMBER_COLUMNS", "SHARED_SLOTS"]

#: Slots of one block's shared histogram: 3 channels of two uint32 words each (one 64-bit integer:
#: sm_80 and sm_90 have no native 64-bit shared add, only a compare-and-swap loop), 48,000 bytes
#: (the default limit).
SHARED_SLOTS = 2000
#: (item, feature) updates per block of a histogram (its chunk), and most chunks: fewer blocks
#: merge fewer shared histograms; the result does not depend on either.
CHUNK_UPDATES = 65536
MAX_CHUNKS = 1024
#: ``groups[g]`` = (first member, end member, local slots, in shared memory, first entry of ``slot_map``)
GROUP_COLUMNS = 5
#: ``members[m]`` = (feature, its first global slot, its NaN bin, its first local slot)
MEMBER_COLUMNS = 4


def feature_groups(offsets: np.ndarray, n_bins: np.ndarray, feats: np.ndarray,
                   capacity: int = SHARED_SLOTS) -> tuple:
    """``(groups, members, slot_map)`` (int64) packing ``feats`` (in order) into groups of at most
    ``capacity`` slots; ``slot_map[groups[g, 4] + s]`` is local slot ``s``'s global slot.

    >>> g, m, smap = feature_groups(np.array([0, 3, 9, 12]), np.array([2, 5, 2]), np.arange(3), capacity=9)
    >>> g.tolist(), m[:, 3].tolist(), smap.tolist()
    ([[0, 2, 9, 1, 0], [2, 3, 3, 1, 9]], [0, 3, 0], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    """
    feats = np.asarray(feats, dtype=np.int64)
    members = np.zeros((feats.size, MEMBER_COLUMNS), dtype=np.int64)
    groups: list = []
    smap: list = []
    first, local = 0, 0
    for q, f in enumerate(feats):
        width = int(n_bins[f]) + 1
        if q > first and local + width > capacity:  # close the group before this feature
            groups.append((first, q, local, 1, len(smap) - local))
            first, local = q, 0
        members[q] = (f, offsets[f], n_bins[f], local)
        smap.extend(range(int(offsets[f]), int(offsets[f]) + width))
        local += width
    if feats.size:
        groups.append((first, feats.size, local, int(local <= capacity), len(smap) - local))
    # a lone feature wider than the capacity closed above is flagged too
    g = np.array(groups, dtype=np.int64).reshape(-1, GROUP_COLUMNS)
    g[:, 3] = g[:, 2] <= capacity
    return g, members, np.array(smap, dtype=np.int64)


def launch_for(n_items: int, groups: np.ndarray) -> tuple:
    """``((chunks, groups), threads)`` of a histogram over ``n_items`` rows or pairs."""
    return launch_shape(n_items, groups.shape[0], int((groups[:, 1] - groups[:, 0]).max()))


def launch_shape(n_items: int, n_groups: int, width: int) -> tuple:
    """:func:`launch_for` from the number of groups and the most features of one (``ole_fast``'s
    groups made on the device: bounds, the blocks of absent groups return at once)."""
    chunks = _chunks(n_items, width)
    threads = pow2_threads(-(-int(n_items) * int(width) // chunks))
    lanes = pow2_threads(int(width))  # features on the block's x axis, items on its y axis
    lanes = min(lanes, threads)
    return (chunks, max(int(n_groups), 1)), (lanes, threads // lanes)


def chunks_for(n_items: int, groups: np.ndarray) -> int:
    """Chunks (blocks per group) of a histogram over ``n_items`` rows or pairs: about
    ``CHUNK_UPDATES`` updates each, at least 1, at most ``MAX_CHUNKS``."""
    return _chunks(n_items, int((groups[:, 1] - groups[:, 0]).max()) if groups.shape[0] else 1)


def _chunks(n_items: int, width: int) -> int:
    return int(max(1, min(MAX_CHUNKS, -(-int(n_items) * int(width) // CHUNK_UPDATES))))
