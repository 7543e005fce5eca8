"""Attack tests train many tiny models; run them on one thread."""

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The models here are tiny: on a shared 2-core machine thread hand-offs cost more than the
    arithmetic (a fit runs several times faster on one thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
