"""Linting leaves (almost) no cyclic garbage, and the runner's collector tuning is undone.

The runner pauses Python's cyclic collector while files are linted and collects between files
(:func:`synclint.runner.tune_gc`): that is only cheap if the model, the rules and the screen leave
their trees to reference counting. These tests fail if a reference cycle holding a tree comes back
(an interpreter and its evaluator, a storage and its allocating op, a visitor class made inside a
function), and check that a serial run puts the collector back as it found it.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from synclint import runner
from synclint.pipeline import FileSettings, lint_text
from synclint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
EVERY_RULE = FileSettings(frozenset(all_rules()))


def _cyclic_garbage_after(paths: list[Path]) -> list:
    """What only the cyclic collector would free after linting ``paths``, by type name."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for path in paths:
            lint_text(path.read_text(encoding="utf-8"), str(path), EVERY_RULE)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return [f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def _ours(names: list[str]) -> list[str]:
    """Trees, model objects and classes (a visitor class made inside a function)."""
    return [n for n in names if n.startswith(("libcst.", "synclint.")) or n.endswith("Meta")]


def test_linting_leaves_no_cyclic_garbage_of_its_own():
    """Every fixture (findings and clean files, the screen and the ordinary run, every rule)."""
    fixtures = sorted((ROOT / "fixtures").rglob("*.py"))
    assert len(fixtures) > 100
    assert _ours(_cyclic_garbage_after(fixtures)) == []


def test_a_large_model_leaves_no_cycles():
    garbage = _cyclic_garbage_after([ROOT / "examples" / "prefetcher.py"] * 3)
    assert _ours(garbage) == []
    assert len(garbage) < 100  # a few closures of ast.literal_eval's at most


def test_a_serial_run_puts_the_collector_back(tmp_path):
    files = []
    for i in range(3):
        path = tmp_path / f"m{i}.py"
        path.write_text("import torch\nx = torch.cuda.Stream()\n", encoding="utf-8")
        files.append(runner.Job(str(path), str(path), EVERY_RULE))
    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    results = runner.run_jobs(files, parallel=False)
    assert len(results) == 3
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before
    assert not runner._collect_between_files


def test_a_serial_run_leaves_what_the_host_froze_frozen(tmp_path):
    """An editor integration or a test session may have frozen objects of its own: a serial run
    must not thaw them (``gc.unfreeze()`` thaws everything)."""
    path = tmp_path / "m.py"
    path.write_text("import torch\nx = torch.cuda.Stream()\n", encoding="utf-8")
    sentinel = [object()]  # a container: tracked by the collector, so it can be frozen
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        assert not any(o is sentinel for o in gc.get_objects())  # frozen objects are not listed
        results = runner.run_jobs([runner.Job(str(path), str(path), EVERY_RULE)] * 2, parallel=False)
        assert len(results) == 2
        # Still frozen. (Not the count: frozen objects may be freed by reference counting during
        # the run, which lowers it; a thaw puts every one of them back in the collector's lists.)
        assert not any(o is sentinel for o in gc.get_objects())
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


def test_the_runner_collects_between_files_when_garbage_builds_up(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text("x = 1\n", encoding="utf-8")
    job = runner.Job(str(path), str(path), EVERY_RULE)
    monkeypatch.setattr(runner, "_collect_between_files", True)
    monkeypatch.setattr(runner, "GARBAGE_LIMIT", 0)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        garbage = _Cyclic()
        alive = weakref.ref(garbage)
        del garbage
        assert alive() is not None  # only the cyclic collector can free it
        runner.run_job(job)
        assert alive() is None
    finally:
        if was_enabled:
            gc.enable()
