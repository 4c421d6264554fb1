"""customobj.ole.common: the histogram channels and kernel statuses by name, and the split-search
result read by name (the criteria: tests/test_ole_criterion.py)."""
import numpy as np
import pytest

from customobj.ole import common
from customobj.ole.common import NO_SPLIT, SPLIT_SIZE, ChildSums, SplitInfo

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


@pytest.mark.parametrize("names, width", [(("HIST_G", "HIST_H", "HIST_COUNT"), "HIST_CHANNELS"),
                                          (("HIST_G", "HIST_H"), "GH_CHANNELS"),
                                          (("PH_HI", "PH_NANP", "PH_R"), "PH_CHANNELS")])
def test_histogram_channels_are_distinct_and_fill_their_width(names, width):
    assert sorted(getattr(common, name) for name in names) == list(range(getattr(common, width)))


def test_histograms_are_built_with_the_named_channels():
    """A row histogram's channels read by name: g, h and count sums; a pair histogram's R channel:
    each pair's coupling at both of its rows' bins."""
    from customobj.ole.histogram import build_row_hist_fm
    from customobj.ole.pairhist import build_pair_hist
    bins_fm = np.array([[0, 1, 1, 2]], dtype=np.uint8)  # one feature, 3 value bins + the NaN slot
    offsets, n_bins = np.array([0, 4]), np.array([3])
    grad, hess = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.25, 0.125, 1.0])
    hist = build_row_hist_fm(bins_fm, np.arange(4, dtype=np.int64), 0, 4, grad, hess, offsets, 4)
    np.testing.assert_array_equal(hist[:3, common.HIST_G], [1.0, 5.0, 4.0])
    np.testing.assert_array_equal(hist[:3, common.HIST_H], [0.5, 0.375, 1.0])
    np.testing.assert_array_equal(hist[:3, common.HIST_COUNT], [1.0, 2.0, 1.0])
    pi, pj, pc = np.array([0, 1]), np.array([3, 2]), np.array([0.5, 2.0])
    ph = build_pair_hist(bins_fm.T, pi, pj, pc, 0, 2, offsets, n_bins, 4)
    np.testing.assert_array_equal(ph[:3, common.PH_R], [0.5, 4.0, 0.5])  # row sums of couplings per bin
    np.testing.assert_array_equal(ph[:3, common.PH_HI], [0.0, 2.0, 0.5])  # at each pair's larger bin
    assert not ph[:, common.PH_NANP].any()  # no NaN rows


def test_the_kernel_statuses_have_one_home_shared_with_the_objectives():
    from customobj._kernel_status import KernelStatus

    assert len({KernelStatus.SPLIT_FOUND, KernelStatus.SPLIT_NONE, KernelStatus.UNKNOWN_CODE}) == 3
    assert KernelStatus.SPLIT_NONE is KernelStatus.OK  # a search that ran and found nothing
    assert not any(hasattr(common, n) for n in ("SPLIT_FOUND", "SPLIT_NONE", "UNKNOWN_CODE"))
