"""Runtime-style verifiers under test: canonical, block, greedy, multi-draft, compiled, white-box."""
