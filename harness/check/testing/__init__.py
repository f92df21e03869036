"""The check inside a test suite: the pytest plugin, ``assert_lossless``, hypothesis strategies."""
