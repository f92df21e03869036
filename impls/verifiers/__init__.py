"""Runtime-style verifiers under test: canonical, block, greedy, multi-draft, compiled, white-box.

Layer: impls. Never imports the harness.
"""
