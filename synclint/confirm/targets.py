"""Execute a :class:`~synclint.confirm.plan.Target` (as JSON) once, inside the worker process.

Kept free of torch so CPU tests can drive it. Each kind mirrors how the user would run the code:
the file's module-level code, a function of it called without arguments, ``python script.py args``,
``python -m module args``, ``pytest args`` in-process, or ``package.module:function``.
"""

from __future__ import annotations

import builtins
import importlib
import os
import random
import runpy
import sys
from pathlib import Path
from typing import Any, Callable, Mapping


class TargetError(Exception):
    """The target could not be set up (missing file, function, module): not the user code's failure."""


def seed_everything(seed: int) -> None:
    """Same seed for the paired delayed and reference runs, a new one per trial (stale data differs)."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % (2**32))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


class TargetRunner:
    """Runs one target repeatedly; exceptions from the user's code propagate to the caller."""

    def __init__(self, target: Mapping[str, Any]) -> None:
        self.target = dict(target)
        self.kind = self.target["kind"]
        self._function: Callable[[], Any] | None = None

    def _exec_file(self, run_name: str) -> dict[str, Any]:
        path = self.target["path"]
        try:
            source = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise TargetError(f"cannot read {path}: {error}") from None
        code = compile(source, path, "exec")
        namespace: dict[str, Any] = {
            "__name__": run_name,
            "__file__": path,
            "__builtins__": builtins,
        }
        folder = str(Path(path).parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        exec(code, namespace)
        return namespace

    def _resolve_function(self) -> Callable[[], Any]:
        if self._function is None:
            if self.kind == "function":
                namespace = self._exec_file("__synclint_confirm__")
            else:
                try:
                    namespace = vars(importlib.import_module(self.target["module"]))
                except ImportError as error:
                    raise TargetError(f"cannot import {self.target['module']}: {error}") from None
            function = namespace.get(self.target["function"])
            if not callable(function):
                raise TargetError(f"`{self.target['function']}` is not a function there")
            self._function = function
        return self._function

    def run_once(self) -> Any:
        """Run the target once and return what it returned (scripts and tests: None)."""
        kind = self.kind
        if kind == "module":
            self._exec_file(self.target.get("run_name") or "__synclint_confirm__")
            return None
        if kind in ("function", "callable"):
            function = self._resolve_function()
            return function()
        if kind in ("script", "run-module"):
            saved = sys.argv[:]
            sys.argv = list(self.target["argv"])
            try:
                if kind == "script":
                    if not os.path.exists(self.target["path"]):
                        raise TargetError(f"no such script: {self.target['path']}")
                    runpy.run_path(self.target["path"], run_name="__main__")
                else:
                    runpy.run_module(self.target["module"], run_name="__main__", alter_sys=True)
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    raise RuntimeError(f"the entry point exited with status {stop.code}") from None
            finally:
                sys.argv = saved
            return None
        if kind == "pytest":
            try:
                import pytest
            except ImportError:
                raise TargetError("--entry pytest needs pytest installed") from None
            status = pytest.main([*self.target["argv"], "-q", "-p", "no:cacheprovider"])
            if int(status) not in (0, 1, 5):  # 1: tests failed (maybe the race); 5: none collected
                raise RuntimeError(f"pytest exited with status {int(status)}")
            return None
        raise TargetError(f"unknown target kind {kind!r}")
