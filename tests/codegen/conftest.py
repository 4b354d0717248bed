import pytest

numba = pytest.importorskip("numba")


@pytest.fixture(scope="session")
def kernel_dir(tmp_path_factory):
    """Kernels of the whole session go to one temporary cache directory (never ~/.cache)."""
    from mixnet.codegen import cache
    path = tmp_path_factory.mktemp("kernels")
    previous = cache.set_cache_dir(path)
    yield path
    cache.set_cache_dir(previous)
