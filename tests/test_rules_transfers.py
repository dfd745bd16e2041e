"""Transfer rules (SYN301-SYN304) and the tensor facts behind them: device and pinned-ness
inference, which reads are host reads, and what stays quiet."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from synclint.engine import lint_source
from synclint.model.file_facts import tensor_facts
from synclint.rules.base import RuleContext
from synclint.settings import AnalysisSettings


def codes(source: str) -> list[tuple[int, str]]:
    return [(d.span.start.line, d.code) for d in lint_source(textwrap.dedent(source))]


def facts_of(source: str, name: str):
    """Tensor facts of the last expression statement ``name`` in ``source``."""
    text = textwrap.dedent(source) + f"\n{name}\n"
    module = cst.parse_module(text)
    ctx = RuleContext("<t>", text, module, AnalysisSettings())
    expr = module.body[-1].body[0].value
    return tensor_facts(ctx).facts(expr, expr)


@pytest.mark.parametrize(
    ("setup", "device", "pinned"),
    [
        ("x = torch.zeros(4)", "cpu", False),
        ("x = torch.zeros(4, pin_memory=True)", "cpu", True),
        ("x = torch.zeros(4).pin_memory()", "cpu", True),
        ('x = torch.zeros(4, device="cuda")', "cuda", None),
        ('x = torch.zeros(4, device=torch.device("cpu"))', "cpu", False),
        ('d = "cuda:1"\nx = torch.ones(2).to(d)', "cuda", None),
        ('y = torch.ones(2, device="cuda")\nx = torch.zeros(3).to(y.device)', "cuda", None),
        ("x = torch.randn(3).cuda().cpu()", "cpu", False),
        ("x = torch.zeros(4, pin_memory=True)[1:3]", "cpu", True),
        ("x = torch.from_numpy(a)", "cpu", False),
        ("x = torch.zeros(4, pin_memory=True).to(torch.float16)", "cpu", True),
    ],
)
def test_device_and_pinned_inference(setup: str, device, pinned) -> None:
    facts = facts_of(f"import torch\n{setup}\n", "x")
    assert facts is not None and (facts.device, facts.pinned) == (device, pinned)


@pytest.mark.parametrize(
    "setup", ["x = model", "def f(x):\n    return x", "x = foo()", "x = [1, 2]"]
)
def test_unknown_values_are_not_tensors(setup: str) -> None:
    assert facts_of(f"import torch\n{setup}\n", "x") is None


def test_h2d_non_blocking_then_item_is_a_blocking_read_not_syn301() -> None:
    assert (
        codes(
            """
        import torch

        def first(labels):
            dev = torch.as_tensor(labels).pin_memory().to("cuda", non_blocking=True)
            return dev.to("cuda", non_blocking=True).item()
        """
        )
        == []
    )


def test_syn301_views_and_metadata_are_not_reads() -> None:
    source = """
    import torch

    def stage(gpu, done):
        host = torch.empty(gpu.shape, pin_memory=True)
        host.copy_(gpu, non_blocking=True)
        done.record()
        n = host.shape[0]
        view = host[0]
        return host.sum()
    """
    assert codes(source) == [(10, "SYN301")]


def test_syn301_data_names_the_copy_and_the_read() -> None:
    (d,) = lint_source(
        textwrap.dedent(
            """
            import torch

            def log(loss):
                host = loss.detach().to("cpu", non_blocking=True)
                return float(host)
            """
        )
    )
    assert d.code == "SYN301"
    assert d.data["tensor"] == "host"
    assert d.data["first"] == {"stream": "default", "line": 5, "access": "write"}
    assert d.data["second"]["line"] == 6


def test_syn302_nn_module_to_is_in_place() -> None:
    assert (
        codes(
            """
        import torch
        from torch import nn

        def build(device):
            m = nn.Linear(2, 2)
            m.to(device)
            m.cuda()
            return m
        """
        )
        == []
    )


def test_syn303_custom_collate_or_unbatched_loader_is_not_judged() -> None:
    base = """
    from torch.utils.data import DataLoader

    def run(model, ds, collate):
        loader = DataLoader(ds, {args})
        for x in loader:
            model(x.cuda(non_blocking=True))
    """
    assert codes(base.format(args="batch_size=8")) == [(7, "SYN303")]
    assert codes(base.format(args="batch_size=8, collate_fn=collate")) == []
    assert codes(base.format(args="batch_size=None")) == []
    assert codes(base.format(args="batch_size=8, pin_memory=True")) == []


def test_syn304_needs_a_pinned_buffer() -> None:
    source = """
    import torch

    def upload(values):
        buf = torch.tensor(values){pin}
        gpu = buf.to("cuda", non_blocking=True)
        buf.zero_()
        return gpu
    """
    assert (7, "SYN304") in codes(source.format(pin=".pin_memory()"))
    assert (7, "SYN304") not in codes(source.format(pin=""))


def test_syn304_says_whether_the_copy_in_flight_reads_or_writes_the_buffer() -> None:
    """A copy back into the pinned buffer after the upload from it, on the same stream, is what
    the host write races with last: the message and data say so, with the copy's line."""
    source = textwrap.dedent(
        """
        import torch

        def step(d, s, i):
            h = torch.empty(4, pin_memory=True)
            with torch.cuda.stream(s):
                d.copy_(h, non_blocking=True)
                h.copy_(d, non_blocking=True)
            h.fill_(i)
        """
    )
    found = [d for d in lint_source(source) if d.code == "SYN304"]
    assert [d.span.start.line for d in found] == [9]
    assert "the `non_blocking=True` copy into it on stream `s` (line 8) may still be writing it" in found[0].message
    assert found[0].data["first"] == {"stream": "s", "line": 8, "access": "write"}
    upload_only = source.replace("        h.copy_(d, non_blocking=True)\n", "")
    found = [d for d in lint_source(upload_only) if d.code == "SYN304"]
    assert "copy from it on stream `s` (line 7) may still be reading it" in found[0].message
    assert found[0].data["first"]["access"] == "read"


def test_syn304_one_finding_per_copy_a_method_refills_around():
    """A pinned buffer refilled field by field before a method's upload, called once per step: one
    finding at the first write, naming the others (which are related locations too); a write
    racing with another copy is a finding of its own."""
    source = textwrap.dedent(
        """
        import torch

        class Stager:
            def __init__(self, n):
                self.buf = torch.empty(3, n, pin_memory=True)
                self.other = torch.empty(n, pin_memory=True)
                self.dev = torch.empty(3, n, device="cuda")
                self.dev_other = torch.empty(n, device="cuda")

            def upload(self, a, b, c, d):
                self.buf[0] = a
                self.buf[1] = b
                self.buf[2] = c
                self.other.zero_()
                self.dev.copy_(self.buf, non_blocking=True)
                self.dev_other.copy_(self.other, non_blocking=True)
        """
    )
    found = sorted((d for d in lint_source(source) if d.code == "SYN304"), key=lambda d: d.span.start.line)
    assert [d.span.start.line for d in found] == [12, 15]
    assert found[0].message.endswith("(2 more host writes in this function race with the same copy: lines 13, 14)")
    assert [r.span.start.line for r in found[0].related] == [16, 13, 14]
    assert "more host write" not in found[1].message


def test_syn301_names_a_copy_destination_by_its_receiver():
    source = textwrap.dedent(
        """
        import torch

        class Offloader:
            def __init__(self, layers):
                self.d2h = torch.cuda.Stream()
                self.host = [torch.empty(8, 4096, pin_memory=True) for _ in range(layers)]

            def offload(self, key, layer, n):
                self.d2h.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(self.d2h):
                    self.host[layer][:, :n].copy_(key.transpose(1, 2), non_blocking=True)
                return self.host[layer].tolist()
        """
    )
    [finding] = [d for d in lint_source(source) if d.code == "SYN301"]
    assert finding.message.startswith("`self.host[layer][:, :n]` is read on the host"), finding.message
