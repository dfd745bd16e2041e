"""The stream timeline model's API, queried directly (rules are tested through fixtures).

Each test builds the model of a small program and asks it what rules ask: which ops exist, what
orders what, what the host has seen, which hazards and lifetimes were found.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from synclint.model import FunctionModel, OpKind, build_module_model
from synclint.settings import AnalysisSettings


def model_of(source: str, name: str, settings: AnalysisSettings | None = None) -> FunctionModel:
    module = cst.parse_module(textwrap.dedent(source))
    models = {f.name: f for f in build_module_model(module, settings).functions}
    return models[name]


def ops(function: FunctionModel, kind: OpKind):
    return [op for op in function.ops if op.kind == kind]


def test_ops_run_on_the_stream_current_when_called():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
            z = y + 1
        """,
        "f",
    )
    access = ops(f, OpKind.ACCESS)
    assert [op.stream.label for op in access] == ["stream `s`", "the default stream"]
    assert access[0].block_stream is not None and access[1].block_stream is None


def test_wait_stream_orders_later_work_only():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
            a = y + 1
            torch.cuda.current_stream().wait_stream(s)
            b = y + 1
        """,
        "f",
    )
    produce, before, after = ops(f, OpKind.ACCESS)
    assert not f.ordered_before(produce, before)
    assert f.ordered_before(produce, after)
    assert [h.second.op for h in f.hazards if h.storage.label == "y"] == [before]


def test_event_record_and_wait_order_what_was_recorded():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            e = torch.cuda.Event()
            with torch.cuda.stream(s):
                y = x * 2
                e.record()
                late = x * 3
            torch.cuda.current_stream().wait_event(e)
            a = y + 1
            b = late + 1
        """,
        "f",
    )
    wait = ops(f, OpKind.WAIT_EVENT)[0]
    assert wait.recorded_by == tuple(ops(f, OpKind.RECORD_EVENT))
    assert {h.storage.label for h in f.hazards if h.second.stream.is_default} == {"late"}


def test_host_synchronization_is_seen_by_the_host_and_orders_every_stream():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
            torch.cuda.synchronize()
            z = y + 1
        """,
        "f",
    )
    produce = ops(f, OpKind.ACCESS)[0]
    sync = ops(f, OpKind.HOST_SYNC)[0]
    assert sync.sync_kind == "device"
    assert f.host_has_seen(produce, ops(f, OpKind.ACCESS)[-1])
    assert not [h for h in f.hazards if h.storage.label == "y"]


def test_blocking_read_synchronizes_the_current_stream_only():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
            n = x.sum().item()
            z = y + 1
        """,
        "f",
    )
    assert [op.sync_kind for op in ops(f, OpKind.HOST_SYNC)] == ["blocking-read"]
    assert [h.storage.label for h in f.hazards if h.second.stream.is_default] == ["y"]


def test_an_edge_on_one_branch_does_not_order_the_join():
    f = model_of(
        """
        import torch
        def f(x, flag):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
            if flag:
                torch.cuda.current_stream().wait_stream(s)
            z = y + 1
        """,
        "f",
    )
    assert [h.storage.label for h in f.hazards if h.second.stream.is_default] == ["y"]


def test_loops_are_walked_twice_so_loop_carried_hazards_show():
    f = model_of(
        """
        import torch
        def f(batches):
            s = torch.cuda.Stream()
            buf = torch.zeros(8, device="cuda")
            for b in batches:
                with torch.cuda.stream(s):
                    buf.copy_(b, non_blocking=True)
                torch.cuda.current_stream().wait_stream(s)
                out = buf * 2
        """,
        "f",
    )
    assert {op.iteration for op in f.ops} == {0, 1}
    war = [h for h in f.hazards if h.kind == "write-after-read"]
    assert war and war[0].second.op.iteration == 1 and war[0].second.stream.label == "stream `s`"


def test_views_share_storage_and_metadata_is_not_an_access():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
            v = y.view(-1)
            n = y.shape[0]
            z = v + n
        """,
        "f",
    )
    hazard = [h for h in f.hazards if h.second.stream.is_default]
    assert [h.storage.label for h in hazard] == ["y"]
    assert cst.Module([]).code_for_node(hazard[0].second.node) == "v + n"


def test_class_attribute_handoff_between_methods():
    source = """
        import torch
        class Prefetcher:
            def __init__(self, loader):
                self.loader = iter(loader)
                self.stream = torch.cuda.Stream()
            def preload(self):
                batch = next(self.loader)
                with torch.cuda.stream(self.stream):
                    self.batch = batch.cuda(non_blocking=True)
            def next(self):
                {wait}
                return self.batch.float()
    """
    racy = model_of(source.format(wait="pass"), "Prefetcher.next")
    assert [(h.first.stream.label, h.storage.label) for h in racy.hazards] == [
        ("stream `self.stream`", "self.batch")
    ]
    ordered = model_of(
        source.format(wait="torch.cuda.current_stream().wait_stream(self.stream)"), "Prefetcher.next"
    )
    assert ordered.hazards == []


def test_private_helpers_are_walked_at_their_call_sites():
    source = """
        import torch
        class Optimizer:
            def __init__(self):
                self.side = torch.cuda.Stream()
                self.params = torch.zeros(16, device="cuda")
            def _update(self, grads):
                with torch.cuda.stream(self.side):
                    self.params.add_(grads)
            def step(self, grads):
                self.side.wait_stream(torch.cuda.current_stream())
                self._update(grads)
                torch.cuda.current_stream().wait_stream(self.side)
    """
    module = cst.parse_module(textwrap.dedent(source))
    names = [f.name for f in build_module_model(module).functions]
    assert "Optimizer._update" not in names  # judged where it is called, not on its own
    step = model_of(source, "Optimizer.step")
    assert step.hazards == []
    assert any(op.stream.label == "stream `self.side`" and op.kind == OpKind.ACCESS for op in step.ops)


def test_lifetime_of_a_tensor_freed_while_another_stream_uses_it():
    source = """
        import torch
        def f(n):
            side = torch.cuda.Stream()
            tmp = torch.ones(n, device="cuda")
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                out = tmp.sum()
            {fix}
            del tmp
            torch.cuda.current_stream().wait_stream(side)
            return out
    """
    racy = model_of(source.format(fix="pass"), "f")
    [hazard] = racy.lifetime_hazards
    assert (hazard.storage.label, hazard.use.stream.label, hazard.how) == ("tmp", "stream `side`", "freed")
    assert isinstance(hazard.release.node, cst.Del)
    recorded = model_of(source.format(fix="tmp.record_stream(side)"), "f")
    assert recorded.lifetime_hazards == []


def test_non_blocking_device_to_host_copy_is_pending_at_the_host_read():
    f = model_of(
        """
        import torch
        def f(x):
            host = torch.empty(4, pin_memory=True)
            host.copy_(x, non_blocking=True)
            early = host.tolist()
            torch.cuda.current_stream().synchronize()
            late = host.tolist()
        """,
        "f",
    )
    copy = ops(f, OpKind.COPY)[0]
    assert (copy.copy.direction, copy.copy.non_blocking) == ("d2h", True)
    early, late = ops(f, OpKind.HOST_READ)
    assert [a.op for a in early.pending] == [copy]
    assert late.pending == ()


def test_parameter_origin_setting_turns_off_caller_stream_production():
    source = """
        import torch
        def f(x, s):
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                y = x * 2
            torch.cuda.current_stream().wait_stream(s)
            return y
    """
    assert model_of(source, "f").hazards == []
    # `s` is a parameter stream: it may be the caller's current stream, so without an ordering
    # against the current stream nothing marks it as a side stream and nothing is reported.
    unordered = "\n".join(line for line in source.splitlines() if "s.wait_stream" not in line)
    assert model_of(unordered, "f").hazards == []
    racy = """
        import torch
        S = None
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x * 2
    """
    assert [h.storage.label for h in model_of(racy, "f").hazards] == ["x"]
    quiet = AnalysisSettings(parameter_origin="synchronized")
    assert model_of(racy, "f", quiet).hazards == []


def test_accelerator_wrappers_resolve_like_torch_cuda():
    f = model_of(
        """
        from deepspeed.accelerator import get_accelerator
        def f(x):
            acc = get_accelerator()
            s = acc.Stream()
            with acc.stream(s):
                y = x * 2
            acc.current_stream().wait_stream(s)
            acc.synchronize()
        """,
        "f",
    )
    assert [op.kind for op in f.ops if op.kind != OpKind.ENTRY][:2] == [OpKind.CREATE_STREAM, OpKind.ACCESS]
    assert ops(f, OpKind.WAIT_STREAM) and ops(f, OpKind.HOST_SYNC)[0].sync_kind == "device"


def test_graph_capture_marks_ops_and_does_not_execute_them():
    f = model_of(
        """
        import torch
        def f(model, x):
            s = torch.cuda.Stream()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.stream(s):
                with torch.cuda.graph(g):
                    out = model(x)
                    torch.cuda.synchronize()
            out.zero_()
        """,
        "f",
    )
    assert ops(f, OpKind.GRAPH_CAPTURE)
    # Entering the capture synchronizes the device (`torch.cuda.graph.__enter__`); the
    # synchronization written inside it is captured.
    assert [op.in_graph_capture for op in ops(f, OpKind.HOST_SYNC)] == [False, True]
    assert f.hazards == []


def test_configured_synchronizing_methods_end_the_use():
    """`synchronizing-functions` may name methods (`Pool.store_tensor`): calls to them are host
    syncs. (Unconfigured, the call is opaque: it may synchronize, so its use of the tensor leaves
    no lifetime hazard either way; see the l2 class in benchmarks/triage.md.)"""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks/triage/fp_classes/l2_imported_helper_copies_synchronously.py"
    module = cst.parse_module(path.read_text(encoding="utf-8"))

    def syncs(settings=None):
        [on_put] = [f for f in build_module_model(module, settings).functions if f.name == "Receiver.on_put"]
        return [op.sync_kind for op in ops(on_put, OpKind.HOST_SYNC)]

    plain = syncs()
    configured = syncs(AnalysisSettings(synchronizing_functions=("TensorMemoryPool.store_tensor",)))
    assert len(configured) == len(plain) + 1
    assert not any(f.lifetime_hazards for f in build_module_model(module).functions)


def test_a_use_by_an_opaque_call_leaves_no_lifetime_hazard_but_a_known_op_does():
    """A tensor received on a side stream and handed to a method of an object that is not a tensor
    (`self.pool.store_tensor(t)`, which may copy it with a blocking copy) before it is dropped is
    no lifetime hazard; read by a tensor operation on the default stream, it is."""
    source = """
        import torch
        class Receiver:
            def __init__(self):
                self.recv_stream = torch.cuda.Stream()
            def on_put(self, shape):
                with torch.cuda.stream(self.recv_stream):
                    tensor = torch.ones(shape, device="cuda")
                {use}
                tensor = None
    """
    opaque = model_of(source.replace("{use}", "addr = self.pool.store_tensor(tensor)"), "Receiver.on_put")
    known = model_of(source.replace("{use}", "total = tensor.sum()"), "Receiver.on_put")
    assert opaque.lifetime_hazards == []
    assert [h.storage.label for h in known.lifetime_hazards] == ["tensor"]


def test_in_loop_counts_the_functions_own_loops_only():
    """A helper walked from a caller's loop is not itself "in a loop" (SYN105 judges its body)."""
    f = model_of(
        """
        import torch
        class Bench:
            def _run_one(self, size):
                torch.cuda.synchronize()
                stream = torch.cuda.Stream()
                with torch.cuda.stream(stream):
                    torch.ones(size, device="cuda")
            def run(self, sizes):
                for size in sizes:
                    self._run_one(size)
        """,
        "Bench.run",
    )
    [create] = {id(op.node): op for op in ops(f, OpKind.CREATE_STREAM)}.values()
    assert create.inlined and not create.in_loop


def test_exact_type_tests_in_the_model_see_every_instance():
    """The model tests some node types with ``type(x) is cst.Name`` instead of ``isinstance`` (libcst's
    classes are ABCs, slow to test against). That is the same test only while libcst defines no
    subclass of them: check it, so an upgrade that adds one fails here instead of analysing less."""
    exact = [cst.Name, cst.Attribute, cst.Call, cst.Tuple, cst.List, cst.ListComp,
             cst.UnaryOperation, cst.Not, cst.BinaryOperation, cst.SimpleStatementLine,
             cst.Import, cst.ImportFrom, cst.Integer, cst.Float, cst.SimpleString]
    assert [c.__name__ for c in exact if c.__subclasses__()] == []


# -- a helper's summary run stands for its own analysis ---------------------------------------------


def _shape(model) -> list:
    """What a module model says, without object identities: per scope, its ops (kind, line of
    the node, stream, clocks), hazards and truncation."""
    out = []
    for function in model.functions:
        ops = [
            (op.kind, type(op.node).__name__, op.stream.key, op.seq, sorted(op.vc.items()),
             sorted(op.host_vc.items()), len(op.reads), len(op.writes))
            for op in function.ops
        ]
        hazards = [(h.first.op.index, h.second.op.index, h.storage.label) for h in function.hazards]
        lifetime = [(h.release.index, h.storage.label) for h in function.lifetime_hazards]
        out.append((function.name, ops, hazards, lifetime, function.truncated))
    return out


HELPERS = '''
import torch

def sync_all():
    torch.cuda.synchronize()

def current():
    return torch.cuda.current_stream()

def uses_both(x):
    s = current()
    with torch.cuda.stream(s):
        y = x * 2
    sync_all()
    return y.sum().item()

def later_helper_used_first(x):
    z = not_yet_summarised(x)
    return z

def not_yet_summarised(x):
    torch.cuda.synchronize()
    return x

def plain(x):
    return x + 1

def caller(x):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = plain(x)
    later_helper_used_first(y)
    return uses_both(y)
'''


def test_summary_runs_stand_for_the_helpers_own_analysis(monkeypatch):
    from pathlib import Path

    from synclint.model.scopes import _Builder

    root = Path(__file__).resolve().parent.parent
    texts = [HELPERS] + [p.read_text() for p in sorted((root / "fixtures").rglob("*.py"))]
    reused = []
    original = _Builder._summary_run

    def counting(self, node):
        done = original(self, node)
        reused.append(done is not None)
        return done

    with_reuse = []
    monkeypatch.setattr(_Builder, "_summary_run", counting)
    for text in texts:
        with_reuse.append(_shape(build_module_model(cst.parse_module(text), source=text)))
    monkeypatch.setattr(_Builder, "_summary_run", lambda self, node: None)
    for text, expected in zip(texts, with_reuse):
        assert _shape(build_module_model(cst.parse_module(text), source=text)) == expected
    # Both answers were exercised: most helpers' runs stood, and some had looked up a summary
    # that changed after them (`later_helper_used_first`).
    assert sum(reused) > 10 and not all(reused)


def test_a_blocking_copy_completes_what_its_stream_had_waited_for():
    f = model_of(
        """
        import torch
        def f(x):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                y = x.cuda(non_blocking=True) * 2
            torch.cuda.current_stream().wait_stream(s)
            host = y.sum().cpu()
            z = host + 1
        """,
        "f",
    )
    side_work = [op for op in ops(f, OpKind.ACCESS) if op.stream.key != "<default>"]
    last = f.ops[-1]
    assert side_work and all(f.host_has_seen(op, last) for op in side_work)


def test_names_that_say_they_synchronize():
    from synclint.model.call_args import _SYNC_NAME

    says = ["cuda_sync", "synchronize_all", "time_synchronized", "cudaStreamSynchronize",
            "cudaDeviceSynchronize", "deviceSynchronize", "timeSynced", "sync"]
    does_not = ["async_op", "AsyncWork", "isAsync", "syncer", "synchronizer", "SyncBatchNorm",
                "cudaMemsetAsync", "all_reduce_async"]
    assert [n for n in says if not _SYNC_NAME.search(n)] == []
    assert [n for n in does_not if _SYNC_NAME.search(n)] == []


def test_a_module_moved_to_the_gpu_is_no_tensor_copy():
    f = model_of(
        """
        import torch
        def f(model, weights):
            model.cuda().eval()
            w = weights.cuda()
        """,
        "f",
    )
    copies = ops(f, OpKind.COPY)
    assert [c.reads[0].label for c in copies] == ["weights"]


def test_new_empty_allocates_without_a_kernel():
    f = model_of(
        """
        import torch
        def f(x):
            out = x.new_empty((4, 4))
            full = x.new_zeros((4, 4))
        """,
        "f",
    )
    writes = [s.label for op in ops(f, OpKind.ACCESS) for s in op.writes]
    assert "out" not in writes and "full" in writes


def test_a_context_manager_that_yields_inside_a_stream_block_runs_the_callers_block_there():
    f = model_of(
        """
        import contextlib
        import torch

        @contextlib.contextmanager
        def on(stream):
            current = torch.cuda.current_stream()
            try:
                with torch.cuda.stream(stream):
                    yield
            finally:
                current.wait_stream(stream)

        def f(x):
            s1 = torch.cuda.Stream()
            s2 = torch.cuda.Stream()
            with on(s1):
                a = x * 2
                with on(s2):
                    b = x * 3
                c = x * 4
            d = x * 5
        """,
        "f",
    )
    access = ops(f, OpKind.ACCESS)
    assert [op.stream.label for op in access] == [
        "stream `s1`", "stream `s2`", "stream `s1`", "the default stream"
    ]
    assert [op.block_stream.label for op in access[:3]] == ["stream `s1`", "stream `s2`", "stream `s1`"]
    assert access[3].block_stream is None
    # The exit half ran with the entry half's `current`: the default stream waited for s1.
    waits = ops(f, OpKind.WAIT_STREAM)
    assert [(w.stream.label, w.target.label) for w in waits][-1] == ("the default stream", "stream `s1`")


def test_a_block_that_returns_inside_a_context_managers_stream_block_closes_it():
    f = model_of(
        """
        import contextlib
        import torch

        @contextlib.contextmanager
        def on(stream):
            with torch.cuda.stream(stream):
                yield

        def f(x, flag):
            s = torch.cuda.Stream()
            if flag:
                with on(s):
                    return x * 2
            y = x * 3
        """,
        "f",
    )
    access = ops(f, OpKind.ACCESS)
    assert [op.stream.label for op in access] == ["stream `s`", "the default stream"]
    assert access[1].block_stream is None


def test_only_a_straight_path_to_one_yield_splits_a_context_manager():
    from synclint.model.context_managers import WithEntry, WithExit, halves

    def function(body: str) -> cst.FunctionDef:
        source = "@contextlib.contextmanager\ndef cm(s):\n" + textwrap.indent(textwrap.dedent(body), "    ")
        return cst.parse_module(source).body[0]

    before, after = halves(function("a()\nwith torch.cuda.stream(s):\n    b()\n    yield\n    c()\nd()\n"))
    assert [type(m).__name__ for m in before] == ["SimpleStatementLine", "WithEntry", "SimpleStatementLine"]
    assert [type(m).__name__ for m in after] == ["SimpleStatementLine", "WithExit", "SimpleStatementLine"]
    assert type(after[1]) is WithExit and type(before[1]) is WithEntry and after[1].entry is before[1]
    assert halves(function("if s:\n    yield\nelse:\n    yield\n")) is None
    assert halves(function("if s:\n    with torch.cuda.stream(s):\n        yield\n")) is None
    assert halves(function("with torch.cuda.stream(s):\n    yield\nyield\n")) is None
    assert halves(function("for _ in range(2):\n    yield\n")) is None


def test_next_of_an_iterator_binds_an_element_and_runs_nothing():
    """``batch = next(it)`` is what ``for batch in it`` binds, not a kernel on the current stream
    that writes ``batch``."""
    f = model_of(
        """
        import torch
        def f(it, s, device, flag):
            batch = next(it)
            with torch.cuda.stream(s):
                out = batch.to(device, non_blocking=flag)
            return out
        """,
        "f",
    )
    writes = [w.label for op in ops(f, OpKind.ACCESS) for w in op.writes]
    assert "batch" not in writes
    assert [op.kind for op in f.ops if op.stream.key == "<default>" and op.kind == OpKind.ACCESS] == []


def test_a_stream_chosen_by_configuration_is_the_side_stream_where_it_waited():
    """``stream = side`` (after a wait) on one arm, the current stream on the other: a block on
    ``stream`` runs on the side stream, which waited wherever it was chosen."""
    source = """
        import torch
        def f(x, overlap):
            side = torch.cuda.Stream()
            y = x * 2
            if overlap:
                stream = side
                WAIT
            else:
                stream = torch.cuda.current_stream()
            with torch.cuda.stream(stream):
                z = y + 1
            torch.cuda.current_stream().wait_stream(stream)
            return z
        """
    waited = model_of(source.replace("WAIT", "stream.wait_stream(torch.cuda.current_stream())"), "f")
    assert [op.stream.key for op in ops(waited, OpKind.ACCESS)] == ["<default>", "side@1"]
    assert waited.hazards == []
    unwaited = model_of(source.replace("WAIT", "pass"), "f")
    assert [(h.first.storage.label, h.second.op.stream.key) for h in unwaited.hazards] == [("y", "side@1")]


def test_no_fixture_is_too_deep_to_model():
    """A scope whose walk recursed without end is dropped as too deep (``FunctionModel.truncated``),
    which hides its findings: no fixture is that deep, so a truncated one is a model bug (a test
    that asks itself, as ``t = torch.cuda.Stream() if t else None`` once did)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures"
    truncated = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue  # SYN001's fixtures
        for function in build_module_model(module, source=text).functions:
            if function.truncated:
                truncated.append(f"{path.relative_to(root)}: {function.name}")
    assert truncated == []
