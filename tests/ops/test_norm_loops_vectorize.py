"""The float32 normalization loops of mixnet/ops/_numba_kernels.py compile to packed SIMD (ymm registers): their
speed against numpy rests on it (a scalar float32 exp or a serial float64 sum is 3-5x slower). Each helper is
compiled afresh here (the process may have loaded the loops from Numba's cache, which keeps no assembly) with
its own options, on the argument types the loops pass."""
import re

import numpy as np
import pytest
from numba import njit, types

from mixnet.ops import _numba_kernels as nk

ROW = np.ones(40, np.float32)
F32 = np.float32(0.5)
CASES = {
    "_sum": (ROW,), "_dot": (ROW, ROW), "_sum_sq_dev": (ROW, 0.5), "_ln_row_sums": (ROW, ROW, ROW, 0.5),
    "_exp_sum": (ROW, F32, ROW.copy()), "_exp_sum_only": (ROW, F32), "_exp_inplace": (ROW.copy(),),
    "_exp_into": (ROW, ROW.copy()), "_scale": (ROW.copy(), F32), "_shift_by_max": (ROW, ROW.copy(), F32),
    "_log_shift": (ROW, F32, F32, True, F32, F32, ROW.copy()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_row_helpers_vectorize(name):
    loop = getattr(nk, name)
    options = {k: v for k, v in loop.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = njit(**options)(loop.py_func)
    args = CASES[name]
    fresh(*args)
    sig = [s for s in fresh.signatures if s[0] == types.Array(types.float32, 1, "C")][0]
    asm = fresh.inspect_asm(sig)
    packed = re.findall(r"\bv\w+p[sd]\s+[^\n]*%[yz]mm", asm)
    assert len(packed) >= 8, f"{name} does not vectorize ({len(packed)} packed instructions)"
