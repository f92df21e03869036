"""A check's rows on many workers: Ray, started in the background, and the sharded streams."""
