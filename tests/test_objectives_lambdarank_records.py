"""customobj/objectives/_lambdarank_records.py: every scratch channel has its own row, the scratch
record names each row by its channel, and the codes are the ones the drivers accept."""
import numpy as np

from customobj.objectives import _lambdarank_records as R


def test_channels_are_distinct_rows_of_the_scratch():
    assert sorted(int(c) for c in R.Channel) == list(range(R.N_CHANNELS))
    assert sorted(int(c) for c in R.IntChannel) == list(range(R.N_INT_CHANNELS))
    F, I = R.block_scratch_arrays(5)
    assert F.shape == (R.N_CHANNELS, 5) and I.shape == (R.N_INT_CHANNELS, 5) and I.dtype == np.int64


def test_scratch_views_name_each_row_by_its_channel():
    F, I = R.block_scratch_arrays(3)
    F[:] = np.arange(R.N_CHANNELS)[:, None]
    I[:] = np.arange(R.N_INT_CHANNELS)[:, None]
    sc = R.scratch_views(F, I)
    floats = dict(g=R.Channel.GAIN, s=R.Channel.SCORE, w=R.Channel.WEIGHT, P=R.Channel.P, A=R.Channel.A,
                  C=R.Channel.C, S=R.Channel.S, e=R.Channel.EXP, lg=R.Channel.LAMBDA_G, lh=R.Channel.LAMBDA_H,
                  lc=R.Channel.LOCAL_C, neg=R.Channel.NEG)
    ints = dict(order=R.IntChannel.ORDER, li=R.IntChannel.LOCAL_I, lj=R.IntChannel.LOCAL_J)
    assert set(floats) | set(ints) == set(R.Scratch._fields)
    for name, ch in floats.items():
        assert np.all(getattr(sc, name) == int(ch)), name
    for name, ch in ints.items():
        assert np.all(getattr(sc, name) == int(ch)), name
    sc.lg[:] = -1.0  # views, not copies: the kernels write through them
    assert np.all(F[R.Channel.LAMBDA_G] == -1.0)


def test_codes_are_distinct_and_dense():
    for codes in (R.Metric, R.Mode):
        assert sorted(int(c) for c in codes) == list(range(len(codes)))
