"""Run the impls suite on one intra-op thread.

The suite pushes many small tensors (40,000 x 3 x 4, or [1, K, V] rows in the transformers adapter)
through torch; on a loaded 2-core machine the OpenMP hand-off of each op costs milliseconds (a
[1, 3, 7] softmax: ~10 ms on two threads, ~1 us on one), which made the suite ~5x slower. None of
the ops tested splits a row across threads, so results do not depend on the thread count.
"""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_intra_op_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
