"""What is claimed and proved: the rule catalogue, the theorems, user rules."""
