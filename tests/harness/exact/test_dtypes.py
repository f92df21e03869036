"""The one dtype table: every other dtype list equals it (impls may not import the harness)."""

from __future__ import annotations

import math
import subprocess
import sys

import torch

from specproof.harness.exact import convert, dtypes
from specproof.harness.exact.dtypes import DTYPE_NAMES, DTYPES, HALF_DTYPES, TORCH_DTYPES, torch_dtype


def test_old_import_paths_are_the_table():
    from specproof.harness import DTYPES as exported
    from specproof.harness.check.testing.strategies import TORCH_DTYPES as strategies_dtypes

    assert convert.DTYPES is DTYPES and exported is DTYPES and convert.dtype_name is dtypes.dtype_name
    assert strategies_dtypes == TORCH_DTYPES


def test_table_facts_match_torch():
    assert DTYPE_NAMES == ("float16", "bfloat16", "float32", "float64") and HALF_DTYPES == ("float16", "bfloat16")
    for name, info in DTYPES.items():
        finfo = torch.finfo(TORCH_DTYPES[name])
        assert torch_dtype(name) is getattr(torch, name)
        assert float(info.eps) == finfo.eps and float(info.smallest_subnormal) == finfo.smallest_normal * finfo.eps
        assert math.ldexp(2 - float(info.eps), info.max_exponent) == finfo.max


def test_impls_literal_equals_the_table():
    from specproof.impls.contract import SUPPORTED_DTYPES

    assert SUPPORTED_DTYPES == tuple(TORCH_DTYPES[n] for n in DTYPE_NAMES)


def test_importing_the_table_does_not_import_torch():
    code = "import sys, specproof.harness.exact.dtypes as d; d.dtype_name('fp16'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
