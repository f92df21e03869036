"""The check's ATen-level interception: what a verifier's torch ops are seen to do, and what is done to them.

* :mod:`.dispatch` - the one dispatch-mode base of both (torch's dynamo loaded only when something else
  loads it);
* :mod:`.precision` - the precision probe: the dtypes a verifier draws and rounds in, and the null band
  derived from them;
* :mod:`.injection` - the RNG edge injection: values the real generator produces at its edges, written
  into a known fraction of the verifier's draws, and the certain findings they expose.
"""
