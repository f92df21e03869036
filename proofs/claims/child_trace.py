"""A user rule file, imported and traced only inside a child process; the parent reads plain data.

:func:`trace_file` forks a child that imports ``path.py`` (its code runs there, never in the prover's
process), finds the :class:`~specproof.proofs.laws.step_rules.StepRule` named on the command line and
traces each of its functions once (:func:`~specproof.proofs.claims.opaque.trace_rule`).  The child
writes one JSON document to a pipe (the rule's strings and the graph's wire form: no pickled
objects) and ends with ``os._exit`` so no ``atexit`` handler or buffered output of the user's runs.
The parent validates the document (:meth:`~specproof.proofs.arith.graph.Graph.from_data`) and never
imports the file.

Discipline in the child, each breach a :class:`~specproof.errors.SpecproofInputError` with the
file, the line where known and the fix (exit 2):

* any exception, including ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` and custom
  ``BaseException`` s, at import or in a call;
* a process that ends without answering (``os._exit``, a signal) or that outlives ``timeout`` seconds
  (a hang at import or in a call; also bounded by ``RLIMIT_CPU``);
* registering an ``atexit`` handler or a signal handler, or changing the recursion limit;
* inspecting the interpreter (Python audit hooks): frame access (``sys._getframe``,
  ``sys._current_frames``, a traceback's or generator's frame, ``__globals__``), ``sys.settrace`` /
  ``sys.setprofile``, from the user's own files; importing specproof modules other than
  ``specproof.proofs`` and the rule library ``specproof.proofs.laws``.

The child's stdout and stderr go to ``/dev/null``: the tool's output never comes from user code.
These checks make misuse loud; soundness does not rest on them (the verdict is about the graph the
parent received, which every engine reads the same way: ``docs/architecture.md``).
"""

from __future__ import annotations

import atexit
import builtins
import json
import math
import os
import resource
import select
import signal
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from specproof.proofs.arith.graph import Graph, GraphError
from specproof.loading import import_python_file, line_in
from specproof.proofs.claims.opaque import RuleUsageError, own_frame_lookup, trace_rule
from specproof.errors import SpecproofInputError
from specproof.proofs.laws.step_rules import StepRule

__all__ = ["TracedFile", "trace_file", "MAX_MESSAGE_BYTES"]

MAX_MESSAGE_BYTES = 256 << 20
"""The largest answer a child may send (a traced graph is far smaller)."""
ALLOWED_IMPORTS = ("specproof", "specproof.proofs", "specproof.proofs.laws")
"""What a rule file may import from specproof (and everything under ``specproof.proofs.laws``)."""
FRAME_EVENTS = {"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile"}
FRAME_ATTRIBUTES = {"tb_frame", "f_back", "gi_frame", "cr_frame", "ag_frame", "__globals__", "f_globals",
                    "f_locals", "gi_code", "f_code"}
RULE_FIELDS = ("name", "claim", "description", "source")


class TracedFile(dict):
    """The child's answer, validated: the rule's strings (``name``, ``claim``, ``description``,
    ``source``, ``tags``) and ``graph``."""


def _trusted_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.add(str(Path(__file__).resolve().parents[1]) + "/")  # specproof.proofs itself
    return tuple(sorted(roots))


class _Guard:
    """The audit hook and import filter of one child (see the module docstring)."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.breach: tuple[str, str] | None = None
        self.trusted = _trusted_roots()
        self.inside = False

    def refuse(self, problem: str, fix: str) -> None:
        if self.breach is None:
            self.breach = (problem, fix)
        raise RuleUsageError("--rule", problem, fix)

    def _caller(self) -> tuple[str, int]:
        frame = sys._getframe(2)  # the hook's caller's caller: the code that asked
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("", 0)

    def hook(self, event: str, args: tuple) -> None:
        if self.inside or own_frame_lookup.active():
            return
        frame_event = event in FRAME_EVENTS or (event == "object.__getattr__" and len(args) == 2
                                               and args[1] in FRAME_ATTRIBUTES)
        if not frame_event:
            return
        self.inside = True
        try:
            filename, line = self._caller()
        finally:
            self.inside = False
        if not filename or filename.startswith(self.trusted):
            return
        what = event if event != "object.__getattr__" else f"reading .{args[1]}"
        self.refuse(f"{self.spec} inspects the interpreter ({what} at {Path(filename).name}:{line})",
                    "a rule may only compute with its arguments: stack and frame inspection is outside "
                    "what a proof covers")

    def install(self) -> None:
        sys.addaudithook(self.hook)
        original = builtins.__import__

        def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                           level: int = 0) -> Any:
            importer = (globals or {}).get("__name__", "") if isinstance(globals, dict) else ""
            own = importer == "specproof" or str(importer).startswith("specproof.")
            if level == 0 and not own and (name == "specproof" or name.startswith("specproof.")) \
                    and name not in ALLOWED_IMPORTS and not name.startswith("specproof.proofs.laws."):
                self.refuse(f"{self.spec} imports {name}, an internal module of specproof",
                            "import only specproof.proofs (StepRule, ...) and specproof.proofs.laws")
            return original(name, globals, locals, fromlist, level)

        builtins.__import__ = guarded_import


def _state() -> tuple[Any, ...]:
    handlers = []
    for sig in signal.valid_signals():
        try:
            handlers.append((sig, signal.getsignal(sig)))
        except (ValueError, OSError):
            continue
    return sys.getrecursionlimit(), atexit._ncallbacks(), tuple(handlers)  # type: ignore[attr-defined]


def _changes(before: tuple[Any, ...], after: tuple[Any, ...]) -> str:
    if before[0] != after[0]:
        return f"changed the recursion limit ({before[0]} -> {after[0]})"
    if before[1] != after[1]:
        return "registered an atexit handler"
    if before[2] != after[2]:
        changed = sorted(signal.Signals(s).name for (s, h), (_, g) in zip(before[2], after[2]) if h is not g)
        return f"installed a signal handler ({', '.join(changed) or 'some signal'})"
    return ""


def _rule_of(obj: Any, spec: str, path_text: str, name: str, module: Any) -> StepRule:
    from specproof.proofs.claims.catalogue import CatalogueEntry  # the child only: a cycle at import
    if isinstance(obj, CatalogueEntry):
        if obj.step_rule is None:
            raise SpecproofInputError("--rule", f"{spec} is a CatalogueEntry with its own prove function, which "
                                      "specproof cannot check", "define the rule as a StepRule(...)")
        return StepRule(obj.name, obj.claim, obj.description, obj.step_rule.acceptance,
                        obj.step_rule.residual_weight, obj.step_rule.acceptance_test, obj.source)
    if isinstance(obj, StepRule):
        return obj
    candidates = sorted(k for k, v in vars(module).items() if isinstance(v, (StepRule, CatalogueEntry)))
    if obj is _MISSING:
        raise SpecproofInputError("--rule", f"{path_text!r} defines no {name!r}",
                                  f"choose one of: {', '.join(candidates) or '(no StepRule in the file)'}")
    raise SpecproofInputError("--rule", f"{name!r} in {path_text!r} is a {type(obj).__name__}, not a StepRule",
                              "wrap acceptance/residual_weight functions in specproof.proofs.StepRule(...)")


_MISSING = object()


def _plain(value: Any) -> Any:
    """A user string as a plain ``str`` (None when it is not one: the parent names the problem)."""
    return str.__str__(value) if isinstance(value, str) else None


def _answer(path_text: str, name: str, spec: str, guard: _Guard) -> dict[str, Any]:
    before = _state()
    module = import_python_file(path_text, "--rule")
    obj = vars(module).get(name, _MISSING) if isinstance(vars(module), dict) else _MISSING
    rule = _rule_of(obj, spec, path_text, name, module)
    strings = {f: _plain(getattr(rule, f)) for f in RULE_FIELDS}
    tags = rule.tags if isinstance(rule.tags, tuple) else ()
    strings["tags"] = [t for t in (_plain(t) for t in tags) if t is not None]
    strings["name_type"] = type(rule.name).__name__
    graph = trace_rule(rule)
    changed = _changes(before, _state())
    if changed:
        raise SpecproofInputError("--rule", f"{spec} {changed} while it was imported or traced",
                                  "a rule file defines rules; it must not change the interpreter's process state")
    if guard.breach is not None:
        raise SpecproofInputError("--rule", *guard.breach)
    return {"rule": strings, "graph": graph.as_data()}


def _child(path_text: str, name: str, spec: str, timeout: float, write: int) -> None:
    """Runs in the forked child; always ends with ``os._exit``."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        seconds = max(1, math.ceil(timeout)) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
        guard = _Guard(spec)
        guard.install()
        try:
            message: dict[str, Any] = {"ok": _answer(path_text, name, spec, guard)}
        except SpecproofInputError as err:
            breach = guard.breach
            if breach is not None and err.argument == "--rule":
                err = SpecproofInputError("--rule", *breach)
            message = {"error": [err.argument, err.problem, err.fix]}
        except BaseException as err:  # noqa: B036 - the user's code: anything it raises is a usage error
            with own_frame_lookup():
                where = line_in(err, path_text)
            message = {"error": ["--rule", f"importing or tracing {spec} raised {type(err).__name__}: {err}{where}",
                                 "fix the file so that it imports cleanly and its rule returns Arith values "
                                 "(never raise, exit or interrupt)"]}
        data = json.dumps(message).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write, view[:1 << 20]):]
    finally:
        os._exit(0)


def _read(read: int, pid: int, timeout: float) -> tuple[str, bytes]:
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout", b""
        ready, _, _ = select.select([read], [], [], left)
        if not ready:
            return "timeout", b""
        chunk = os.read(read, 1 << 20)
        if not chunk:
            return "eof", b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE_BYTES:
            return "too large", b""


def trace_file(path_text: str, name: str, spec: str, timeout: float) -> TracedFile:
    """Import ``path_text`` and trace its ``name`` in a child process (see the module docstring)."""
    path = Path(path_text)
    if path.suffix != ".py" or not path.is_file():
        raise SpecproofInputError("--rule", f"{path_text!r} is not an existing .py file",
                                  "give the path of a Python source file")
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow os._exit)
        os.close(read)
        _child(path_text, name, spec, timeout, write)
    os.close(write)
    try:
        state, data = _read(read, pid, timeout)
    finally:
        os.close(read)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    if state == "timeout":
        raise SpecproofInputError("--rule", f"importing and tracing {spec} did not finish within {timeout:g} s "
                                  "(a hang at import or in a rule function)",
                                  "the file must import quickly and each rule function must return; raise "
                                  "--timeout if it really needs longer")
    if state == "too large" or not data:
        code = os.waitstatus_to_exitcode(status)
        raise SpecproofInputError("--rule", f"importing or tracing {spec} ended its process (exit code {code}) "
                                  "before answering" if state != "too large" else
                                  f"tracing {spec} sent more than {MAX_MESSAGE_BYTES} bytes",
                                  "never call os._exit or kill the process in a rule file; guard script code "
                                  "with if __name__ == '__main__':")
    return _validated(data, spec)


def _validated(data: bytes, spec: str) -> TracedFile:
    try:
        message = json.loads(data)
    except ValueError:
        raise SpecproofInputError("--rule", f"the child tracing {spec} sent an unreadable answer",
                                  "never write to inherited file descriptors in a rule file") from None
    if isinstance(message, dict) and set(message) == {"error"} and isinstance(message["error"], list) \
            and len(message["error"]) == 3 and all(isinstance(s, str) for s in message["error"]):
        raise (RuleUsageError if message["error"][0].startswith("rule ") else SpecproofInputError)(
            *message["error"])
    try:
        body = message["ok"]
        strings, graph = body["rule"], Graph.from_data(body["graph"])
        fields = {f: strings[f] for f in (*RULE_FIELDS, "tags", "name_type")}
    except (KeyError, TypeError, GraphError) as err:
        raise SpecproofInputError("--rule", f"the child tracing {spec} sent a malformed answer ({err})",
                                  "never write to inherited file descriptors in a rule file") from None
    return TracedFile(fields, graph=graph)
