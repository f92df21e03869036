"""Shared test configuration: hypothesis profiles, the gpu marker's skip, and one local Ray for the
``ray``-marked tests."""

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


@pytest.fixture(scope="session")
def ray_module():
    """``ray``, for the ``ray``-marked tests.  Without it they skip on a developer's machine (the extra is
    optional) and fail in CI (``CI`` set), which installs ``[ray]``: a CI run never passes them unseen."""
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed, but CI installs it: the README test command's extras "
                        "must include ray (pip install -e '.[test,transformers,ray]')")
        pytest.skip("Ray is not installed (pip install specproof[ray])")
    return ray


@pytest.fixture(scope="session")
def local_ray(tmp_path_factory, ray_module):
    """One local Ray on 2 CPUs for every Ray test, its workers importing what the tests import (this
    process's sys.path as PYTHONPATH); the dying test verifiers' markers are named in its environment."""
    ray = ray_module
    from specproof.harness.check.scale.ray_start import start_ray

    where = tmp_path_factory.mktemp("ray")
    os.environ["SPECPROOF_RAY_MARKER"] = str(where / "died")  # workers inherit them
    os.environ["SPECPROOF_RAY_REPORT_MARKER"] = str(where / "report-died")
    if ray.is_initialized():
        ray.shutdown()
    ray, _ = start_ray(None, 2, python_path=True)
    yield ray
    ray.shutdown()
