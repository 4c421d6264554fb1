"""customobj/objectives/_lambdarank_records.py: every scratch channel has its own row, the kernels
read the scratch only through the channel names, and the codes are dense (the drivers' own checks
of unknown codes: test_objectives_lambdarank_kernels.py)."""
import inspect
import re

import numpy as np

from customobj.objectives import _lambdarank_grades, _lambdarank_kernels, _lambdarank_pass
from customobj.objectives import _lambdarank_records as R


def test_channels_are_distinct_rows_of_the_scratch():
    assert sorted(int(c) for c in R.Channel) == list(range(R.N_CHANNELS))
    assert sorted(int(c) for c in R.IntChannel) == list(range(len(R.IntChannel)))
    assert R.IntChannel.OTHERS == max(R.IntChannel)  # the grade walk's lists: the last MAX_GRADES rows
    assert R.N_INT_CHANNELS == R.IntChannel.OTHERS + R.MAX_GRADES
    F, I = R.block_scratch_arrays(5)
    assert F.shape == (R.N_CHANNELS + R.LOSS_TERMS * R.LOSS_ROWS, 5 + R.LOSS_LANES) and F.dtype == np.float64
    terms = (R.TERM_COST, R.TERM_LAMBDA2, R.TERM_LAMBDA, R.TERM_HESS)  # GRAD_LOSS's term rows: disjoint sets
    assert sorted(terms) == [k * R.LOSS_ROWS for k in range(R.LOSS_TERMS)]
    assert I.shape == (R.N_INT_CHANNELS, 5) and I.dtype == np.int64


def test_kernels_index_the_scratch_only_by_channel_name():
    for module in (_lambdarank_pass, _lambdarank_kernels, _lambdarank_grades):
        src = inspect.getsource(module)
        assert not re.search(r"\b[FI]\[\s*-?\d", src), module.__name__  # e.g. F[3] or I[1]
        assert re.search(r"\bF\[Channel\.", src) or module is _lambdarank_kernels


def test_codes_are_distinct_and_dense():
    for codes in (R.Metric, R.Mode):
        assert sorted(int(c) for c in codes) == list(range(len(codes)))


def test_records_have_the_fields_the_kernels_read():
    assert R.Query._fields == ("n", "qn", "kk", "lim", "at")
    assert {"scores", "ptr", "qnorm", "metric", "k", "trunc"} <= set(R.PassInputs._fields)
    assert R.PassOutputs._fields == ("grad", "hess", "pair_i", "pair_j", "pair_c")
