"""Event families: the one record every contract's events are written in, and the row keys they share."""
