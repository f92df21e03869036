"""Reports: the task plan, running it, analysis, rendering, plots, the results schema and comparison.

Layer: report. May import check, drift, exact, files, proofs, impls.
"""
