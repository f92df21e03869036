"""Adapters that wrap other runtimes' verifiers in specproof's contracts.

Layer: impls. Never imports the harness.
"""
