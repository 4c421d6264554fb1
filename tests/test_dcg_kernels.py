"""customobj._dcg_kernels: the DCG discount and ideal DCG every kernel module shares."""
import numpy as np

from customobj import _dcg_kernels as D
from customobj import _metric_kernels
from customobj.objectives import _lambdarank_kernels as LK


def test_discount_table_is_one_over_log2_of_rank_plus_one_up_to_k():
    d = D.discount_table(6, 4)
    np.testing.assert_array_equal(d[:4], 1.0 / np.log2(np.arange(4) + 2.0))
    assert d.tolist()[4:] == [0.0, 0.0] and d[0] == 1.0
    assert D.discount_table(0, 3).tolist() == [0.0]  # never an empty table
    assert D.position_discount(2) == 0.5


def test_ideal_dcg_sorts_gains_descending_and_cuts_at_k():
    gains = np.array([0.0, 3.0, 1.0, 7.0, 0.0])
    disc = D.discount_table(5, 5)
    want = 7.0 * disc[0] + 3.0 * disc[1] + 1.0 * disc[2]
    assert D.ideal_dcg_query(gains, 0, 5, disc, 10) == want
    assert D.ideal_dcg_query(gains, 0, 5, disc, 1) == 7.0
    assert D.ideal_dcg_query(gains, 2, 4, disc, 10) == 7.0 + disc[1]  # rows 2..3 only


def test_every_kernel_module_uses_the_shared_functions():
    assert _metric_kernels.ideal_dcg_query is D.ideal_dcg_query
    assert LK.discount_table is D.discount_table
    ptr = np.array([0, 3, 5])
    gains = np.array([1.0, 3.0, 0.0, 7.0, 1.0])
    disc = D.discount_table(3, 2)
    got = LK.ideal_dcg(gains, ptr, disc)
    assert got.tolist() == [D.ideal_dcg_query(gains, 0, 3, disc, 2), D.ideal_dcg_query(gains, 3, 5, disc, 2)]
