"""The statistics every contract shares: the engine (allocation, anytime-valid tests), e-processes, power."""
