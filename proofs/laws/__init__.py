"""Verifier rules and the laws they imply, each written once against the arithmetic interface."""
