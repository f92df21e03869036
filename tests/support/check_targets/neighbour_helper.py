"""Imported by ``uses_neighbour.py`` as a plain module: works only if the target's folder is on sys.path."""
from specproof.impls import canonical_ratio_race as verify_impl
