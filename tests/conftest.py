"""Shared test configuration: hypothesis profiles and the gpu marker's skip."""

import os
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

SUPPORT = Path(__file__).parent / "support"
"""Test helpers shared across folders (targets, input builders, the second statistical engine)."""
sys.path.insert(0, str(SUPPORT))

settings.register_profile("default", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (gpu marker); none is present")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
