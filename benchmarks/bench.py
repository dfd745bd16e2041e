"""Time synclint against its floors and against ruff, on one corpus, in one run.

What it measures (each as a whole process, several repetitions interleaved so that machine drift
hits every command alike, medians reported):

* ``synclint cold``: ``synclint check --no-cache`` over the corpus;
* ``synclint warm``: the same with the cache primed and nothing changed;
* ``synclint 1 changed``: the cache primed and one file edited before each repetition (the largest
  file that mentions streams: the worst realistic edit);
* ``libcst parse floor``: a bare ``libcst.parse_module`` of every file, ``--jobs`` processes, which is
  what any libcst-based linter pays before doing anything;
* ``ruff ALL`` (``--select ALL --no-cache``) and ``ruff default`` (``--no-cache``) when ruff is found.

Every figure is printed with its ratio to ruff, plus CPU time and peak memory (the largest single
process, from ``wait4``'s rusage). The corpus is copied (Python files only) into a scratch directory
first: the cache is written there and the "one changed" edit never touches the original.

``--scaling 10k,100k,1m`` instead generates synthetic corpora (``gen_corpus.py``) of those sizes and
reports synclint cold time per line at each, to show whether time is linear in corpus size.

Usage::

    python benchmarks/bench.py CORPUS_DIR [--reps 5] [--jobs 2] [--ruff PATH] [--json OUT]
    python benchmarks/bench.py --scaling 10k,100k,1m [--workdir DIR] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Sample:
    wall: float
    cpu: float
    peak_kib: int
    returncode: int


@dataclass
class Measurement:
    label: str
    command: list[str]
    samples: list[Sample] = field(default_factory=list)

    @property
    def median_wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def median_cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def peak_mib(self) -> float:
        return max(s.peak_kib for s in self.samples) / 1024


def run_once(command: list[str], cwd: Path | None = None) -> Sample:
    """Run ``command`` to completion, output discarded; wall time, CPU time and peak RSS.

    ``os.wait4`` gives the rusage of this one child (and of the processes it waited for), so
    concurrent commands or earlier runs never leak into the figure the way
    ``getrusage(RUSAGE_CHILDREN)`` would.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Drain stderr in case a tool is chatty; wait4 below reaps the process itself.
    stderr = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it is reaped
    if proc.returncode not in (0, 1):
        tail = stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:\n{tail}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode)


def synclint_command() -> list[str]:
    script = Path(sys.executable).with_name("synclint")
    return [str(script)] if script.exists() else [sys.executable, "-m", "synclint"]


def copy_corpus(source: Path, target: Path) -> tuple[int, int]:
    """Copy every ``*.py`` under ``source`` to ``target``; return (files, lines)."""
    files = lines = 0
    for path in sorted(source.rglob("*.py")):
        if not path.is_file():
            continue
        rel = path.relative_to(source)
        if any(part.startswith(".") for part in rel.parts[:-1]):
            continue  # .git, .venv and friends: not part of the code base
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        dest.write_bytes(data)
        files += 1
        lines += data.count(b"\n")
    return files, lines


def file_to_edit(tree: Path) -> Path:
    """The largest file that mentions streams (the costliest realistic edit), else the largest."""
    candidates = sorted(tree.rglob("*.py"), key=lambda p: p.stat().st_size, reverse=True)
    for path in candidates:
        if b"stream" in path.read_bytes():
            return path
    return candidates[0]


def parse_only(paths: list[str]) -> int:
    """Worker for the floor: parse each file with libcst and drop the tree."""
    import libcst

    failures = 0
    for path in paths:
        try:
            libcst.parse_module(Path(path).read_bytes())
        except Exception:  # the floor only measures parsing; a syntax error is still work done
            failures += 1
    return failures


def parse_floor_main(tree: Path, jobs: int) -> int:
    paths = sorted(str(p) for p in tree.rglob("*.py"))
    if jobs <= 1:
        parse_only(paths)
        return 0
    import multiprocessing

    # Round-robin over size-sorted files balances the two halves like a work queue would.
    paths.sort(key=lambda p: os.path.getsize(p), reverse=True)
    batches = [paths[i::jobs] for i in range(jobs)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        pool.map(parse_only, batches)
    return 0


def find_ruff(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else shutil.which("ruff")


def build_commands(tree: Path, jobs: int, ruff: str | None) -> list[tuple[str, list[str], str]]:
    """(label, command, kind); kind says what must happen before each repetition."""
    synclint = synclint_command()
    commands = [
        ("synclint cold", [*synclint, "check", "--no-cache", "--exit-zero", str(tree)], "plain"),
        ("synclint warm", [*synclint, "check", "--exit-zero", str(tree)], "plain"),
        ("synclint 1 changed", [*synclint, "check", "--exit-zero", str(tree)], "edit"),
        (
            f"libcst parse floor ({jobs} proc)",
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--parse-only",
                str(tree),
                "--jobs",
                str(jobs),
            ],
            "plain",
        ),
    ]
    if ruff:
        base = [ruff, "check", "--isolated", "--no-cache", "--exit-zero"]
        commands.append(("ruff ALL", [*base, "--select", "ALL", str(tree)], "plain"))
        commands.append(("ruff default", [*base, str(tree)], "plain"))
    return commands


def benchmark(corpus: Path, reps: int, jobs: int, ruff: str | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="synclint-bench-") as scratch:
        tree = Path(scratch) / "corpus"
        files, lines = copy_corpus(corpus, tree)
        if files == 0:
            raise SystemExit(f"no Python files under {corpus}")
        commands = build_commands(tree, jobs, ruff)
        edited = file_to_edit(tree)
        original = edited.read_bytes()
        results = [Measurement(label, cmd) for label, cmd, _ in commands]
        # Warm-up: fills the OS file cache and primes synclint's own cache for "warm".
        for _, cmd, _ in commands:
            run_once(cmd, cwd=tree)
        for rep in range(reps):
            for (label, cmd, kind), measurement in zip(commands, results):
                if kind == "edit":
                    edited.write_bytes(original + f"\n# benchmark edit {rep}\n".encode())
                measurement.samples.append(run_once(cmd, cwd=tree))
                if kind == "edit":
                    # Restore and re-prime so that "warm" stays warm in the next repetition.
                    edited.write_bytes(original)
                    run_once(cmd, cwd=tree)
        return report_data(corpus, files, lines, jobs, results, edited.relative_to(tree))


def report_data(corpus, files, lines, jobs, results, edited) -> dict:
    by_label = {m.label: m for m in results}
    ruff_all = by_label.get("ruff ALL")
    ruff_default = by_label.get("ruff default")
    rows = []
    for m in results:
        row = {
            "label": m.label,
            "command": " ".join(m.command),
            "median_wall_s": round(m.median_wall, 4),
            "min_wall_s": round(min(s.wall for s in m.samples), 4),
            "max_wall_s": round(max(s.wall for s in m.samples), 4),
            "median_cpu_s": round(m.median_cpu, 4),
            "peak_mib": round(m.peak_mib, 1),
        }
        if ruff_all:
            row["vs_ruff_all"] = round(m.median_wall / ruff_all.median_wall, 3)
        if ruff_default:
            row["vs_ruff_default"] = round(m.median_wall / ruff_default.median_wall, 3)
        rows.append(row)
    return {
        "corpus": str(corpus),
        "files": files,
        "lines": lines,
        "jobs": jobs,
        "reps": len(results[0].samples),
        "edited_file": str(edited),
        "machine": machine_description(),
        "rows": rows,
    }


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def print_table(data: dict) -> None:
    print(
        f"corpus: {data['corpus']} ({data['files']} files, {data['lines']} lines); "
        f"{data['reps']} reps, medians; edited file: {data['edited_file']}"
    )
    print(f"machine: {data['machine']}")
    print()
    has_ruff = "vs_ruff_all" in data["rows"][0]
    header = "| command | median s | min-max s | CPU s | peak MiB |"
    header += " / ruff ALL | / ruff default |" if has_ruff else ""
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in data["rows"]:
        line = (
            f"| {row['label']} | {row['median_wall_s']:.3f} | {row['min_wall_s']:.3f}-"
            f"{row['max_wall_s']:.3f} | {row['median_cpu_s']:.3f} | {row['peak_mib']:.0f} |"
        )
        if has_ruff:
            line += f" {row['vs_ruff_all']:.2f} | {row['vs_ruff_default']:.2f} |"
        print(line)


def scaling(sizes: list[int], workdir: Path, reps: int, jobs: int, ruff: str | None) -> dict:
    sys.path.insert(0, str(HERE))
    import gen_corpus

    points = []
    for size in sizes:
        corpus = workdir / f"synthetic-{size}"
        marker = corpus / ".generated"
        if not marker.exists():
            shutil.rmtree(corpus, ignore_errors=True)
            files, lines = gen_corpus.generate(corpus, size)
            marker.write_text(f"{files} {lines}\n")
        files, lines = map(int, marker.read_text().split())
        cold = Measurement(
            "synclint cold",
            [*synclint_command(), "check", "--no-cache", "--exit-zero", str(corpus)],
        )
        floor = Measurement(
            "libcst floor",
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--parse-only",
                str(corpus),
                "--jobs",
                str(jobs),
            ],
        )
        measured = [cold, floor]
        if ruff:
            measured.append(
                Measurement(
                    "ruff ALL",
                    [
                        ruff,
                        "check",
                        "--isolated",
                        "--no-cache",
                        "--exit-zero",
                        "--select",
                        "ALL",
                        str(corpus),
                    ],
                )
            )
        for m in measured:
            run_once(m.command)  # warm-up
        for _ in range(reps):
            for m in measured:
                m.samples.append(run_once(m.command))
        point = {"target_lines": size, "files": files, "lines": lines}
        for m in measured:
            point[m.label] = {
                "median_wall_s": round(m.median_wall, 4),
                "peak_mib": round(m.peak_mib, 1),
                "us_per_line": round(m.median_wall / lines * 1e6, 3),
            }
        points.append(point)
        print(json.dumps(point), flush=True)
    return {"machine": machine_description(), "reps": reps, "points": points}


def print_scaling(data: dict) -> None:
    print(f"machine: {data['machine']}; {data['reps']} reps, medians")
    labels = [k for k in data["points"][0] if isinstance(data["points"][0][k], dict)]
    print(
        "| lines | files | "
        + " | ".join(f"{label} s | {label} µs/line" for label in labels)
        + " | synclint peak MiB |"
    )
    print("|---|---|" + "---|---|" * len(labels) + "---|")
    for p in data["points"]:
        cells = " | ".join(
            f"{p[label]['median_wall_s']:.3f} | {p[label]['us_per_line']:.2f}" for label in labels
        )
        print(f"| {p['lines']} | {p['files']} | {cells} | {p['synclint cold']['peak_mib']:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark synclint against libcst and ruff.")
    parser.add_argument("corpus", nargs="?", type=Path, help="directory of Python code to lint")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions per command")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the libcst parse floor")
    parser.add_argument("--ruff", help="ruff executable (default: beside this Python, then PATH)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--scaling", help="comma-separated synthetic sizes, e.g. 10k,100k,1m")
    parser.add_argument("--workdir", type=Path, help="where --scaling keeps generated corpora")
    parser.add_argument("--parse-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parse_only:
        return parse_floor_main(args.parse_only, args.jobs)
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    ruff = find_ruff(args.ruff)
    if args.scaling:
        sys.path.insert(0, str(HERE))
        from gen_corpus import parse_size

        sizes = [parse_size(s) for s in args.scaling.split(",") if s.strip()]
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="synclint-scaling-"))
        data = scaling(sizes, workdir, args.reps, args.jobs, ruff)
        print_scaling(data)
    else:
        if args.corpus is None or not args.corpus.is_dir():
            parser.error("give a corpus directory (or --scaling SIZES)")
        data = benchmark(args.corpus, args.reps, args.jobs, ruff)
        print_table(data)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
