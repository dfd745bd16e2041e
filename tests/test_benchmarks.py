"""Smoke tests of the benchmark scripts on a tiny generated corpus.

The scripts are not shipped, but RESULTS.md quotes them: if the generator stopped producing valid,
varied, reproducible code, or the harness stopped measuring what it says, the figures would be wrong
without anyone noticing.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


gen_corpus = load("gen_corpus")
bench = load("bench")


def corpus_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def test_generator_reaches_the_size_and_writes_valid_python(tmp_path):
    files, lines = gen_corpus.generate(tmp_path / "c", 3_000, stream_fraction=0.5, seed=1)
    contents = corpus_bytes(tmp_path / "c")
    assert len(contents) == files > 1
    assert lines >= 3_000
    assert sum(b.count(b"\n") for b in contents.values()) == lines
    for name, data in contents.items():
        ast.parse(data, filename=name)


def test_generator_is_reproducible_and_varied(tmp_path):
    gen_corpus.generate(tmp_path / "a", 2_000, seed=7)
    gen_corpus.generate(tmp_path / "b", 2_000, seed=7)
    gen_corpus.generate(tmp_path / "c", 2_000, seed=8)
    a, b, c = (corpus_bytes(tmp_path / x) for x in "abc")
    assert a == b
    assert a != c
    # No two files alike: a content-keyed cache must not be able to flatter the figures.
    assert len(set(a.values())) == len(a)


def test_stream_fraction_controls_stream_code(tmp_path):
    gen_corpus.generate(tmp_path / "none", 2_000, stream_fraction=0.0)
    gen_corpus.generate(tmp_path / "all", 2_000, stream_fraction=1.0)
    assert not any(
        b"torch.cuda.Stream" in d or b"Event(" in d
        for d in corpus_bytes(tmp_path / "none").values()
    )
    streamy = corpus_bytes(tmp_path / "all").values()
    assert all(
        b"cuda.Stream()" in d or b"cuda.Event(" in d or b"non_blocking" in d for d in streamy
    )


def test_parse_size():
    assert gen_corpus.parse_size("10k") == 10_000
    assert gen_corpus.parse_size("1M") == 1_000_000
    assert gen_corpus.parse_size("2500") == 2_500


def test_run_once_measures_time_cpu_and_memory():
    sample = bench.run_once(
        [sys.executable, "-c", "x = bytearray(50 * 2**20); import time; time.sleep(0.05)"]
    )
    assert sample.wall >= 0.05
    assert sample.peak_kib >= 50 * 1024  # the 50 MiB buffer shows in the peak
    assert sample.returncode == 0


def test_run_once_reports_a_crashing_command():
    with pytest.raises(RuntimeError, match="exited 3"):
        bench.run_once([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])


def test_parse_floor_runs_in_two_processes(tmp_path):
    gen_corpus.generate(tmp_path / "c", 1_000)
    sample = bench.run_once(
        [
            sys.executable,
            str(BENCHMARKS / "bench.py"),
            "--parse-only",
            str(tmp_path / "c"),
            "--jobs",
            "2",
        ]
    )
    assert sample.returncode == 0


def test_copy_corpus_skips_hidden_directories_and_counts_lines(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / ".venv" / "lib").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\ny = 2\n")
    (src / ".venv" / "lib" / "b.py").write_text("z = 3\n")
    (src / "README.md").write_text("not python\n")
    files, lines = bench.copy_corpus(src, tmp_path / "dst")
    assert (files, lines) == (1, 2)
    assert corpus_bytes(tmp_path / "dst") == {"pkg/a.py": b"x = 1\ny = 2\n"}


def test_file_to_edit_prefers_stream_code(tmp_path):
    (tmp_path / "big.py").write_text("x = 1\n" * 100)
    (tmp_path / "small.py").write_text("s = torch.cuda.stream(t)\n")
    assert bench.file_to_edit(tmp_path).name == "small.py"


def synclint_cli_available() -> bool:
    return importlib.util.find_spec("synclint.cli") is not None


@pytest.mark.slow
@pytest.mark.skipif(not synclint_cli_available(), reason="synclint CLI not built yet")
def test_whole_benchmark_on_a_tiny_corpus(tmp_path, capsys):
    gen_corpus.generate(tmp_path / "c", 1_500, stream_fraction=0.3)
    out = tmp_path / "figures.json"
    assert bench.main([str(tmp_path / "c"), "--reps", "1", "--json", str(out)]) == 0
    import json

    data = json.loads(out.read_text())
    labels = [row["label"] for row in data["rows"]]
    assert labels[:3] == ["synclint cold", "synclint warm", "synclint 1 changed"]
    assert all(row["median_wall_s"] > 0 for row in data["rows"])
    assert "synclint cold" in capsys.readouterr().out
    # The original corpus is never touched (the edit happens in a scratch copy, no cache left behind).
    assert not any((tmp_path / "c").rglob(".synclint_cache"))
