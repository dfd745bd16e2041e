"""SYN101-SYN105 beyond the fixtures: where findings point, what they say, their related locations,
their data, and what their fixes do. Each test is one small program and one claim.

The fixtures (``fixtures/SYN10x``) say *whether* code is flagged; these tests pin down *how*.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from synclint.engine import lint_source
from synclint.fixer import apply_fixes, parses
from synclint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
CROSS_STREAM = ["SYN101", "SYN102", "SYN103", "SYN104", "SYN105"]


def lint(source: str, code: str | None = None):
    found = lint_source(textwrap.dedent(source))
    return [d for d in found if code is None or d.code == code]


def only(source: str, code: str):
    found = lint(source, code)
    assert len(found) == 1, [(d.span.start.line, d.code, d.message) for d in found]
    return found[0]


def related_lines(diagnostic) -> list[int]:
    return sorted(r.span.start.line for r in diagnostic.related)


def fixed(source: str, diagnostic) -> str:
    assert diagnostic.fix is not None, diagnostic.message
    text, applied = apply_fixes(textwrap.dedent(source), [diagnostic.fix])
    assert applied == 1
    assert parses(text)
    return text


# -- SYN101 ---------------------------------------------------------------------------------------

SIDE_READS_MAIN = """\
import torch

def f(x):
    side = torch.cuda.Stream()
    y = x * 2
    with torch.cuda.stream(side):
        z = y + 1
    torch.cuda.current_stream().wait_stream(side)
    return z
"""


def test_syn101_points_at_the_second_access_with_the_first_as_related() -> None:
    d = only(SIDE_READS_MAIN, "SYN101")
    assert (d.span.start.line, related_lines(d)) == (7, [5])


def test_syn101_message_names_tensor_streams_and_lines() -> None:
    d = only(SIDE_READS_MAIN, "SYN101")
    assert "`y`" in d.message and "the default stream (line 5)" in d.message
    assert "stream `side` (line 7)" in d.message


def test_syn101_tensors_from_before_the_function_are_said_to_be() -> None:
    """Several tensors the object held before the method started (Megatron's local copies): the
    message says where they come from, not that the `def` line wrote them."""
    source = """\
import torch


class LocalCopies:
    def __init__(self):
        self._local_send_ops = {}
        self._local_recv_ops = {}
        self._local_copy_stream = torch.cuda.Stream()

    def submit_send_with_id(self, task_id: int, src_tensor: torch.Tensor):
        self._local_send_ops[task_id] = src_tensor

    def submit_recv_with_id(self, task_id: int, dest_tensor: torch.Tensor):
        if not dest_tensor.is_contiguous():
            dest_tensor = dest_tensor.contiguous()
        self._local_recv_ops[task_id] = dest_tensor

    def run(self):
        with torch.no_grad():
            with torch.cuda.stream(self._local_copy_stream):
                for task_id, dst in self._local_recv_ops.items():
                    src = self._local_send_ops[task_id]
                    if src.numel() != dst.numel() or src.element_size() != dst.element_size():
                        raise RuntimeError(f"src=({tuple(src.shape)}, {src.dtype})")
                    dst.copy_(src, non_blocking=True)
        torch.cuda.current_stream().wait_stream(self._local_copy_stream)
        self._local_send_ops.clear()
        self._local_recv_ops.clear()
"""
    d = only(source, "SYN101")
    assert "`src`, `dst` come from before `run` started (line 18), so they are taken to be produced on the default stream" in d.message
    assert "written on the default stream (line 18)" not in d.message


def test_syn101_one_finding_per_statement_that_reads_and_writes() -> None:
    """A statement that reads one tensor and writes another on the side stream (`dst.copy_(src)`),
    or reads and writes the same (`x[:n] = x[:n] + 1`), is one race to fix with one wait: one
    finding, at the statement's first such access, naming both uses (batch 74 had two a line)."""
    source = """\
import torch

def halves(x, dst, src):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x[:4] = x[:4] + 1
        dst.copy_(src.to(dst.device))
    torch.cuda.current_stream().wait_stream(s)
"""
    found = lint(source, "SYN101")
    assert [(d.span.start.line, d.span.start.column) for d in found] == [(6, 9), (7, 9)]
    first, second = found
    assert "`x` is produced on the default stream by the caller (parameter, line 3)" in first.message
    assert "(line 6: `x` read, `x` written)" in first.message
    assert "(line 7: `src` read, `dst` written)" in second.message
    assert related_lines(second) == [3, 3]


def test_syn101_data_describes_both_accesses() -> None:
    d = only(SIDE_READS_MAIN, "SYN101")
    assert d.data["hazard"] == "read-after-write" and d.data["tensor"] == "y"
    assert (d.data["first"]["line"], d.data["first"]["access"]) == (5, "write")
    assert (d.data["second"]["line"], d.data["second"]["access"]) == (7, "read")


def test_syn101_fix_inserts_the_wait_before_the_with_block() -> None:
    d = only(SIDE_READS_MAIN, "SYN101")
    text = fixed(SIDE_READS_MAIN, d)
    assert "    side.wait_stream(torch.cuda.current_stream())\n    with torch.cuda.stream(side):" in text
    assert lint(text, "SYN101") == []


MAIN_READS_SIDE = """\
import torch

class Loader:
    def __init__(self):
        self.copy_stream = torch.cuda.Stream()
        self.buf = torch.empty(1024, device="cuda")

    def fetch(self, host):
        self.copy_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.copy_stream):
            self.buf.copy_(host, non_blocking=True)
        return self.buf.sum()
"""


def test_syn101_main_stream_reading_side_result_is_flagged_at_the_read() -> None:
    d = only(MAIN_READS_SIDE, "SYN101")
    assert (d.span.start.line, related_lines(d)) == (12, [11])


def test_syn101_fix_makes_the_current_stream_wait_before_the_consumer() -> None:
    d = only(MAIN_READS_SIDE, "SYN101")
    text = fixed(MAIN_READS_SIDE, d)
    assert "        torch.cuda.current_stream().wait_stream(self.copy_stream)\n        return self.buf.sum()" in text
    assert lint(text, "SYN101") == []


LOOP_REFILL = """\
import torch

def train(model, loader):
    copy_stream = torch.cuda.Stream()
    staging = torch.empty(64, 128, device="cuda")
    for cpu_batch in loader:
        with torch.cuda.stream(copy_stream):
            staging.copy_(cpu_batch, non_blocking=True)
        torch.cuda.current_stream().wait_stream(copy_stream)
        model(staging)
"""


def test_syn101_loop_carried_refill_is_a_write_after_read_at_the_refill() -> None:
    found = lint(LOOP_REFILL, "SYN101")
    assert {d.span.start.line for d in found} == {8}
    assert "write-after-read" in {d.data["hazard"] for d in found}


def test_syn101_loop_carried_refill_has_no_fix() -> None:
    carried = [d for d in lint(LOOP_REFILL, "SYN101") if d.data["hazard"] == "write-after-read"]
    assert carried and all(d.fix is None for d in carried)


def test_syn101_refill_that_waits_for_the_consumer_is_clean() -> None:
    source = LOOP_REFILL.replace(
        "        with torch.cuda.stream(copy_stream):",
        "        copy_stream.wait_stream(torch.cuda.current_stream())\n        with torch.cuda.stream(copy_stream):",
    )
    assert lint(source, "SYN101") == []


def test_syn101_wait_on_one_branch_does_not_order_the_join() -> None:
    source = MAIN_READS_SIDE.replace(
        "        return self.buf.sum()",
        "        if host.is_pinned():\n"
        "            torch.cuda.current_stream().wait_stream(self.copy_stream)\n"
        "        return self.buf.sum()",
    )
    assert [d.span.start.line for d in lint(source, "SYN101")] == [14]


def test_syn101_wait_on_both_branches_orders_the_join() -> None:
    source = MAIN_READS_SIDE.replace(
        "        return self.buf.sum()",
        "        if host.is_pinned():\n"
        "            torch.cuda.current_stream().wait_stream(self.copy_stream)\n"
        "        else:\n"
        "            self.copy_stream.synchronize()\n"
        "        return self.buf.sum()",
    )
    assert lint(source, "SYN101") == []


@pytest.mark.parametrize(
    "sync",
    [
        "torch.cuda.synchronize()",
        "self.copy_stream.synchronize()",
        "torch.cuda.current_stream().wait_event(self.copy_stream.record_event())",
    ],
)
def test_syn101_any_edge_before_the_read_is_enough(sync: str) -> None:
    source = MAIN_READS_SIDE.replace("        return self.buf.sum()", f"        {sync}\n        return self.buf.sum()")
    assert lint(source, "SYN101") == []


def test_syn101_event_recorded_before_the_work_orders_nothing() -> None:
    source = """\
    import torch

    def f(cpu_w, gpu_w):
        copy_stream = torch.cuda.Stream()
        done = torch.cuda.Event()
        copy_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(copy_stream):
            done.record()
            gpu_w.copy_(cpu_w, non_blocking=True)
        torch.cuda.current_stream().wait_event(done)
        return gpu_w.norm()
    """
    assert [d.span.start.line for d in lint(source, "SYN101")] == [11]


def test_syn101_metadata_is_not_a_read() -> None:
    source = MAIN_READS_SIDE.replace("        return self.buf.sum()", "        return self.buf.shape, self.buf.numel()")
    assert lint(source, "SYN101") == []


def test_syn101_event_handoff_between_methods_is_clean() -> None:
    source = """\
    import torch

    class Swapper:
        def __init__(self):
            self.stream = torch.cuda.Stream()
            self.done = torch.cuda.Event()
            self.cache = torch.zeros(8, 16, device="cuda")

        def swap_in(self, host):
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                self.cache.copy_(host, non_blocking=True)
                self.done.record()

        def attend(self, q):
            torch.cuda.current_stream().wait_event(self.done)
            return q @ self.cache.t()
    """
    assert lint(source, "SYN101") == []


def test_syn101_missing_event_wait_between_methods_is_flagged_in_the_consumer() -> None:
    source = """\
    import torch

    class Swapper:
        def __init__(self):
            self.stream = torch.cuda.Stream()
            self.cache = torch.zeros(8, 16, device="cuda")

        def swap_in(self, host):
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                self.cache.copy_(host, non_blocking=True)
            torch.cuda.current_stream().wait_stream(self.stream)

        def refill(self, host):
            with torch.cuda.stream(self.stream):
                self.cache.copy_(host, non_blocking=True)

        def attend(self, q):
            return q @ self.cache.t()
    """
    assert 19 in {d.span.start.line for d in lint(source, "SYN101")}


# -- SYN102 ---------------------------------------------------------------------------------------

DEL_BEFORE_JOIN = """\
import torch

class Stats:
    def __init__(self):
        self.side = torch.cuda.Stream()

    def run(self, x):
        centered = x - x.mean()
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            variance = centered.pow(2).mean()
        del centered
        scratch = torch.empty_like(x)
        torch.cuda.current_stream().wait_stream(self.side)
        return variance, scratch
"""


def test_syn102_points_at_the_use_with_allocation_and_release_related() -> None:
    d = only(DEL_BEFORE_JOIN, "SYN102")
    assert (d.span.start.line, related_lines(d)) == (11, [8, 12])


def test_syn102_message_names_allocation_stream_use_and_release() -> None:
    d = only(DEL_BEFORE_JOIN, "SYN102")
    assert "`centered`" in d.message and "the default stream" in d.message
    assert "stream `self.side`" in d.message and "line 12" in d.message


def test_syn102_fix_records_the_using_stream_before_the_del() -> None:
    d = only(DEL_BEFORE_JOIN, "SYN102")
    text = fixed(DEL_BEFORE_JOIN, d)
    assert "        centered.record_stream(self.side)\n        del centered" in text
    assert lint(text, "SYN102") == []


def test_syn102_join_before_the_del_is_clean() -> None:
    source = DEL_BEFORE_JOIN.replace(
        "        del centered\n        scratch = torch.empty_like(x)\n        torch.cuda.current_stream().wait_stream(self.side)\n",
        "        torch.cuda.current_stream().wait_stream(self.side)\n        del centered\n        scratch = torch.empty_like(x)\n",
    )
    assert lint(source, "SYN102") == []


HANDED_OFF = """\
import torch

class Mover:
    def __init__(self):
        self.h2d = torch.cuda.Stream()

    def move(self, cpu_batch):
        with torch.cuda.stream(self.h2d):
            gpu = torch.empty(cpu_batch.shape, device="cuda")
            gpu.copy_(cpu_batch, non_blocking=True)
        torch.cuda.current_stream().wait_stream(self.h2d)
        return gpu
"""


def test_syn102_tensor_handed_to_the_caller_is_reported_at_the_return() -> None:
    d = only(HANDED_OFF, "SYN102")
    assert d.span.start.line == 12 and d.data["how"] == "handed-off"


def test_syn102_hand_off_fix_records_the_current_stream_before_the_return() -> None:
    d = only(HANDED_OFF, "SYN102")
    text = fixed(HANDED_OFF, d)
    assert "        gpu.record_stream(torch.cuda.current_stream())\n        return gpu" in text
    assert lint(text, "SYN102") == []


def test_syn102_fsdp_style_held_reference_is_clean() -> None:
    source = """\
    import torch

    class Handle:
        def __init__(self):
            self.ag = torch.cuda.Stream()
            self.full = None

        def unshard(self, shard):
            self.ag.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.ag):
                self.full = shard.repeat(4)
            torch.cuda.current_stream().wait_stream(self.ag)

        def forward(self, x):
            return x @ self.full
    """
    assert lint(source, "SYN102") == []


# -- SYN103 ---------------------------------------------------------------------------------------

SIBLINGS = """\
import torch

class Pair:
    def __init__(self):
        self.a = torch.cuda.Stream()
        self.b = torch.cuda.Stream()

    def run(self, h, w):
        main = torch.cuda.current_stream()
        self.a.wait_stream(main)
        self.b.wait_stream(main)
        with torch.cuda.stream(self.a):
            h.mul_(2)
        with torch.cuda.stream(self.b):
            out = h @ w
        main.wait_stream(self.a)
        main.wait_stream(self.b)
        return out
"""


def test_syn103_points_at_the_second_access_and_relates_access_and_producer() -> None:
    d = only(SIBLINGS, "SYN103")
    assert d.span.start.line == 15
    assert 13 in related_lines(d) and len(d.related) == 2


def test_syn103_is_not_also_reported_as_syn101() -> None:
    assert lint(SIBLINGS, "SYN101") == []


def test_syn103_message_names_the_common_producer() -> None:
    d = only(SIBLINGS, "SYN103")
    assert "both streams waited for the default stream" in d.message
    assert d.data["producer"]["stream"] and d.fix is None


def test_syn103_chain_after_the_write_is_clean() -> None:
    source = SIBLINGS.replace(
        "        with torch.cuda.stream(self.b):",
        "        self.b.wait_stream(self.a)\n        with torch.cuda.stream(self.b):",
    )
    assert lint(source, "SYN103") == [] and lint(source, "SYN101") == []


def test_syn103_siblings_that_only_read_are_clean() -> None:
    assert lint(SIBLINGS.replace("h.mul_(2)", "g = h * 2"), "SYN103") == []


# -- SYN104 ---------------------------------------------------------------------------------------

SELF_WAIT = """\
import torch

class Prefetcher:
    def __init__(self):
        self.copy_stream = torch.cuda.Stream()

    def preload(self, cpu_batch):
        with torch.cuda.stream(self.copy_stream):
            self.copy_stream.wait_stream(torch.cuda.current_stream())
            self.batch = cpu_batch.cuda(non_blocking=True)
"""


def test_syn104_points_at_the_no_op_call() -> None:
    d = only(SELF_WAIT, "SYN104")
    assert d.span.start.line == 9 and "no-op" in d.message


def test_syn104_fix_captures_the_stream_before_the_block() -> None:
    d = only(SELF_WAIT, "SYN104")
    text = fixed(SELF_WAIT, d)
    assert "        producer_stream = torch.cuda.current_stream()\n        with torch.cuda.stream(self.copy_stream):" in text
    assert "self.copy_stream.wait_stream(producer_stream)" in text
    assert lint(text, "SYN104") == []


def test_syn104_fix_of_a_wait_on_an_event_records_it_on_the_captured_stream() -> None:
    """`s.wait_event(torch.cuda.current_stream().record_event())` inside `s`'s block: the fix
    records the event on the stream captured before the block (it once passed the stream itself
    to `wait_event`, which takes an event). An event recorded earlier in the block gets no fix."""
    source = """\
    import torch

    def gather(table, ids):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            side.wait_event(torch.cuda.current_stream().record_event())
            rows = table.index_select(0, ids)
        torch.cuda.current_stream().wait_stream(side)
        return rows
    """
    d = only(source, "SYN104")
    assert "record the event on it" in d.message
    text = fixed(source, d)
    assert "side.wait_event(producer_stream.record_event())" in text
    assert lint(text, "SYN104") == []
    recorded_first = source.replace(
        "side.wait_event(torch.cuda.current_stream().record_event())",
        "done = torch.cuda.Event()\n            done.record()\n            side.wait_event(done)",
    )
    d = only(recorded_first, "SYN104")
    assert d.fix is None and "capture the intended stream before the block" in d.message


def test_syn104_record_stream_of_the_allocating_stream_is_flagged() -> None:
    source = """\
    import torch

    def move(cpu_batch):
        h2d = torch.cuda.Stream()
        with torch.cuda.stream(h2d):
            g = cpu_batch.cuda(non_blocking=True)
            g.record_stream(torch.cuda.current_stream())
        torch.cuda.current_stream().wait_stream(h2d)
        return g
    """
    assert [d.span.start.line for d in lint(source, "SYN104")] == [7]


def test_syn104_record_stream_in_the_consumer_block_is_clean() -> None:
    source = """\
    import torch

    def consume(batch, w):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            batch.record_stream(torch.cuda.current_stream())
            out = batch @ w
        torch.cuda.current_stream().wait_stream(side)
        out.record_stream(torch.cuda.current_stream())
        return out
    """
    assert lint(source, "SYN104") == []


def test_syn104_wait_for_another_stream_inside_the_block_is_clean() -> None:
    source = SELF_WAIT.replace(
        "            self.copy_stream.wait_stream(torch.cuda.current_stream())",
        "            self.copy_stream.wait_stream(torch.cuda.default_stream())",
    )
    assert lint(source, "SYN104") == []


def test_syn104_inner_block_of_nested_blocks_is_the_current_stream() -> None:
    source = """\
    import torch

    def two_level(x):
        outer = torch.cuda.Stream()
        inner = torch.cuda.Stream()
        with torch.cuda.stream(outer):
            with torch.cuda.stream(inner):
                inner.wait_stream(torch.cuda.current_stream())
                outer.wait_stream(torch.cuda.current_stream())
    """
    assert [d.span.start.line for d in lint(source, "SYN104")] == [8]


# -- SYN105 ---------------------------------------------------------------------------------------


def test_syn105_points_at_the_creation_in_the_loop() -> None:
    source = """\
    import torch

    def run(batches):
        for b in batches:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                b.cuda(non_blocking=True).sum()
    """
    d = only(source, "SYN105")
    assert d.span.start.line == 5 and d.fix is None


def test_syn105_creation_before_the_loop_is_clean() -> None:
    source = """\
    import torch

    def run(batches):
        s = torch.cuda.Stream()
        for b in batches:
            with torch.cuda.stream(s):
                b.cuda(non_blocking=True).sum()
    """
    assert lint(source, "SYN105") == []


def test_syn105_while_loop_and_comprehension_in_a_loop_are_flagged() -> None:
    source = """\
    import torch

    def run(n, k):
        i = 0
        while i < n:
            s = torch.cuda.Stream()
            pool = [torch.cuda.Stream() for _ in range(k)]
            with torch.cuda.stream(s):
                torch.cuda.current_stream().wait_stream(pool[0])
            i += 1
    """
    assert sorted(d.span.start.line for d in lint(source, "SYN105")) == [6, 7]


def test_syn105_unused_stream_in_a_loop_is_not_flagged() -> None:
    source = """\
    import torch

    def benchmark(sizes):
        for size in sizes:
            s = torch.cuda.Stream()
            torch.cuda.synchronize()
    """
    assert lint(source, "SYN105") == []


# -- pages and fixtures ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", CROSS_STREAM)
def test_rule_page_structure_and_examples(code: str) -> None:
    text = (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8")
    assert text.startswith(f"# {code}: {all_rules()[code].name}\n")
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections == [
        "What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Options",
        "References",
    ]
    example, use_instead = re.findall(r"```python\n(.*?)```", text, re.S)
    assert code in {d.code for d in lint_source(example)}
    assert code not in {d.code for d in lint_source(use_instead)}


@pytest.mark.parametrize("code", CROSS_STREAM)
def test_at_least_ten_fixtures_each_way(code: str) -> None:
    folder = ROOT / "fixtures" / code
    assert len(list(folder.glob("bad_*.py"))) >= 10
    assert len(list(folder.glob("ok_*.py"))) >= 10


@pytest.mark.parametrize("code", CROSS_STREAM)
def test_bad_fixtures_contain_a_trigger(code: str) -> None:
    """The text prefilter skips files without any trigger: every bad fixture must have one."""
    rule = all_rules()[code]
    for path in (ROOT / "fixtures" / code).glob("bad_*.py"):
        assert any(t in path.read_text(encoding="utf-8") for t in rule.triggers), path.name


# -- false-positive classes found on real projects --------------------------------------------------

#: Classes found in the second corpus run that the model does not handle yet (benchmarks/triage.md).
#: Strict: when one is fixed its test passes, fails as XPASS, and its name must be removed here.
OPEN_FP_CLASSES: set[str] = set()
FP_CLASSES = [
    pytest.param(
        p,
        id=p.stem,
        marks=[pytest.mark.xfail(strict=True, reason="open false-positive class")] if p.stem in OPEN_FP_CLASSES else [],
    )
    for p in sorted((ROOT / "benchmarks" / "triage" / "fp_classes").glob("*.py"))
]


@pytest.mark.parametrize("path", FP_CLASSES)
def test_corpus_false_positive_class_is_clean(path: Path) -> None:
    """Each file is correct code cut down from a real finding judged a false positive."""
    found = [d for d in lint_source(path.read_text(encoding="utf-8"), str(path)) if d.code.startswith("SYN1")]
    assert found == [], [(d.span.start.line, d.code) for d in found]


def test_syn102_fix_names_the_tensor_where_the_fix_goes() -> None:
    """The fix must name a variable still bound to the freed tensor at the insertion point (here
    the attribute was rebound by the inlined helper; the local still holds it)."""
    from synclint.fixer import apply_fixes

    source = (ROOT / "fixtures/SYN102/bad_prefetcher_rebinds_without_record.py").read_text(encoding="utf-8")
    [finding] = [d for d in lint_source(source, "p.py") if d.code == "SYN102"]
    assert finding.fix is not None and "batch.record_stream(" in finding.fix.edits[0].content
    fixed, _ = apply_fixes(source, [finding.fix])
    assert [d.code for d in lint_source(fixed, "p.py") if d.code == "SYN102"] == []


# -- true-positive classes found on real projects ---------------------------------------------------

#: Real hazards from the corpus triage, cut down; each marks its expected findings with `# error:`.
TP_CLASSES = sorted((ROOT / "benchmarks" / "triage" / "tp_classes").glob("*.py"))
#: Found in run 1/2 but no longer reported in run 3 (recall regressions; benchmarks/triage.md).
LOST_TP_CLASSES: set[str] = set()


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p,
            id=p.stem,
            marks=[pytest.mark.xfail(strict=True, reason="recall regression")] if p.stem in LOST_TP_CLASSES else [],
        )
        for p in TP_CLASSES
    ],
)
def test_corpus_true_positive_class_is_reported(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = {
        (number, code)
        for number, line in enumerate(text.splitlines(), start=1)
        for code in re.findall(r"#\s*error:\s*(SYN\d{3})", line)
    }
    found = {(d.span.start.line, d.code) for d in lint_source(text, str(path)) if d.code.startswith("SYN1")}
    assert expected and found == expected


def test_one_lifetime_finding_per_use_of_tensors_made_at_one_line() -> None:
    """A loop makes a tensor at one line on each pass; the one made on the first pass dies at the
    next pass's rebinding, the last one when the function returns. Both are the same bug at the
    same use: one SYN102 (two before round 28, one per release)."""
    path = ROOT / "fixtures/SYN102/bad_chunk_input_made_each_pass_of_a_loop.py"
    found = [d for d in lint_source(path.read_text(encoding="utf-8"), str(path)) if d.code == "SYN102"]
    assert [d.span.start.line for d in found] == [21]


def test_an_attribute_bound_to_a_fresh_tensor_is_named_by_the_attribute():
    finding = only(
        """
        import torch

        class Calculator:
            def __init__(self, model):
                self.model = model
                self.pos = None

            def _warm_up(self):
                stream = torch.cuda.Stream()
                with torch.cuda.stream(stream):
                    self.energy = self.model(self.pos)

            def calculate(self, pos):
                self.pos = pos.clone().detach().requires_grad_(True)
                self._warm_up()
                return self.energy
        """,
        "SYN101",
    )
    assert finding.message.startswith("`self.pos` is written on the default stream (line 15)")


PREFETCHER = """\
import torch

def batches(loader, side):
    it = iter(loader)
    with torch.cuda.stream(side):
        current = next(it).to("cuda", non_blocking=True)
    for host in it:
        with torch.cuda.stream(side):
            upcoming = host.to("cuda", non_blocking=True)
        torch.cuda.current_stream().wait_stream(side)
        yield current
        current = upcoming
"""


def test_syn102_tensors_yielded_under_one_name_are_one_finding() -> None:
    # The first batch and the loop's next ones are allocated apart, but handed out by one `yield`
    # under one name: one missing `record_stream`, named as it is yielded, both allocations related.
    d = only(PREFETCHER, "SYN102")
    assert d.span.start.line == 11
    assert d.message.startswith("`current` is allocated on stream `side` and yielded at line 11")
    assert "call `current.record_stream(torch.cuda.current_stream())`" in d.message
    assert related_lines(d) == [6, 9]


def test_syn102_two_tensors_returned_together_are_two_findings() -> None:
    # `return input, target`: two tensors, each needing its own `record_stream`.
    source = """\
    import torch

    class Prefetcher:
        def __init__(self, loader):
            self.loader = iter(loader)
            self.stream = torch.cuda.Stream()
            self.preload()

        def preload(self):
            x, y = next(self.loader)
            with torch.cuda.stream(self.stream):
                self.next_input = x.cuda(non_blocking=True)
                self.next_target = y.cuda(non_blocking=True)

        def next(self):
            torch.cuda.current_stream().wait_stream(self.stream)
            input = self.next_input
            target = self.next_target
            self.preload()
            return input, target
    """
    found = lint(source, "SYN102")
    assert sorted(d.message.split("`")[1] for d in found) == ["input", "target"]
    assert {d.span.start.line for d in found} == {20}
