import os

# Tests see fused plans deterministically (compiled before the first call returns) and fuse even their small
# arrays; test_fuse.py checks the defaults (background compilation, the size threshold) explicitly.
os.environ.setdefault("MIXNET_COMPILE_BACKGROUND", "0")
os.environ.setdefault("MIXNET_FUSE_MIN_SIZE", "1")

import numpy as np  # noqa: E402
import pytest
from hypothesis import HealthCheck, settings

# A fixed example budget, derandomized, so the suite is fast and CI is reproducible.
settings.register_profile("ci", max_examples=6, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("MIXNET_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _seeded():
    import mixnet as mx
    np.random.seed(0)
    mx.random.seed(0)
    yield


@pytest.fixture(autouse=True, scope="session")
def _kernel_cache_in_tmp(tmp_path_factory):
    """Generated kernels (fusion) go to a temporary directory, never the user's ~/.cache."""
    from mixnet.codegen import cache
    previous = cache.set_cache_dir(tmp_path_factory.mktemp("mixnet-kernels"))
    yield
    cache.set_cache_dir(previous)
