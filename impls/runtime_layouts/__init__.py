"""The canonical rule written in each runtime's own verifier layout, and each runtime's historic bugs.

One module per runtime (:mod:`.vllm_v1`, :mod:`.vllm_v0`, :mod:`.flashinfer`, :mod:`.transformers`,
:mod:`.sglang_tree`): a real implementation of canonical speculative sampling with the runtime's
signature, tensor layout, id dtype, output conventions and randomness, plus mutants that reproduce a
bug the runtime shipped. They are written in this project from the public descriptions of those
runtimes (never copied) and reach the harness only through :mod:`specproof.impls.adapters`, so the
adapters are tested in CI without the runtimes installed. :mod:`.records` registers them.
"""
