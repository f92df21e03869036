"""The check's dispatch modes leave ``torch._dynamo`` unloaded until something else loads it, and use
torch's dynamo-disabled dispatch from then on."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from specproof.harness.check.intercept.dispatch import DispatchMode, _disabled_once_dynamo_loads


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_probing_and_injecting_a_verifier_does_not_import_dynamo():
    out = _fresh("""
        import sys, torch
        from specproof.harness.check.intercept.precision import observe
        from specproof.harness.check.intercept.injection import EdgeInjection
        seen, _ = observe(lambda: torch.rand(4).half() * 3)
        mode = EdgeInjection()
        with mode:
            torch.rand(3)
        print(seen.describe(), len(mode.records), "torch._dynamo" in sys.modules)
    """)
    assert out == "draws in float32; rounds in float16 1 False"


def test_once_dynamo_is_loaded_the_dispatch_runs_dynamo_disabled():
    out = _fresh("""
        import torch, torch._dynamo
        from specproof.harness.check.intercept.dispatch import DispatchMode
        calls = []
        class Count(DispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                calls.append(func)
                return func(*args, **(kwargs or {}))
        with Count():
            torch.ones(2) + 1
        raw = Count.__dict__["__torch_dispatch__"]
        print(len(calls) >= 2, raw.__wrapped__.__name__)
    """)
    assert out == "True __torch_dispatch__"


def test_a_subclass_dispatch_is_wrapped_once_and_keeps_its_name():
    class Mode(DispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    wrapped = Mode.__dict__["__torch_dispatch__"]
    assert wrapped.__name__ == "__torch_dispatch__" and not hasattr(wrapped.__wrapped__, "__wrapped__")
    with Mode():
        assert torch.equal(torch.ones(2) * 2, torch.full((2,), 2.0))


def test_the_lazy_wrapper_calls_the_plain_function_while_dynamo_is_unloaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch._dynamo", raising=False)
    seen = []
    wrapped = _disabled_once_dynamo_loads(lambda *a: seen.append(a) or "plain")
    assert wrapped(1, 2) == "plain" and seen == [(1, 2)]
