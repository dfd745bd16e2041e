"""Every fix of the event, timing, transfer and API rules: apply it, re-lint, the finding is gone
and the result still parses (and, where it matters, other findings did not appear)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from synclint.diagnostics import Applicability, Diagnostic, Fix
from synclint.engine import lint_source
from synclint.fixer import LineIndex

try:  # the shared fixer, when present; the fallback keeps these tests about the rules' edits
    from synclint.fixer import apply_fixes
except ImportError:  # pragma: no cover
    apply_fixes = None


def _apply(text: str, fix: Fix) -> str:
    if apply_fixes is not None:
        return apply_fixes(text, [fix])[0]
    index = LineIndex(text)
    edits = sorted(
        ((index.offset(e.span.start), index.offset(e.span.end), e.content) for e in fix.edits),
        reverse=True,
    )
    for start, end, content in edits:
        text = text[:start] + content + text[end:]
    return text


def fix_once(source: str, code: str) -> tuple[str, list[Diagnostic]]:
    """Apply the fix of every ``code`` finding (one at a time, re-linting in between)."""
    text = textwrap.dedent(source)
    before = [d for d in lint_source(text) if d.code == code]
    assert before, f"expected a {code} finding to fix"
    for _ in range(len(before)):
        found = [d for d in lint_source(text) if d.code == code and d.fix is not None]
        if not found:
            break
        text = _apply(text, found[0].fix)
        cst.parse_module(text)  # the fix must leave code that parses
    return text, before


def assert_fixed(source: str, code: str, applicability: Applicability, expect: list[str]) -> str:
    text, before = fix_once(source, code)
    assert all(d.fix is not None and d.fix.applicability is applicability for d in before)
    after = lint_source(text)
    assert [d for d in after if d.code == code] == [], text
    for snippet in expect:
        assert snippet in text, text
    return text


def test_syn202_adds_enable_timing_to_constructors() -> None:
    out = assert_fixed(
        """
        import torch

        class Timer:
            def __init__(self):
                self.start = torch.cuda.Event()
                self.end = torch.cuda.Event(blocking=True)

            def stop(self):
                self.end.record()
                self.end.synchronize()
                return self.start.elapsed_time(self.end)
        """,
        "SYN202",
        Applicability.SAFE,
        [
            "torch.cuda.Event(enable_timing=True)",
            "torch.cuda.Event(blocking=True, enable_timing=True)",
        ],
    )
    assert lint_source(out) == []


def test_syn202_turns_literal_false_into_true() -> None:
    assert_fixed(
        """
        import torch
        a, b = torch.cuda.Event(False), torch.cuda.Event(enable_timing=False)
        a.record(); b.record(); b.synchronize()
        print(a.elapsed_time(b))
        """,
        "SYN202",
        Applicability.SAFE,
        ["torch.cuda.Event(True)", "torch.cuda.Event(enable_timing=True)"],
    )


def test_syn202_no_fix_for_record_event() -> None:
    source = textwrap.dedent(
        """
        import torch
        s = torch.cuda.current_stream()
        a = s.record_event()
        b = s.record_event()
        b.synchronize()
        print(a.elapsed_time(b))
        """
    )
    (found,) = [d for d in lint_source(source) if d.code == "SYN202"]
    assert found.fix is None


def test_syn302_assigns_the_result_back() -> None:
    assert_fixed(
        """
        import torch

        def prepare(x: torch.Tensor, device):
            x.to(device, non_blocking=True)
            return x
        """,
        "SYN302",
        Applicability.UNSAFE,
        ["x = x.to(device, non_blocking=True)"],
    )


def test_syn302_no_fix_for_a_chained_receiver() -> None:
    source = "import torch\nx = torch.ones(3)\nx.float().cuda()\n"
    (found,) = [d for d in lint_source(source) if d.code == "SYN302"]
    assert found.fix is None


def test_syn302_leaves_a_fresh_factory_tensor_alone() -> None:
    """``torch.zeros(1).cuda()`` creates the CUDA context: it is done for what the move does."""
    source = "import torch\ntorch.zeros(1).cuda()\ntorch.ones(3).to('cuda:0')\n"
    assert [d for d in lint_source(source) if d.code == "SYN302"] == []


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        ("torch.cuda.Event(enable_timings=True)", "torch.cuda.Event(enable_timing=True)"),
        ("torch.cuda.Stream(priorty=-1)", "torch.cuda.Stream(priority=-1)"),
        ("torch.cuda.event(blocking=True)", "torch.cuda.Event(blocking=True)"),
        ("s.wait_stream(torch.cuda.current_stream)", "s.wait_stream(torch.cuda.current_stream())"),
    ],
)
def test_syn501_fixes_unambiguous_misuse(bad: str, good: str) -> None:
    assert_fixed(
        f"import torch\ns = torch.cuda.Stream()\nx = {bad}\n", "SYN501", Applicability.SAFE, [good]
    )


def test_syn501_no_fix_when_the_keyword_is_ambiguous_or_far() -> None:
    source = "import torch\ne = torch.cuda.Event(timing=True)\n"
    (found,) = [d for d in lint_source(source) if d.code == "SYN501"]
    assert found.fix is None


def test_syn201_replaces_wait_with_synchronize() -> None:
    out = assert_fixed(
        """
        import torch

        def fetch(sampled, copy_stream):
            host = torch.empty(sampled.shape, pin_memory=True)
            done = torch.cuda.Event()
            with torch.cuda.stream(copy_stream):
                host.copy_(sampled, non_blocking=True)
                done.record()
            done.wait()
            return host.tolist()
        """,
        "SYN201",
        Applicability.UNSAFE,
        ["    done.synchronize()\n"],
    )
    # The synchronization also settles the host read the wait was meant to protect.
    assert [d.code for d in lint_source(out)] == []


def test_syn201_wait_event_becomes_event_synchronize() -> None:
    assert_fixed(
        """
        import torch

        def offload(act, side):
            host = torch.empty(act.shape, pin_memory=True)
            ready = torch.cuda.Event()
            with torch.cuda.stream(side):
                host.copy_(act, non_blocking=True)
                ready.record(side)
            torch.cuda.current_stream().wait_event(ready)
            return host.numpy().copy()
        """,
        "SYN201",
        Applicability.UNSAFE,
        ["    ready.synchronize()\n"],
    )


def test_syn201_no_fix_for_work_wait() -> None:
    source = textwrap.dedent(
        """
        import time
        import torch
        import torch.distributed as dist

        def timed(grad):
            grad = grad.cuda()
            start = time.time()
            work = dist.all_reduce(grad, async_op=True)
            work.wait()
            return time.time() - start
        """
    )
    (found,) = [d for d in lint_source(source) if d.code == "SYN201"]
    assert found.fix is None


def test_syn203_inserts_end_synchronize() -> None:
    out = assert_fixed(
        """
        import torch

        def bench(fn):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            return start.elapsed_time(end)
        """,
        "SYN203",
        Applicability.UNSAFE,
        ["    end.synchronize()\n    return start.elapsed_time(end)"],
    )
    assert lint_source(out) == []


def test_syn205_inserts_device_synchronize_with_the_files_torch_alias() -> None:
    out = assert_fixed(
        """
        import time
        import torch as th

        def bench(n):
            a = th.randn(n, n, device="cuda")
            th.cuda.synchronize()
            t0 = time.perf_counter()
            b = a @ a
            t1 = time.perf_counter()
            return b, t1 - t0
        """,
        "SYN205",
        Applicability.UNSAFE,
        ["    th.cuda.synchronize()\n    t1 = time.perf_counter()"],
    )
    assert lint_source(out) == []


def test_syn301_inserts_the_copy_streams_synchronize() -> None:
    out = assert_fixed(
        """
        import torch

        def to_numpy(logits, copy_stream):
            preds = logits.argmax(-1)
            copy_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(copy_stream):
                host = preds.to("cpu", non_blocking=True)
            preds.record_stream(copy_stream)
            return host.numpy().copy()
        """,
        "SYN301",
        Applicability.UNSAFE,
        ["    copy_stream.synchronize()\n    return host.numpy().copy()"],
    )
    assert [d.code for d in lint_source(out)] == []


def test_syn301_default_stream_copy_uses_device_synchronize() -> None:
    assert_fixed(
        """
        import torch

        def log_step(loss, writer):
            loss_cpu = loss.detach().to("cpu", non_blocking=True)
            writer.add_scalar("loss", loss_cpu.item())
        """,
        "SYN301",
        Applicability.UNSAFE,
        ["    torch.cuda.synchronize()\n    writer.add_scalar"],
    )


def test_syn304_inserts_synchronize_before_the_refill() -> None:
    out = assert_fixed(
        """
        import torch

        def upload_and_reset(values):
            pinned = torch.tensor(values).pin_memory()
            on_gpu = pinned.to("cuda", non_blocking=True)
            pinned.zero_()
            return on_gpu
        """,
        "SYN304",
        Applicability.UNSAFE,
        ["    torch.cuda.synchronize()\n    pinned.zero_()"],
    )
    assert lint_source(out) == []


def test_sync_fixes_are_not_offered_in_one_line_suites() -> None:
    source = textwrap.dedent(
        """
        import torch

        def upload_and_reset(values):
            pinned = torch.tensor(values).pin_memory()
            on_gpu = pinned.to("cuda", non_blocking=True)
            with torch.no_grad(): pinned.zero_()
            return on_gpu
        """
    )
    (found,) = [d for d in lint_source(source) if d.code == "SYN304"]
    assert found.fix is None


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MY_FIXTURES = sorted(
    p for p in FIXTURES.rglob("bad_*.py") if p.parent.name[:4] in {"SYN2", "SYN3", "SYN5"}
)


@pytest.mark.parametrize("path", MY_FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in MY_FIXTURES])
def test_every_fix_offered_on_the_fixtures_parses_and_removes_its_finding(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for diagnostic in lint_source(text, str(path)):
        if diagnostic.fix is None or diagnostic.code[:4] not in {"SYN2", "SYN3", "SYN5"}:
            continue
        fixed = _apply(text, diagnostic.fix)
        cst.parse_module(fixed)
        before = sum(d.code == diagnostic.code for d in lint_source(text, str(path)))
        after = sum(d.code == diagnostic.code for d in lint_source(fixed, str(path)))
        assert after < before, f"{diagnostic.code} fix did not remove its finding:\n{fixed}"
