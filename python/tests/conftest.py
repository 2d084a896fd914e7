import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    # One seed per test, printed on failure by the test id: reruns see the same inputs.
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)
