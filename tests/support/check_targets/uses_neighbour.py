"""A ``specproof check`` target importing a module that lives beside it."""
from neighbour_helper import verify_impl


def verify(draft_probs, target_probs, draft_token_ids, generator):
    return verify_impl(draft_probs, target_probs, draft_token_ids, generator)
