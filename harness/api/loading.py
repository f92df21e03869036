"""Load a Python object named on the command line: ``package.module:name`` or ``path/to/file.py:name``.

Shared by ``specproof check TARGET`` (in its own process) and ``specproof prove --rule``, whose file
is imported only inside the child of :mod:`.child_trace`.  Every failure (bad spec, missing
file, an import that raises or calls ``sys.exit``, a missing name) is a :class:`SpecproofInputError`
naming ``argument`` (and, for an import that raises, the file's line: :func:`line_in`).  The object's module is imported and executed with the user's rights.  A file's
folder is put first on ``sys.path`` (as ``python path/to/file.py`` would), so it can import its
neighbours.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from specproof.errors import SpecproofInputError

__all__ = ["load_object", "locate_object", "import_python_file", "line_in"]


def line_in(err: BaseException, path: str | Path) -> str:
    """`` at file.py:LINE (code)`` for the last frame of ``err``'s traceback in ``path`` ("" if none)."""
    target = str(Path(path).resolve())
    frames = [f for f in traceback.extract_tb(err.__traceback__) if str(Path(f.filename).resolve()) == target]
    if not frames:
        return ""
    f = frames[-1]
    return f" at {Path(f.filename).name}:{f.lineno} ({(f.line or '').strip()})"


def import_python_file(path_text: str, argument: str) -> ModuleType:
    """Import a ``.py`` file as a fresh module (its name derived from the resolved path)."""
    path = Path(path_text)
    if path.suffix != ".py" or not path.is_file():
        raise SpecproofInputError(argument, f"{path_text!r} is not an existing .py file",
                                  "give the path of a Python source file")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"specproof_user_{path.stem}_{digest}", path)
    if spec is None or spec.loader is None:
        raise SpecproofInputError(argument, f"cannot import {path_text!r}", "pass a Python source file")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except SystemExit as err:
        raise _exited(argument, path_text, err) from None
    except Exception as err:  # the user's file: any error is a usage error
        raise SpecproofInputError(argument, f"importing {path_text!r} failed: {type(err).__name__}: {err}"
                                  f"{line_in(err, path)}",
                                  "fix the file so that it imports cleanly") from None
    return module


def _exited(argument: str, where: str, err: SystemExit) -> SpecproofInputError:
    """``sys.exit`` at import must not become the tool's exit code (``sys.exit(0)`` would read as a pass)."""
    return SpecproofInputError(argument, f"importing {where!r} called sys.exit({err.code!r})",
                               "guard script code with if __name__ == '__main__':")


def locate_object(spec: str, argument: str) -> None:
    """Check that ``spec``'s module or file exists without running it (``find_spec`` imports only its
    parent packages), a usage error otherwise, so a command can refuse a wrong TARGET before slow
    set-up; :func:`load_object` still has the last word (a missing name is found there)."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        load_object(spec, argument)  # raises its own usage error
        return
    if where.endswith(".py"):
        if not Path(where).is_file():
            raise SpecproofInputError(argument, f"file {where!r} does not exist", "check the path")
        return
    try:
        found = importlib.util.find_spec(where)
    except Exception:  # a parent package that is missing or fails: load_object names the error
        found = None
    if found is None:
        load_object(spec, argument)  # imports and raises the precise usage error


def load_object(spec: str, argument: str) -> Any:
    """The object ``name`` from ``package.module:name`` or ``path/to/file.py:name``."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise SpecproofInputError(argument, f"{spec!r} is not MODULE:NAME or PATH.py:NAME",
                                  "write e.g. mypkg.verify:verify or path/to/verify.py:verify")
    if where.endswith(".py"):
        module = import_python_file(where, argument)
    else:
        try:
            module = importlib.import_module(where)
        except SystemExit as err:
            raise _exited(argument, where, err) from None
        except Exception as err:  # ImportError or the module's own failure
            raise SpecproofInputError(argument, f"cannot import module {where!r}: {type(err).__name__}: {err}",
                                      "check the module path and that the package is installed") from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            public = sorted(k for k in vars(module) if not k.startswith("_"))[:12]
            raise SpecproofInputError(argument, f"{where!r} defines no {name!r}",
                                      f"choose one of: {', '.join(public) or '(nothing public)'}")
        obj = getattr(obj, part)
    return obj
