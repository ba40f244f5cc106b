"""Scenario suites that need a fresh process: the CUDA driver is loaded once per process, so
each file here runs in its own interpreter, started by ``tests/python/test_cuda.py`` with
``OVSTAGE_TEST_SCENARIO`` naming the file's scenario and ``OVSTAGE_CUDA_LIBRARY`` pointing
at the driver to load (a missing one, or the fake driver of ``core/cuda/testdata``).

Run directly, without that environment, every test here is skipped.
"""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests of scenarios other than the one this process was started for."""
    scenario = os.environ.get("OVSTAGE_TEST_SCENARIO", "")
    for item in items:
        wanted = getattr(item.module, "SCENARIO", None)
        if wanted != scenario:
            item.add_marker(pytest.mark.skip(reason=f"scenario {wanted!r} runs in its own process"))
