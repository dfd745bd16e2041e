"""Running targets: module code, no-argument functions, scripts with argv, package callables."""

from __future__ import annotations

import sys

import pytest

from synclint.confirm.plan import parse_entry
from synclint.confirm.targets import TargetError, TargetRunner


def test_module_code_runs_fresh_each_time(tmp_path) -> None:
    path = tmp_path / "m.py"
    marker = tmp_path / "count"
    path.write_text(f"open({str(marker)!r}, 'a').write('x')\n")
    runner = TargetRunner({"kind": "module", "path": str(path), "run_name": "__main__"})
    runner.run_once()
    runner.run_once()
    assert marker.read_text() == "xx"


def test_function_target_returns_its_value_and_defines_the_module_once(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("loads = []\nloads.append(1)\ndef main(n=3):\n    return len(loads) * n\n")
    runner = TargetRunner({"kind": "function", "path": str(path), "function": "main"})
    assert runner.run_once() == 3 and runner.run_once() == 3


def test_missing_function_is_a_target_error(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    with pytest.raises(TargetError):
        TargetRunner({"kind": "function", "path": str(path), "function": "main"}).run_once()


def test_script_entry_sees_its_argv_and_exit_zero_is_fine(tmp_path, monkeypatch) -> None:
    script = tmp_path / "train.py"
    out = tmp_path / "argv"
    script.write_text(f"import sys\nopen({str(out)!r}, 'w').write(' '.join(sys.argv))\nsys.exit(0)\n")
    monkeypatch.chdir(tmp_path)
    target = parse_entry("python train.py --steps 2")
    TargetRunner(target.to_json()).run_once()
    assert out.read_text().endswith("train.py --steps 2")  # runpy puts the full path in argv[0]


def test_script_failure_status_is_an_error(tmp_path, monkeypatch) -> None:
    script = tmp_path / "bad.py"
    script.write_text("import sys\nsys.exit(4)\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="status 4"):
        TargetRunner(parse_entry("python bad.py").to_json()).run_once()


def test_callable_entry_imports_the_module(tmp_path, monkeypatch) -> None:
    package = tmp_path / "pkgx"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "job.py").write_text("def run():\n    return 'ran'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert TargetRunner(parse_entry("pkgx.job:run").to_json()).run_once() == "ran"
    sys.modules.pop("pkgx.job", None)
    sys.modules.pop("pkgx", None)


def test_pytest_entry_runs_the_tests_in_process(tmp_path, monkeypatch) -> None:
    marker = tmp_path / "ran"
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(f"def test_inner():\n    open({str(marker)!r}, 'a').write('x')\n")
    monkeypatch.chdir(tmp_path)
    runner = TargetRunner(parse_entry(f"pytest {test_file} -p no:randomly").to_json())
    runner.run_once()
    runner.run_once()
    assert marker.read_text() == "xx"
