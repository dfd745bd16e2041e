"""Event and timing rules (SYN201-SYN206): the tricky correct patterns stay quiet, the findings say
where and why, and the settings they depend on are honoured."""

from __future__ import annotations

import textwrap

import pytest

from synclint.engine import lint_source
from synclint.settings import AnalysisSettings


def found(source: str, code: str, settings: AnalysisSettings | None = None) -> list:
    return [d for d in lint_source(textwrap.dedent(source), settings=settings) if d.code == code]


WAIT_THEN_ITEM = """
import torch

def reduce_on_side(x, side):
    done = torch.cuda.Event()
    with torch.cuda.stream(side):
        total = x.sum()
        done.record()
    torch.cuda.current_stream().wait_event(done)
    return total.item()
"""


def test_syn201_item_after_wait_is_correct() -> None:
    assert found(WAIT_THEN_ITEM, "SYN201") == []


def test_syn201_points_at_the_wait_and_names_the_read() -> None:
    (d,) = found(
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
    )
    assert d.span.start.line == 10
    assert "the host reads `host` on line 11" in d.message
    assert [r.span.start.line for r in d.related] == [11]


def test_syn201_wait_at_end_of_side_block_orders_nothing() -> None:
    (d,) = found(
        """
        import torch

        def consume(x):
            side = torch.cuda.Stream()
            ev = torch.cuda.Event()
            x = x * 2
            ev.record()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                y = x + 1
                ev.wait()
            torch.cuda.current_stream().wait_stream(side)
            return y.sum().item()
        """,
        "SYN201",
    )
    assert d.span.start.line == 12 and "orders nothing" in d.message


def test_syn203_sync_in_one_branch_does_not_cover() -> None:
    source = textwrap.dedent("""
    import torch

    def maybe(fn, verbose):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        if verbose:
            end.synchronize()
        return start.elapsed_time(end)
    """)
    (d,) = found(source, "SYN203")
    assert d.data["recorded"] == 9
    assert (
        found(
            source.replace("    if verbose:\n        end.synchronize()", "    end.synchronize()"),
            "SYN203",
        )
        == []
    )


def test_syn203_user_synchronizing_helper_counts() -> None:
    source = """
    import torch
    from mylib import flush_device

    def bench(fn):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        flush_device()
        return start.elapsed_time(end)
    """
    assert len(found(source, "SYN203")) == 1
    settings = AnalysisSettings(synchronizing_functions=("mylib.flush_device",))
    assert found(source, "SYN203", settings) == []


def test_syn204_record_after_wait_is_named() -> None:
    (d,) = found(
        """
        import torch

        def f(x, side):
            ready = torch.cuda.Event()
            with torch.cuda.stream(side):
                ready.wait()
                y = x * 2
            ready.record()
            return y
        """,
        "SYN204",
    )
    assert "before it is recorded (line 9)" in d.message and d.data["recorded_after"]


def test_syn205_pure_cpu_region_is_quiet_and_cuda_region_is_not() -> None:
    cpu = textwrap.dedent("""
    import time
    import torch

    def f(texts, tok):
        t0 = time.perf_counter()
        ids = torch.tensor([tok(t) for t in texts])
        return ids, time.perf_counter() - t0
    """)
    assert found(cpu, "SYN205") == []
    gpu = cpu.replace(
        "torch.tensor([tok(t) for t in texts])", "torch.tensor([tok(t) for t in texts]).cuda() * 2"
    )
    (d,) = found(gpu, "SYN205")
    assert d.data["clock"] == "time.perf_counter" and d.data["start"] == 6


def test_syn205_blocking_read_before_end_counts_as_sync() -> None:
    assert (
        found(
            """
        import time
        import torch

        def step(model, x):
            t0 = time.time()
            out = model(x.cuda())
            loss = out.sum().cpu()
            return loss, time.time() - t0
        """,
            "SYN205",
        )
        == []
    )


DEVICE_LOOP = """
import time
import torch

def profile(layer, repeats):
    for device in DEVICES:
        layer = layer.to(device)
        x = torch.ones(8, 8).to(device)
        for _ in range(repeats):
            start = time.perf_counter()
            y = layer(x)
            if TEST:
                torch.cuda.synchronize()
            print(time.perf_counter() - start)
"""


@pytest.mark.parametrize(
    "devices, test, flagged",
    [
        ('["cuda", "cpu"]', 'device == "cuda"', False),
        ('("cpu", "cuda")', '"cuda" == device', False),
        ('{"cuda", "cpu", "mps"}', 'device == "cuda"', False),
        # A second GPU named otherwise fails the test and still runs there.
        ('["cuda", "cuda:1"]', 'device == "cuda"', True),
        # Values not written out: the test says nothing about where the others run.
        ("available_devices()", 'device == "cuda"', True),
        ('["cuda", other]', 'device == "cuda"', True),
        # Not a test for the GPU at all.
        ('["cuda", "cpu"]', 'device != "cuda"', True),
        ('["cuda", "cpu"]', 'device == "cpu"', True),
    ],
)
def test_syn205_synchronize_only_where_a_written_device_is_cuda(devices, test, flagged) -> None:
    source = DEVICE_LOOP.replace("DEVICES", devices).replace("TEST", test)
    assert bool(found(source, "SYN205")) is flagged


HOST_UPLOAD_LOOP = """
import time
import torch

def train(model, steps, batch):
    BINDING
    start = time.time()
    for step in range(steps):
        UPLOAD
        model(x).sum().backward()
        print(step, time.time() - start)
        start = time.time()
"""


@pytest.mark.parametrize(
    "binding, upload, flagged",
    [
        # Made on the host once and uploaded the blocking way on every step: each step waits.
        ("host = torch.ones(64, 64)", "x = host.to(0)", False),
        ("host = torch.ones(64, 64)", "x = host.cuda()", False),
        # Rebound to its upload: on the device from the second step on, nothing waits.
        ("x = torch.ones(64, 64)", "x = x.to(0)", True),
        # Of unknown device (a parameter): maybe on the device already.
        ("host = batch", "x = host.to(0)", True),
        # A non-blocking upload does not wait.
        ("host = torch.ones(64, 64).pin_memory()", "x = host.to(0, non_blocking=True)", True),
    ],
)
def test_syn205_blocking_upload_of_a_host_tensor_paces_the_loop(binding, upload, flagged) -> None:
    source = HOST_UPLOAD_LOOP.replace("BINDING", binding).replace("UPLOAD", upload)
    assert bool(found(source, "SYN205")) is flagged


@pytest.mark.parametrize(
    "callee, flagged",
    [
        ("train", False),
        ("train_one_epoch", False),
        ("evaluate", False),
        ("validate_model", False),
        ("train_loop_func", False),
        ("run_epoch", False),
        # Not named for a pass over the data: taken to launch work and return.
        ("forward_step", True),
        ("retrain_head", True),
        ("compute", True),
    ],
)
def test_syn205_a_function_running_a_whole_loop_may_synchronize(callee, flagged) -> None:
    source = """
    import time
    import torch

    def run(model, loader, fn):
        x = torch.ones(8, device="cuda")
        start = time.time()
        CALLEE(model, loader, x)
        return time.time() - start
    """.replace("CALLEE", callee)
    assert bool(found(source, "SYN205")) is flagged


def test_syn206_work_on_parameter_stream_is_not_judged() -> None:
    source = textwrap.dedent("""
    import torch

    def f(stream, x):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.cuda.stream(stream):
            y = x.cuda() * 2
        end.record()
        torch.cuda.synchronize()
        return y, start.elapsed_time(end)
    """)
    assert found(source, "SYN206") == []
    created = source.replace("def f(stream, x):", "def f(x):\n    stream = torch.cuda.Stream()")
    (d,) = found(created, "SYN206")
    assert d.data == {"recorded_on": "default", "work_on": "stream"}
