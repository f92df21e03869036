"""The proving engine: obligations, solvers, counterexample search, every-size proofs, results and the one verdict function."""
