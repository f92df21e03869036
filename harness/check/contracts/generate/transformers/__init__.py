"""The generate contract on tiny seeded transformers models: the suite, its derived band, the probe."""
