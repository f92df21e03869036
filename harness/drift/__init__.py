"""White-box drift and the exact RNG-grid analysis."""
