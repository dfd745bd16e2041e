"""On a CUDA device: the PyTorch behaviour the model's newer edges rest on.

Skipped without torch or without a CUDA device (CI has neither); run on the GPU machine with
``pytest tests/test_cuda_semantics.py -m cuda``. Each test names the model code that relies on it.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.cuda
SPIN = int(1e9)  # GPU cycles: about half a second on an H100


def _kernels(fn) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type.name == "CUDA"]


def test_new_empty_launches_no_kernel_new_zeros_does():
    """``KnownValueMethods.tensor_method``: ``x.new_empty`` allocates like ``torch.empty``."""
    x = torch.randn(256, 256, device="cuda")
    assert _kernels(lambda: x.new_empty((2048, 2048))) == []
    assert _kernels(lambda: torch.empty_like(x)) == []
    assert _kernels(lambda: x.new_zeros((2048, 2048))) != []


def test_a_blocking_copy_waits_for_what_its_stream_waited_for():
    """``timeline.done_with``: a blocking ``.cpu()`` on the current stream, after it waited for a
    side stream, returns once the side stream's work is done; without the wait it does not."""
    side = torch.cuda.Stream()
    y = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN)
        y.fill_(7.0)
    torch.cuda.current_stream().wait_stream(side)
    assert y.cpu().item() == 7.0 and side.query()

    z = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN)
        z.fill_(7.0)
    early = z.cpu().item()
    still_running = not side.query()
    torch.cuda.synchronize()
    assert still_running and early == 0.0


def test_current_stream_equals_the_stream_of_the_with_block():
    """``Interpreter._side_stream_tested``: where ``current_stream() != s`` fails, ``s`` is the
    current stream."""
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert not (torch.cuda.current_stream() != side)
    assert torch.cuda.current_stream() != side


def test_cuda_python_device_synchronize_blocks_the_host():
    """``call_args._SYNC_NAME``: cuda-python's ``cudaDeviceSynchronize`` is a host barrier."""
    runtime = pytest.importorskip("cuda.bindings.runtime")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN)
    started = time.perf_counter()
    runtime.cudaDeviceSynchronize()
    assert side.query()
    assert time.perf_counter() - started > 0.05


def test_set_and_as_strided_launch_no_kernel():
    """``api.VIEW_METHODS``: ``set_`` points a tensor at a storage and ``as_strided_`` restrides
    it, in place, with no kernel."""
    storage = torch.randn(4096, device="cuda")

    def point():
        x = torch.empty(0, device="cuda")
        x.set_(storage.untyped_storage(), storage_offset=16, size=(32, 32))
        x.as_strided_((16, 16), (16, 1))

    assert _kernels(point) == []


def test_parameter_shares_a_pending_copy_destination_without_waiting():
    """``api.ALIASING_WRAPPERS``: ``nn.Parameter(t)`` shares ``t``'s storage, launches no kernel
    and does not wait for a copy still filling ``t`` (so it is no host read, SYN301)."""
    src = torch.randn(1 << 20, device="cuda")
    dst = torch.empty(1 << 20, pin_memory=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(SPIN)
    dst.copy_(src, non_blocking=True)
    before = time.perf_counter()
    param = torch.nn.Parameter(dst, requires_grad=True)
    waited = time.perf_counter() - before
    pending = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    assert param.data_ptr() == dst.data_ptr()
    assert pending and waited < 0.05, (pending, waited)
    assert _kernels(lambda: torch.nn.Parameter(dst)) == []


def test_external_stream_of_the_current_handle_is_the_current_stream():
    """``CallSemantics.qualified_call``: an ``ExternalStream`` may wrap the current stream, so its
    identity is uncertain (work on one is ordered with work on the other)."""
    torch.cuda.synchronize()
    with torch.cuda.stream(torch.cuda.Stream()):  # a made stream: handle 0 is a special case
        current = torch.cuda.current_stream()
        wrapped = torch.cuda.ExternalStream(current.cuda_stream)
        torch.cuda._sleep(SPIN)
        assert not wrapped.query()
        wrapped.synchronize()
        assert current.query()


@contextmanager
def _one_rank_group(backend: str, tmp_path):
    """A process group of this process alone (what one GPU allows), its communicator created by
    a first barrier and the device idle; destroyed afterwards."""
    import torch.distributed as dist

    available = dist.is_nccl_available() if backend == "nccl" else dist.is_gloo_available()
    if not available:
        pytest.skip(f"no {backend}")
    bound = {}
    if backend == "nccl":
        bound["device_id"] = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group(
        backend, init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1, **bound
    )
    try:
        dist.barrier()
        torch.cuda.synchronize()
        yield dist
    finally:
        dist.destroy_process_group()


def test_barrier_returns_once_the_current_stream_is_done(tmp_path):
    """``Expressions.barrier``: with NCCL, ``torch.distributed.barrier()`` returns only when the
    current stream's work is done (a one-rank group, which is what one GPU allows)."""
    with _one_rank_group("nccl", tmp_path) as dist:
        y = torch.zeros(1, device="cuda")
        torch.cuda._sleep(SPIN)
        y.fill_(7.0)
        before = time.perf_counter()
        dist.barrier()
        waited = time.perf_counter() - before
        done = torch.cuda.current_stream().query()
        assert done and waited > 0.1, (done, waited)
        torch.cuda._sleep(SPIN)
        work = dist.barrier(async_op=True)
        assert not torch.cuda.current_stream().query()
        work.wait()
        torch.cuda.synchronize()

def test_async_collective_waits_for_the_current_stream_and_its_wait_blocks_no_host(tmp_path):
    """``CallSemantics.collective``: an ``async_op=True`` collective starts once the current
    stream's work so far is done (its input, filled after a spin, is what it gathers), and
    ``work.wait()`` makes the current stream wait without blocking the host (SYN201's premise)."""
    with _one_rank_group("nccl", tmp_path) as dist:
        x = torch.zeros(1 << 20, device="cuda")
        out = torch.zeros(1 << 20, device="cuda")
        torch.cuda.synchronize()
        torch.cuda._sleep(SPIN)
        x.fill_(3.0)
        work = dist.all_gather_into_tensor(out, x, async_op=True)
        before = time.perf_counter()
        work.wait()
        waited = time.perf_counter() - before
        busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        assert busy and waited < 0.1, (busy, waited)
        assert out.min().item() == 3.0  # gathered after the fill, not the zeros before it

def test_a_collective_of_host_tensors_runs_on_no_cuda_stream(tmp_path):
    """``CallSemantics.collective``: with the tensors on the host, gloo runs the collective; it
    neither waits for the busy current CUDA stream nor leaves work on it, and ``work.wait()``
    returns with the result in place (varuna's profiler times exactly that)."""
    with _one_rank_group("gloo", tmp_path) as dist:
        host = torch.ones(1 << 20)
        torch.cuda._sleep(SPIN)
        work = dist.all_reduce(host, async_op=True)
        work.wait()
        busy = not torch.cuda.current_stream().query()
        assert busy and host.min().item() == 1.0, busy
        torch.cuda.synchronize()

def test_stream_synchronize_called_through_the_class_blocks_the_host():
    """``api.UNBOUND_STREAM_SYNCHRONIZE``: ``torch.cuda.Stream.synchronize(s)`` (llumnix's
    spelling) waits for ``s`` like ``s.synchronize()``."""
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN)
    assert not side.query()
    torch.cuda.Stream.synchronize(side)
    assert side.query()


def test_a_stream_is_its_own_context_manager_and_enter_returns_it():
    """``Interpreter.st_With``: ``with torch.Stream(...) as s0:`` makes the new stream current and
    binds it to ``s0``; ``torch.cuda.stream(s)``'s context binds nothing useful."""
    with torch.Stream(device="cuda") as s0:
        assert isinstance(s0, torch.Stream)
        assert torch.cuda.current_stream().stream_id == s0.stream_id
    assert torch.cuda.current_stream().stream_id != s0.stream_id
    side = torch.cuda.Stream()
    with torch.cuda.stream(side) as bound:
        assert bound is None


def test_work_between_capture_begin_and_capture_end_runs_only_at_replay():
    """``Interpreter.capture_by_hand``: what is issued between ``g.capture_begin()`` and
    ``g.capture_end()`` is recorded into the graph, not run: the tensor changes at replay."""
    counter = torch.zeros(1, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        graph.capture_begin()
        counter.add_(1)
        graph.capture_end()
    torch.cuda.synchronize()
    assert counter.item() == 0.0
    graph.replay()
    torch.cuda.synchronize()
    assert counter.item() == 1.0


def test_wait_tensor_waits_for_in_flight_work_only_where_it_is_registered(tmp_path):
    """``api.WAIT_TENSOR``: under ``allow_inflight_collective_as_graph_input_ctx()`` an
    ``async_op=True`` collective registers its work and ``wait_tensor(t)`` waits for it (the
    registry empties); outside, nothing is registered and ``wait_tensor`` finds nothing to wait
    on (the recall the model gives up, for precision)."""
    from torch.distributed import _functional_collectives as funcol

    registry = torch._C._distributed_c10d._get_work_registry_size
    with _one_rank_group("nccl", tmp_path) as dist:
        with funcol.allow_inflight_collective_as_graph_input_ctx():
            x = torch.ones(1 << 20, device="cuda")
            dist.all_reduce(x, async_op=True)
            assert registry() == 1
            torch.ops.c10d_functional.wait_tensor(x)
            assert registry() == 0
        y = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(y, async_op=True)
        assert registry() == 0
        torch.ops.c10d_functional.wait_tensor(y)
        torch.cuda.synchronize()
        assert x.min().item() == 1.0 and y.min().item() == 1.0


def test_entering_an_accelerator_graph_synchronizes_then_captures():
    """``api.GRAPH_OBJECTS``: ``with s, g:`` on a ``torch.accelerator.Graph`` waits for the
    device's work so far (its ``__enter__`` synchronizes), then records the block without
    running it."""
    graph_class = getattr(getattr(torch, "accelerator", None), "Graph", None)
    if graph_class is None:
        pytest.skip("no torch.accelerator.Graph in this torch")
    x = torch.ones(4, device="cuda")
    y = torch.zeros(4, device="cuda")
    side = torch.cuda.Stream()
    g = graph_class()
    torch.cuda._sleep(SPIN)
    before = time.perf_counter()
    with side, g:
        assert time.perf_counter() - before > 0.1  # the spin finished before capture began
        y.copy_(x + 1)
    torch.cuda.synchronize()
    assert y.sum().item() == 0.0
    g.replay()
    torch.cuda.synchronize()
    assert y.sum().item() == 8.0


def test_entering_a_cuda_graph_synchronizes_the_device():
    """``ExpressionEvaluator.context`` (``api.GRAPH_CONTEXTS``): ``with torch.cuda.graph(g):``
    waits for every stream's work so far before the capture begins (its ``__enter__`` calls
    ``torch.cuda.synchronize()``), so a warm-up on a fresh stream is finished by then."""
    side = torch.cuda.Stream()
    static = torch.ones(4, device="cuda")  # allocated first: a first cudaMalloc synchronizes too
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN)
    assert not side.query()  # the warm-up is still running
    before = time.perf_counter()
    with torch.cuda.graph(g):  # (querying a stream inside a capture would invalidate it)
        waited = time.perf_counter() - before
        out = static * 2
    assert waited > 0.1  # the side stream's spin finished before the capture began
    assert side.query()
    g.replay()
    torch.cuda.synchronize()
    assert out.sum().item() == 8.0


def test_a_context_manager_yielding_inside_a_stream_block_runs_the_block_there():
    """``context_managers.halves``: a ``@contextmanager`` that yields inside
    ``with torch.cuda.stream(s):`` makes ``s`` current in the caller's block, and the stream
    before it current again after."""
    side = torch.cuda.Stream()

    @contextmanager
    def on(stream):
        with torch.cuda.stream(stream):
            yield

    before = torch.cuda.current_stream()
    with on(side):
        assert torch.cuda.current_stream() == side
    assert torch.cuda.current_stream() == before


def _prefetched(batches, discipline):
    """A timm-style prefetching generator: each batch is copied on a side stream, the current
    stream waits, and the batch before is yielded. ``discipline``: None (the bug), "record"
    (``record_stream`` on the consumer's stream) or "wait" (the copy stream waits for the
    consumer first, timm's fix)."""
    stream = torch.cuda.Stream()
    first = True
    for cpu in batches:
        if discipline == "wait":
            stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            nxt = cpu.to("cuda", non_blocking=True)
        if not first:
            yield batch  # noqa: F821 - bound on the pass before
        first = False
        torch.cuda.current_stream().wait_stream(stream)
        if discipline == "record":
            nxt.record_stream(torch.cuda.current_stream())
        batch = nxt
    yield batch


@pytest.mark.parametrize("discipline", [None, "record", "wait"])
def test_a_yielded_batch_is_reused_by_the_next_copy_unless_recorded(discipline):
    """``ExpressionEvaluator.ex_Yield`` / ``Interpreter.hand_off`` (SYN102): a batch made on the
    copy stream and yielded goes back to that stream's pool when the consumer drops it; the next
    copy there may take the block while the consumer's queued read of it has not run yet. With
    ``record_stream`` on the consumer's stream, or the copy stream waiting for the consumer, every
    batch is read intact."""
    batches = [torch.full((1 << 20,), float(k + 1)).pin_memory() for k in range(6)]
    torch.cuda.synchronize()
    sums = []
    for x in _prefetched(batches, discipline):
        torch.cuda._sleep(SPIN // 4)  # the consumer's read waits behind this on its stream
        sums.append(x.sum())
    torch.cuda.synchronize()
    got = [s.item() / (1 << 20) for s in sums]
    if discipline is None:
        assert got != [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], got
    else:
        assert got == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], got
