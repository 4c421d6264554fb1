"""customobj.adapters._score_offsets: the owner of LineSearch's per-Dataset score corrections."""
import gc

import numpy as np

from customobj.adapters._score_offsets import SCORE_OFFSETS, ScoreOffsets


class _Dataset:  # stands for a lightgbm.Dataset: any weak-referenceable object
    pass


def test_add_accumulates_a_copy_and_apply_adds_it():
    offsets, ds, delta = ScoreOffsets(), _Dataset(), np.array([1.0, -2.0])
    assert offsets.get(ds) is None
    preds = np.array([0.5, 0.5])
    assert offsets.apply(ds, preds) is preds  # nothing recorded: the same array, no copy
    offsets.add(ds, delta)
    delta[0] = 100.0  # the caller's array is not kept
    offsets.add(ds, np.array([1.0, 1.0]))
    assert offsets.get(ds).tolist() == [2.0, -1.0]
    assert offsets.apply(ds, preds).tolist() == [2.5, -0.5] and preds.tolist() == [0.5, 0.5]


def test_an_offset_leaves_with_its_dataset():
    offsets, ds = ScoreOffsets(), _Dataset()
    offsets.add(ds, np.zeros(3))
    del ds
    gc.collect()
    assert len(offsets._by_dataset) == 0


def test_the_adapters_share_one_registry():
    from customobj.adapters import callbacks, lightgbm, metrics

    assert callbacks.SCORE_OFFSETS is lightgbm.SCORE_OFFSETS is metrics.SCORE_OFFSETS is SCORE_OFFSETS
