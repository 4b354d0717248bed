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


# MIXNET_TEST_CONTEXT=gpu runs every test with mx.gpu(0) as the default device (arrays made without a ctx land on
# the GPU), so the suite written for the CPU doubles as a GPU check on a machine that has one. Tests that name
# mx.cpu() stay on the CPU. Without a GPU the run stops at once with the reason, rather than skipping silently.
# MIXNET_TEST_CONTEXT=cpu1 does the same with mx.cpu(1), a second device on any machine: a test that assumes the
# default device is cpu(0) fails there as it would on a GPU, so such tests can be found and fixed without one.
TEST_CONTEXT = os.environ.get("MIXNET_TEST_CONTEXT", "cpu")


def pytest_configure(config):
    if TEST_CONTEXT not in ("cpu", "cpu1", "gpu"):
        raise pytest.UsageError(f"MIXNET_TEST_CONTEXT must be 'cpu', 'cpu1' or 'gpu', got {TEST_CONTEXT!r}")
    if TEST_CONTEXT == "gpu":
        import mixnet as mx
        if mx.context.num_gpus() == 0:
            raise pytest.UsageError("MIXNET_TEST_CONTEXT=gpu, but cupy finds no GPU (mx.context.num_gpus() == 0)")


@pytest.fixture(autouse=True)
def _default_context():
    if TEST_CONTEXT == "cpu":
        yield
        return
    import mixnet as mx
    with mx.gpu(0) if TEST_CONTEXT == "gpu" else mx.cpu(1):
        yield


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
