"""Command-line front-ends: the main parser (:mod:`.parser`) and one module per command.

Layer: cli (the top). May import everything below it: report, bench, drift, check, exact, files, proofs,
impls. Nothing imports the cli except the console script and tests.
"""

from specproof.harness.cli.parser import build_parser, main

__all__ = ["main", "build_parser"]
