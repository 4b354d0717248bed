"""mx.lr_scheduler against MXNet 1.9.1: every expected sequence below is what MXNet 1.9.1's scheduler returned
for the same constructor arguments and the same sequence of num_update calls (rounded to 10 digits)."""
import pytest

import mixnet.lr_scheduler as L

SEQUENCES = [  # (scheduler, num_update calls in order, MXNet 1.9.1 values)
    ('factor', lambda: L.FactorScheduler(step=5, factor=0.5, base_lr=1.0), list(range(30)),
     [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125,
      0.125, 0.125, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625, 0.03125, 0.03125, 0.03125, 0.03125]),
    ('factor_stop', lambda: L.FactorScheduler(step=2, factor=0.1, stop_factor_lr=1e-4, base_lr=1.0), list(range(30)),
     [1.0, 1.0, 1.0, 0.1, 0.1, 0.01, 0.01, 0.001, 0.001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001,
      0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001, 0.0001,
      0.0001]),
    ('factor_warm',
     lambda: L.FactorScheduler(step=5, factor=0.9, base_lr=0.5, warmup_steps=7, warmup_begin_lr=0.1),
     list(range(30)),
     [0.1, 0.1571428571, 0.2142857143, 0.2714285714, 0.3285714286, 0.3857142857, 0.4428571429, 0.45, 0.45, 0.45,
      0.45, 0.405, 0.405, 0.405, 0.405, 0.405, 0.3645, 0.3645, 0.3645, 0.3645, 0.3645, 0.32805, 0.32805, 0.32805,
      0.32805, 0.32805, 0.295245, 0.295245, 0.295245, 0.295245]),
    ('factor_warm_const',
     lambda: L.FactorScheduler(step=5, factor=0.9, base_lr=0.5, warmup_steps=7, warmup_begin_lr=0.1,
                               warmup_mode='constant'),
     list(range(30)),
     [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.45, 0.45, 0.45, 0.45, 0.405, 0.405, 0.405, 0.405, 0.405, 0.3645, 0.3645,
      0.3645, 0.3645, 0.3645, 0.32805, 0.32805, 0.32805, 0.32805, 0.32805, 0.295245, 0.295245, 0.295245, 0.295245]),
    ('factor_jump', lambda: L.FactorScheduler(step=3, factor=0.5, base_lr=1.0), [0, 100, 4, 50, 200],
     [1.0, 1e-08, 1e-08, 1e-08, 1e-08]),
    ('doc', lambda: L.FactorScheduler(step=100, factor=0.5, base_lr=0.1, warmup_steps=10), [0, 5, 10, 101, 201],
     [0.0, 0.05, 0.1, 0.05, 0.025]),
    ('multi', lambda: L.MultiFactorScheduler(step=[3, 7, 12], factor=0.5, base_lr=2.0), list(range(30)),
     [2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25,
      0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]),
    ('multi_warm',
     lambda: L.MultiFactorScheduler(step=[5, 9], factor=0.1, base_lr=1.0, warmup_steps=4),
     list(range(30)),
     [0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01,
      0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01]),
    ('multi_jump', lambda: L.MultiFactorScheduler(step=[3, 7, 12], factor=0.5, base_lr=2.0), [0, 20, 1, 5],
     [2.0, 0.25, 0.25, 0.25]),
    ('poly', lambda: L.PolyScheduler(max_update=20, base_lr=1.0, pwr=2), list(range(30)),
     [1.0, 0.9025, 0.81, 0.7225, 0.64, 0.5625, 0.49, 0.4225, 0.36, 0.3025, 0.25, 0.2025, 0.16, 0.1225, 0.09,
      0.0625, 0.04, 0.0225, 0.01, 0.0025, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    ('poly_warm',
     lambda: L.PolyScheduler(max_update=20, base_lr=1.0, pwr=1.5, final_lr=0.1, warmup_steps=5, warmup_begin_lr=0.2),
     list(range(30)),
     [0.2, 0.36, 0.52, 0.68, 0.84, 1.0, 0.9115170978, 0.8261404823, 0.7439875775, 0.6651902335, 0.5898979486,
      0.5182822014, 0.4505424368, 0.3869146214, 0.3276839915, 0.2732050808, 0.2239354671, 0.1804984472,
      0.1438178046, 0.1154919334, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]),
    ('poly_back', lambda: L.PolyScheduler(max_update=10, base_lr=1.0), [5, 30, 3, 40],
     [0.25, 0.25, 0.49, 0.49]),
    ('cos', lambda: L.CosineScheduler(max_update=20, base_lr=1.0), list(range(30)),
     [1.0, 0.9938441703, 0.9755282581, 0.9455032621, 0.9045084972, 0.8535533906, 0.7938926261, 0.7269952499,
      0.6545084972, 0.5782172325, 0.5, 0.4217827675, 0.3454915028, 0.2730047501, 0.2061073739, 0.1464466094,
      0.0954915028, 0.0544967379, 0.0244717419, 0.0061558297, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    ('cos_warm',
     lambda: L.CosineScheduler(max_update=20, base_lr=1.0, final_lr=0.05, warmup_steps=6, warmup_begin_lr=0.0),
     list(range(30)),
     [0.0, 0.1666666667, 0.3333333333, 0.5, 0.6666666667, 0.8333333333, 1.0, 0.9880907583, 0.9529602123,
      0.8963699542, 0.8211576559, 0.7310947761, 0.6306974436, 0.525, 0.4193025564, 0.3189052239, 0.2288423441,
      0.1536300458, 0.0970397877, 0.0619092417, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05]),
]

@pytest.mark.parametrize("key, make, steps, expected", SEQUENCES, ids=[s[0] for s in SEQUENCES])
def test_sequences_match_mxnet(key, make, steps, expected):
    sched = make()
    assert [sched(i) for i in steps] == pytest.approx(expected, abs=1e-9)


def test_base_lr_overwritten_like_an_optimizer_does():
    # an Optimizer sets sched.base_lr = learning_rate; MXNet 1.9.1 keeps warmup's target and Poly/Cosine's
    # starting rate from the constructor
    s = L.FactorScheduler(step=2, factor=0.5, base_lr=1.0, warmup_steps=3)
    s.base_lr = 0.4
    assert [s(i) for i in range(10)] == pytest.approx(
        [0.0, 0.3333333333, 0.6666666667, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.025], abs=1e-9)
    s = L.CosineScheduler(max_update=10, base_lr=1.0)
    s.base_lr = 0.4
    assert [s(i) for i in range(12)] == pytest.approx(
        [1.0, 0.9755282581, 0.9045084972, 0.7938926261, 0.6545084972, 0.5, 0.3454915028, 0.2061073739,
         0.0954915028, 0.0244717419, 0.0, 0.0], abs=1e-9)


@pytest.mark.parametrize("make, err", [  # the exception types MXNet 1.9.1 raises
    (lambda: L.LRScheduler(warmup_steps=-1), ValueError),
    (lambda: L.LRScheduler(warmup_steps=2.0), AssertionError),
    (lambda: L.LRScheduler(warmup_mode="exp"), ValueError),
    (lambda: L.LRScheduler(base_lr=0.1, warmup_begin_lr=0.2), ValueError),
    (lambda: L.FactorScheduler(step=0), ValueError),
    (lambda: L.FactorScheduler(step=2, factor=1.5), ValueError),
    (lambda: L.MultiFactorScheduler(step=[3, 3]), ValueError),
    (lambda: L.MultiFactorScheduler(step=(3, 4)), AssertionError),
    (lambda: L.PolyScheduler(max_update=0), ValueError),
    (lambda: L.PolyScheduler(max_update=2.0), AssertionError),
    (lambda: L.CosineScheduler(max_update=-3), ValueError),
    (lambda: L.LRScheduler()(3), NotImplementedError),
])
def test_bad_arguments(make, err):
    with pytest.raises(err):
        make()


def test_attributes():
    s = L.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=1.0)
    s(3)
    assert (s.cur_step_ind, s.count, s.base_lr) == (1, 2, 0.5)
    s = L.PolyScheduler(max_update=10, base_lr=0.5, warmup_steps=4)
    assert (s.base_lr_orig, s.max_steps, s.power, s.warmup_final_lr) == (0.5, 6, 2, 0.5)
