"""The Coq development: built once per session; without coqc the tests fail in CI (env ``CI`` or
``SPECPROOF_REQUIRE_COQ`` set, as ``.ci/run`` does) and are skipped on a developer machine, saying why."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from specproof.proofs.claims.kernel_checked import COQ_DIR


@pytest.fixture(scope="session")
def coq_development() -> str:
    """The path of the built development (``make -C proofs/coq``)."""
    if shutil.which("coqc") is None:
        why = "coqc is not installed (apt-get install coq libcoq-mathcomp-ssreflect libcoq-mathcomp-algebra)"
        if os.environ.get("CI") or os.environ.get("SPECPROOF_REQUIRE_COQ"):
            pytest.fail(f"{why}; CI must build the Coq development")
        pytest.skip(why)
    run = subprocess.run(["make", "-C", str(COQ_DIR)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return str(COQ_DIR)
