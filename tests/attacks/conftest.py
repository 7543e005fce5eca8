"""Attack tests train many tiny models; run them on one thread."""

import pytest


@pytest.fixture(scope="module", autouse=True)
def _single_thread(one_thread):
    """The models here are tiny: every module runs on one thread (``one_thread``)."""
