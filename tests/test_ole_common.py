"""customobj.ole.common: the criteria by name and code, and the split-search result read by name."""
import numpy as np
import pytest

from customobj.ole import common
from customobj.ole.common import (CRITERIA, KERNEL, NO_SPLIT, OLE, PAIR_CRITERIA, SPLIT_SIZE, WSE, ChildSums,
                                  SplitInfo)
from customobj.ole.params import check_params
from customobj.ole.splitting import CRITERIA as SPLITTING_CRITERIA

SLOTS = ("SPLIT_GAIN", "SPLIT_FEATURE", "SPLIT_BIN", "SPLIT_NAN_LEFT", "LEFT_G", "LEFT_H", "LEFT_N", "LEFT_C",
         "RIGHT_G", "RIGHT_H", "RIGHT_N", "RIGHT_C")


def test_split_slots_are_distinct_and_fill_the_result_array():
    assert sorted(getattr(common, name) for name in SLOTS) == list(range(SPLIT_SIZE))


def test_split_info_reads_every_slot_by_name():
    res = np.arange(SPLIT_SIZE, dtype=np.float64) + 0.5
    res[common.SPLIT_FEATURE], res[common.SPLIT_BIN], res[common.SPLIT_NAN_LEFT] = 3.0, 7.0, 1.0
    s = SplitInfo.from_array(res)
    assert (s.gain, s.feature, s.bin, s.nan_left) == (res[common.SPLIT_GAIN], 3, 7, True)
    assert s.left == ChildSums(res[common.LEFT_G], res[common.LEFT_H], res[common.LEFT_N], res[common.LEFT_C])
    assert s.right == ChildSums(res[common.RIGHT_G], res[common.RIGHT_H], res[common.RIGHT_N], res[common.RIGHT_C])
    res[common.SPLIT_NAN_LEFT] = 0.0
    assert SplitInfo.from_array(res).nan_left is False
    assert type(s.feature) is int and type(s.bin) is int


def test_no_split_has_no_gain_and_no_feature():
    assert NO_SPLIT.gain == 0.0 and NO_SPLIT.feature == -1
    assert NO_SPLIT.left == NO_SPLIT.right == ChildSums(0.0, 0.0, 0.0, 0.0)


def test_criteria_have_one_home_and_distinct_codes():
    assert SPLITTING_CRITERIA is CRITERIA
    assert len(set(CRITERIA.values())) == len(CRITERIA)
    assert set(PAIR_CRITERIA) == {name for name in CRITERIA if name.startswith("ole")}


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_every_ole_variant_searches_with_the_ole_score(name):
    code = CRITERIA[name]
    assert KERNEL[code] == (OLE if name in PAIR_CRITERIA else code)
    assert KERNEL[CRITERIA["wse"]] == WSE


def test_every_criterion_name_is_accepted_by_treebooster():
    from customobj.ole import TreeBooster
    for name in CRITERIA:
        assert check_params({**TreeBooster().get_params(), "criterion": name})["criterion"] == name
