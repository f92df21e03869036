"""``CheckOptions``: every option of a check, validated once, for every contract.

The API (:func:`specproof.check`), the CLI, the pytest fixture, ``report``, ``campaign`` and the Ray
engine all build one :class:`CheckOptions` through :meth:`CheckOptions.build`, which refuses, naming
the argument and the fix: an unknown option; an option of another contract (``rule`` on a tree
check, ``siblings`` on a batched one: :data:`.contracts.CONTRACT_OPTIONS`); values out of range;
sizes no machine finishes (more than :data:`MAX_ROWS_PER_SCENARIO` rows per scenario, more than
:data:`MAX_NEW_TOKENS` new tokens); and options that exclude each other (``samples``, ``budget`` and
``time_budget``).  Nothing here imports torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Callable

from specproof.errors import SpecproofInputError
from specproof.proofs.laws.tree import SIBLING_MODES

from specproof.harness.check.contracts import CONTRACT_OPTIONS, Contract, get_contract
from specproof.harness.check.result import DEFAULT_MAX_DETECTABLE_TV, DEFAULT_TIMEOUT
from specproof.harness.exact.dtypes import dtype_name

__all__ = ["CheckOptions", "CI_MAX_DETECTABLE_TV", "MIN_ROWS", "MAX_ROWS_PER_SCENARIO", "MAX_NEW_TOKENS", "LEVEL_NAMES",
           "GENERATE_MODELS"]

MIN_ROWS = 64  # the fewest rows per scenario a check accepts (samples, or what a budget gives)
MAX_ROWS_PER_SCENARIO = 100_000_000  # ~ hours per scenario at the fastest verifiers' 0.01 ms a row
MAX_NEW_TOKENS = 16  # the exact law enumerates V^N <= 65,536 sequences: N <= 16 for any V >= 2
LEVEL_NAMES = ("ci", "default", "thorough")  # engine.LEVELS (kept torch-free here)
CI_MAX_DETECTABLE_TV = 0.1  # the "ci" level's stated bound, unless another than the default is given
GENERATE_MODELS = ("table", "transformers")


def _whole(argument: str, value: Any, low: int, high: int | None, example: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecproofInputError(argument, f"{value!r} is not a whole number", f"pass e.g. {example}")
    if value < low:
        raise SpecproofInputError(argument, f"{value} is below {low}", f"pass at least {low}, e.g. {example}")
    if high is not None and value > high:
        raise SpecproofInputError(argument, f"{value:,} is above the limit {high:,}",
                                  f"pass at most {high:,} (e.g. {example})")


def _number(argument: str, value: Any, ok: Callable[[float], bool], what: str, example: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok(value):
        raise SpecproofInputError(argument, f"{value!r} is not {what}", f"pass e.g. {example}")
    return float(value)


@dataclass(frozen=True)
class CheckOptions:
    """The options of one check (module docstring); build it with :meth:`build`."""

    contract: Contract
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 0
    alpha: float = 1e-6
    samples: int | None = None  # rows per scenario
    budget: int | None = None  # stream rows in all
    level: str = "default"
    time_budget: float | None = None  # seconds for the whole check
    max_detectable_tv: float = DEFAULT_MAX_DETECTABLE_TV
    max_drift: float | None = None  # the user's null band in TV (else derived from observed precision)
    timeout: float | None = DEFAULT_TIMEOUT  # seconds per call of the target
    fail_fast: bool = False
    collect_all: bool = False  # run every quota after a finding (default: stop once the verdict is settled)
    inject: bool = True
    accept_rate: float | None = None  # certain rare-draw findings whose real-generator rate bound is <= this pass
    batch_size: int = 8192
    progress: Any = None
    hard_timeout: bool = False  # end the process when the target ignores its time limit (the CLI's choice)
    engine: Any = None  # None (local) or an entered RayEngine
    scenarios: tuple[Any, ...] | None = None
    # contract-specific (contracts.CONTRACT_OPTIONS)
    rule: Any = None  # batched: also require the emission law of this single-step rule
    vocab: tuple[int, ...] | None = None  # batched: sizes of the tiled scenarios (None: contracts.batched.tiled's default)
    siblings: tuple[str, ...] | None = None  # tree: sibling modes judged
    models: str | None = None  # generate: "table" or "transformers"
    sampling: Any = None  # generate: one Sampling for every model pair instead of the suite's own
    new_tokens: int | None = None  # generate: new tokens per row

    @classmethod
    def build(cls, contract: Any = "batched", **options: Any) -> "CheckOptions":
        """Validated options (module docstring); ``contract`` a name of :data:`.contracts.CONTRACTS`."""
        record = get_contract(contract)
        known = {f.name for f in fields(cls)} - {"contract"}
        for name, value in options.items():
            if name not in known:
                raise SpecproofInputError(name, "is not an option of a check",
                                          f"use the options of specproof.check: {', '.join(sorted(known))}")
            owner = CONTRACT_OPTIONS.get(name)
            if owner is not None and owner != record.name and value is not None:
                raise SpecproofInputError(name,
                                          f"applies to the {owner} contract only, not to {record.name}",
                                          f"drop it, or check under that contract (contract={owner!r}; --contract {owner})")
        out = cls(record, **options)
        out._validate()
        return out

    def with_(self, **changes: Any) -> "CheckOptions":
        """A copy with ``changes``, validated again."""
        out = replace(self, **changes)
        out._validate()
        return out

    def for_target(self, target: Any) -> "CheckOptions":
        """A copy in which the contract options the target declares (``target.contract_defaults``, e.g. an
        adapter's ``{"siblings": ("topk",)}``: the runtime's sibling modes) fill those left unset."""
        declared = getattr(target, "contract_defaults", None) or {}
        changes = {name: value for name, value in declared.items()
                   if CONTRACT_OPTIONS.get(name) == self.contract.name and getattr(self, name) is None}
        return self.with_(**changes) if changes else self

    def _validate(self) -> None:
        object.__setattr__(self, "dtype", dtype_name(self.dtype))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise SpecproofInputError("seed", f"{self.seed!r} is not an integer in [0, 2^63)", "pass e.g. 0")
        _number("max_detectable_tv", self.max_detectable_tv, lambda x: 0 < x <= 1, "in (0, 1]",
                str(DEFAULT_MAX_DETECTABLE_TV))
        if self.max_drift is not None:
            _number("max_drift", self.max_drift, lambda x: 0 <= x < 1, "a total variation in [0, 1)", "0.001")
        _number("alpha", self.alpha, lambda x: 0 < x < 1, "in (0, 1)", "1e-6")
        if self.timeout is not None:
            _number("timeout", self.timeout, lambda x: x > 0, "a finite number of seconds > 0", "120")
        if self.time_budget is not None:
            _number("time_budget", self.time_budget, lambda x: x > 0, "a positive number of seconds", "60")
            if self.samples is not None or self.budget is not None:
                raise SpecproofInputError("time_budget", "given with samples or budget", "pass one of them")
        if self.samples is not None:
            if self.budget is not None:
                raise SpecproofInputError("samples", "both samples and budget given", "pass one of them")
            _whole("samples", self.samples, MIN_ROWS, MAX_ROWS_PER_SCENARIO, "20_000")
        if self.budget is not None:
            _whole("budget", self.budget, 0, MAX_ROWS_PER_SCENARIO * 100, "100_000")  # too few: the driver says how many
        _whole("batch_size", self.batch_size, 1, None, "8192")
        if self.accept_rate is not None:
            _number("accept_rate", self.accept_rate, lambda x: 0 < x < 1, "a rate per round in (0, 1)", "1e-12")
            if not self.inject:
                raise SpecproofInputError("accept_rate", "given with the RNG edge injection off",
                                          "drop --no-inject (its findings are what the rate accepts) or drop it")
        if self.level not in LEVEL_NAMES:
            raise SpecproofInputError("level", f"{self.level!r} is not a level", f"use one of {list(LEVEL_NAMES)}")
        if self.level == "ci" and self.max_detectable_tv == DEFAULT_MAX_DETECTABLE_TV:
            object.__setattr__(self, "max_detectable_tv", CI_MAX_DETECTABLE_TV)
        if self.scenarios is not None:
            object.__setattr__(self, "scenarios", tuple(self.scenarios))
            if not self.scenarios:
                raise SpecproofInputError("scenarios", "is empty", "pass at least one scenario")
        if self.rule is not None:
            from specproof.proofs.laws.step_rules import StepRule, get_step_rule

            if not isinstance(self.rule, (str, StepRule)):
                raise SpecproofInputError("rule", f"{self.rule!r} is not a rule name", "pass e.g. 'canonical'")
            get_step_rule(self.rule)  # an unknown name: a usage error listing the rules
        if self.siblings is not None:
            if not isinstance(self.siblings, (str, list, tuple)):
                raise SpecproofInputError("siblings", f"{self.siblings!r} is not a list of sibling modes",
                                          f"use a subset of {', '.join(SIBLING_MODES)}")
            chosen = (tuple(s.strip() for s in self.siblings.split(",") if s.strip())
                      if isinstance(self.siblings, str) else tuple(self.siblings))
            bad = [s for s in chosen if s not in SIBLING_MODES]
            if bad or not chosen:
                raise SpecproofInputError("siblings", f"{self.siblings!r} names no sibling mode or unknown ones "
                                          f"({', '.join(map(str, bad))})",
                                          f"use a subset of {', '.join(SIBLING_MODES)}")
            object.__setattr__(self, "siblings", chosen)
        if self.sampling is not None:
            from specproof.harness.exact.sampling import Sampling

            if not isinstance(self.sampling, Sampling):
                raise SpecproofInputError("sampling", f"{self.sampling!r} is not a Sampling",
                                          "pass e.g. specproof.harness.Sampling(0.7, top_k=3)")
        if self.models is not None and self.models not in GENERATE_MODELS:
            raise SpecproofInputError("models", f"{self.models!r} is not a model kind",
                                      f"use one of {', '.join(GENERATE_MODELS)}")
        if self.vocab is not None:
            from specproof.harness.check.vocab import vocab_sizes

            object.__setattr__(self, "vocab", vocab_sizes(self.vocab))
        if self.new_tokens is not None:
            _whole("new_tokens", self.new_tokens, 1, MAX_NEW_TOKENS, "5")

    def contract_values(self) -> dict[str, Any]:
        """The options of this contract that are set (:data:`.contracts.CONTRACT_OPTIONS`), JSON-ready and in the
        record's order: a rule by name, sizes and modes as lists, a sampling as its set fields
        (``temperature``, ``top_k``, ``top_p``, ``min_p``, ``order`` when not the default).  What a check file
        and a report row record of the options a check ran under (a sampling's numbers as floats, its top-k as an
        int: ``temperature = 1`` in a campaign file and ``--temperature 1`` record the same)."""
        out: dict[str, Any] = {}
        for name in self.contract.options:
            value = getattr(self, name)
            if value is None:
                continue
            if name == "sampling":
                from specproof.harness.exact.sampling import ORDER

                value = {key: kind(getattr(value, key)) for key, kind in (("temperature", float), ("top_k", int),
                                                                           ("top_p", float), ("min_p", float))
                         if getattr(value, key) is not None} | ({} if value.order == ORDER else
                                                                 {"order": list(value.order)})
            elif name == "rule":
                value = str(getattr(value, "name", value))
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out

    @property
    def rows_fixed(self) -> bool:
        """Rows per scenario are fixed (``samples`` or ``budget``) rather than planned from the power."""
        return self.samples is not None or self.budget is not None
