"""Verifiers that act on their process instead of answering (issue 45): each is a ``specproof check``
target in the supervision tests, next to :mod:`cli_targets`'s misbehaving verifiers."""

import os
import signal
import threading
import time

from specproof.impls import canonical_ratio_race


def exits_0(draft_probs, target_probs, draft_token_ids, generator):
    os._exit(0)


def exits_3(draft_probs, target_probs, draft_token_ids, generator):
    os._exit(3)


def exits_on_a_thread(draft_probs, target_probs, draft_token_ids, generator):
    worker = threading.Thread(target=os._exit, args=(0,), daemon=True)
    worker.start()
    worker.join()
    time.sleep(5)  # os._exit ends the process before this returns
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def kills_itself(draft_probs, target_probs, draft_token_ids, generator):
    os.kill(os.getpid(), signal.SIGKILL)


def leaves_a_thread(draft_probs, target_probs, draft_token_ids, generator):
    if not any(t.name == "lingering" for t in threading.enumerate()):
        threading.Thread(target=time.sleep, args=(3600,), name="lingering").start()
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def changes_directory(draft_probs, target_probs, draft_token_ids, generator):
    os.chdir("/")
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)


def hangs_deaf(draft_probs, target_probs, draft_token_ids, generator):
    """Swallows every interrupt (also the time limit's)."""
    end = time.monotonic() + 3600
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except BaseException:
            pass


def sparse(draft_probs, target_probs, draft_token_ids, generator):
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator).to_sparse()


def one_second_a_call(draft_probs, target_probs, draft_token_ids, generator):
    time.sleep(1.0)
    return canonical_ratio_race(draft_probs, target_probs, draft_token_ids, generator)
