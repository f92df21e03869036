"""A ``specproof check`` target that calls sys.exit(0) when imported (must be exit 2, not a pass)."""
import sys

sys.exit(0)


def verify(draft_probs, target_probs, draft_token_ids, generator):
    return None
