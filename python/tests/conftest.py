import numpy as np
import pytest


@pytest.fixture
def rng(request):
    # One seed per test, printed on failure by the test id: reruns see the same inputs.
    seed = abs(hash(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)
