"""customobj.adapters._score_offsets: each Dataset's own record (score offsets, the objective that
trained on it, ExactLeaves' couplings request, the claiming booster); no module-level registry."""
import gc
import weakref

import numpy as np

from customobj import adapters  # before lightgbm: sets the OpenMP wait policy
from customobj.adapters._score_offsets import DatasetRecord, apply_offset, record_of

import lightgbm as lgb

import customobj


class _Dataset:  # stands for a lightgbm.Dataset: any object with writable attributes
    pass


def test_add_accumulates_a_copy_and_apply_adds_it():
    ds, delta = _Dataset(), np.array([1.0, -2.0])
    assert record_of(ds) is None
    preds = np.array([0.5, 0.5])
    assert apply_offset(ds, preds) is preds  # nothing recorded: the same array, no copy
    record = record_of(ds, create=True)
    assert isinstance(record, DatasetRecord) and record_of(ds) is record
    assert apply_offset(ds, preds) is preds  # a record without an offset: still no copy
    record.add_offset(delta)
    delta[0] = 100.0  # the caller's array is not kept
    record.add_offset(np.array([1.0, 1.0]))
    assert record.offset.tolist() == [2.0, -1.0]
    assert apply_offset(ds, preds).tolist() == [2.5, -0.5] and preds.tolist() == [0.5, 0.5]


def test_a_record_leaves_with_its_dataset():
    ds = _Dataset()
    record_of(ds, create=True).add_offset(np.zeros(3))
    ref = weakref.ref(record_of(ds).offset)
    del ds
    gc.collect()
    assert ref() is None


def test_no_module_level_registry_is_left():
    """Issue 24.6: the state lives on the Datasets, not in module globals of the adapters."""
    from customobj.adapters import _score_offsets, callbacks, exact_leaves, lightgbm, metrics

    for module in (_score_offsets, callbacks, exact_leaves, lightgbm, metrics):
        for name in ("SCORE_OFFSETS", "_SCORE_OFFSETS", "_COUPLINGS", "_TRAINED_BY"):
            assert not hasattr(module, name), (module.__name__, name)


def test_the_objective_notes_itself_on_its_training_dataset():
    d = customobj.data.synthetic(10, 8, 3, seed=0)
    obj = customobj.RankNet()
    data = lgb.Dataset(d.X, d.y, group=d.group)
    lgb.train({"objective": adapters.lightgbm_objective(obj), "verbose": -1}, data, 1)
    record = record_of(data)
    assert record.trained_by is obj and record.offset is None and record.couplings is None
