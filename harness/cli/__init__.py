"""Command-line front-ends: the main parser (:mod:`.parser`) and one module per command."""

from specproof.harness.cli.parser import build_parser, main

__all__ = ["main", "build_parser"]
