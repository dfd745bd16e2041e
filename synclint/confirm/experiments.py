"""The experiments themselves; they run inside the worker subprocess and import torch.

What makes a race observable (measured, see docs/cuda-stream-semantics.md): hold the stream that must
go first back with ``torch.cuda._sleep`` just before the flagged line enqueues its work, so the
unsynchronized side overtakes it; warm kernels and the caching allocator up first (first launches and
first allocations synchronize implicitly); vary the data per trial (a fresh seed) so stale memory
holds different values; and judge against a reference run of the same seed in which synclint
synchronizes the device after every line of the file (so nothing in it overlaps). The delayed run is
synchronized the same way outside the window from the held-back line to the flagged one, so a race
elsewhere in the file is not taken for this finding's.

Every method returns a dict of plain data (see :func:`new_result`); nothing here prints except
progress lines.
"""

from __future__ import annotations

import linecache
import re
import sys
import time
import traceback
import weakref
from types import FrameType
from typing import Any, Callable, Iterable

import torch

from synclint.confirm.instrument import LineWatch, Listener, same_file
from synclint.confirm.runner import PROGRESS_PREFIX
from synclint.confirm.targets import TargetError, TargetRunner, seed_everything

MAX_DELAYS_PER_RUN = 8  # loops: hold back only the first executions, keep trials short
MAX_EXIT_SNAPSHOTS = 3
MAX_SNAPSHOT_ELEMENTS = 1 << 26
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def progress(message: str) -> None:
    print(PROGRESS_PREFIX + message, file=sys.stderr, flush=True)


def new_result(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "ok",
        "method": spec["method"],
        "trials": [],
        "hits": {},
        "reached": False,
        "notes": [],
        "error": None,
    }


# -- small device helpers -------------------------------------------------------------------------


def resolve_stream(expr: str | None, frame: FrameType) -> "torch.cuda.Stream":
    """The stream a finding names (``s``, ``self.copy_stream``, ``default``), seen from ``frame``."""
    if not expr or expr in ("current", "current stream"):
        return torch.cuda.current_stream()
    lowered = expr.lower()
    if "default" in lowered or lowered in ("main", "main stream", "legacy"):
        return torch.cuda.default_stream()
    if "current_stream" in expr:
        return torch.cuda.current_stream()
    if _DOTTED.match(expr):
        head, *rest = expr.split(".")
        value = frame.f_locals.get(head, frame.f_globals.get(head))
        for attribute in rest:
            value = getattr(value, attribute, None)
        if isinstance(value, torch.cuda.Stream):
            return value
    return torch.cuda.current_stream()


def capturing() -> bool:
    """Inside ``torch.cuda.graph(...)`` capture synclint must neither synchronize (that alone
    fails the capture, SYN502's very hazard) nor add kernels to the graph."""
    return bool(torch.cuda.is_current_stream_capturing())


def settle() -> None:
    """Wait for all queued device work, unless a graph is being captured."""
    if not capturing():
        torch.cuda.synchronize()


def hold_back(stream: "torch.cuda.Stream", cycles: int) -> None:
    """Enqueue a spin kernel on ``stream``: work enqueued after it on that stream starts late."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(cycles)


def warm_up(cycles: int) -> None:
    """Load the sleep kernel and create the context before anything is timed or raced."""
    torch.cuda.init()
    side = torch.cuda.Stream()
    hold_back(torch.cuda.current_stream(), 1000)
    hold_back(side, 1000)
    torch.cuda.synchronize()


def tensors_in(namespace: dict[str, Any]) -> dict[str, "torch.Tensor"]:
    """Tensors bound to names (and inside small lists, tuples and dicts) of one namespace."""
    found: dict[str, torch.Tensor] = {}
    for name, value in namespace.items():
        if name.startswith("__") and name != "<return>":
            continue
        if isinstance(value, torch.Tensor):
            found[name] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 16:
            for index, item in enumerate(value):
                if isinstance(item, torch.Tensor):
                    found[f"{name}[{index}]"] = item
        elif isinstance(value, dict) and len(value) <= 16:
            for key, item in value.items():
                if isinstance(item, torch.Tensor):
                    found[f"{name}[{key!r}]"] = item
    return found


def snapshot(tensors: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
    """Host copies of ``tensors`` once all queued work is done. On the host, so that keeping them
    does not change which blocks the caching allocator hands out in the next run."""
    settle()
    copies = {}
    for name, tensor in tensors.items():
        if tensor.layout != torch.strided or tensor.numel() > MAX_SNAPSHOT_ELEMENTS:
            continue
        copies[name] = tensor.detach().to("cpu", copy=True)
    return copies


def _number(value: "torch.Tensor") -> str:
    item = value.item()
    return f"{item:.6g}" if isinstance(item, float) else str(item)


def first_mismatch(got: "torch.Tensor", want: "torch.Tensor") -> tuple[int, str, str, int] | None:
    """(index, got value, wanted value, how many differ) of the first element that differs."""
    if got.numel() == 0:
        return None
    got_flat = got.reshape(-1)
    want_flat = want.to(got.device).reshape(-1)
    if got.is_floating_point() or got.is_complex():
        same = torch.isclose(got_flat, want_flat, rtol=1e-4, atol=1e-5, equal_nan=True)
    else:
        same = got_flat == want_flat
    if bool(same.all()):
        return None
    wrong = ~same
    index = int(wrong.nonzero()[0].item())
    return index, _number(got_flat[index]), _number(want_flat[index]), int(wrong.sum().item())


def difference(name: str, got: "torch.Tensor", want: "torch.Tensor") -> str | None:
    """A sentence naming the first element where the delayed run's ``got`` differs from ``want``."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return (
            f"`{name}` had shape {tuple(got.shape)} where the synchronized reference run had "
            f"{tuple(want.shape)}"
        )
    mismatch = first_mismatch(got, want)
    if mismatch is None:
        return None
    index, seen, wanted, count = mismatch
    return (
        f"`{name}` held {seen} where the synchronized reference run held {wanted} "
        f"(element {index}; {count} of {got.numel()} elements differ)"
    )


def compare_exits(delayed: list[dict], reference: list[dict]) -> list[str]:
    differences = []
    for got, want in zip(delayed, reference):
        for name in sorted(set(got) & set(want), key=lambda n: (n.startswith("<"), n)):
            said = difference(name, got[name], want[name])
            if said:
                differences.append(said)
    return differences


# -- one run under the line watch -----------------------------------------------------------------


class Probe(Listener):
    """Delays, synchronizations and snapshots around the flagged lines, per the job's method."""

    def __init__(self, spec: dict[str, Any], delayed: bool, reference: bool) -> None:
        self.spec = spec
        self.delayed = delayed
        self.reference = reference
        self.delays = 0
        self.exits: list[dict[str, torch.Tensor]] = []
        self.observations: list[str] = []
        self.line_text = {
            n: linecache.getline(spec["file"], n) for n in range(spec["second"][0], spec["second"][1] + 1)
        }
        # lifetime: the tensors read by the delayed use, watched (weakly) for their block's reuse
        self._watched: list[tuple[weakref.ref, int, int, str]] = []
        self._pending: torch.cuda.Event | None = None
        self._window_open = False
        self._window_closed = False

    @staticmethod
    def ranges(spec: dict[str, Any]) -> dict[str, tuple[int, int]]:
        named = {"second": tuple(spec["second"])}
        if spec.get("first"):
            named["first"] = tuple(spec["first"])
        for index, lines in enumerate(spec.get("delay") or []):
            named[f"delay{index}"] = tuple(lines)
        return named

    def _words_on_flagged_line(self) -> set[str]:
        return set(_IDENTIFIER.findall(" ".join(self.line_text.values())))

    # -- hooks ---------------------------------------------------------------------------

    def entering(self, name: str, frame: FrameType) -> None:
        method = self.spec["method"]
        if name.startswith("delay") or (name == "second" and not self.spec.get("delay")):
            self._window_open, self._window_closed = True, False
        if (
            self.delayed
            and name.startswith("delay")
            and self.delays < MAX_DELAYS_PER_RUN
            and not capturing()
        ):
            stream = resolve_stream(self.spec.get("delay_stream"), frame)
            if method == "lifetime":
                self._watch_operands(frame, stream)
            hold_back(stream, self.spec["sleep_cycles"])
            self.delays += 1
        if name == "second" and method == "host-read" and len(self.observations) < 4:
            self._compare_host_now(frame, "read", "arrived after synchronizing")

    def finished(self, frame: FrameType, lineno: int) -> None:
        if self.reference:
            settle()  # the reference run: no two lines of the file overlap
            return
        if not self.delayed:
            return
        # The delayed run is left unsynchronized only from the held-back line to the flagged one
        # (lifetime hazards play out after the use, so for them up to the end), so that a race
        # elsewhere in the file cannot be taken for this one.
        if not self._window_open or (self._window_closed and self.spec["method"] == "delay"):
            settle()

    def left(self, name: str, frame: FrameType) -> None:
        method = self.spec["method"]
        if name == "second":
            self._window_closed = True
        if (
            name == "second"
            and method == "lifetime"
            and self._watched
            and self._pending is None
            and not capturing()
        ):
            self._pending = torch.cuda.Event()
            self._pending.record(self._use_stream)
        if name == "second" and method == "host-wait" and len(self.observations) < 4 and not capturing():
            for word in sorted(self._words_on_flagged_line()):
                value = frame.f_locals.get(word, frame.f_globals.get(word))
                if isinstance(value, torch.cuda.Event) and not value.query():
                    self.observations.append(
                        f"after line {self.spec['second'][0]} "
                        f"the host went on while event `{word}` was still pending "
                        "(event.query() was False): the wait did not block the host"
                    )
            self._compare_host_now(frame, "could read", "held after synchronizing")

    def line(self, frame: FrameType) -> None:
        if self._pending is not None and self._watched and not capturing() and not self._pending.query():
            self._scan_reuse(frame)

    def frame_exit(self, frame: FrameType, value: Any) -> None:
        if self.spec["method"] in ("delay", "lifetime") and len(self.exits) < MAX_EXIT_SNAPSHOTS:
            namespace = dict(frame.f_locals)
            namespace["<return>"] = value
            self.exits.append(snapshot(tensors_in(namespace)))

    # -- method details ------------------------------------------------------------------

    def _compare_host_now(self, frame: FrameType, seen_word: str, later_word: str) -> None:
        """Copy the host tensors now, synchronize, and report any that changed meanwhile: only
        device work still in flight can have written them."""
        if capturing():
            return
        host = {
            n: t
            for n, t in tensors_in(dict(frame.f_locals)).items()
            if t.device.type == "cpu" and t.layout == torch.strided
        }
        before = {n: t.detach().clone() for n, t in host.items()}
        torch.cuda.synchronize()
        for name in sorted(host):
            mismatch = first_mismatch(before[name], host[name].detach())
            if mismatch is not None:
                index, seen, final, count = mismatch
                self.observations.append(
                    f"at line {self.spec['second'][0]} the host {seen_word} {seen} in `{name}` "
                    f"where {final} {later_word} (element {index}; {count} of "
                    f"{before[name].numel()} elements differ)"
                )

    def _watch_operands(self, frame: FrameType, stream: "torch.cuda.Stream") -> None:
        self._use_stream = stream
        names = {self.spec["tensor"]} if self.spec.get("tensor") else self._words_on_flagged_line()
        for word in sorted(names):
            value = frame.f_locals.get(word)
            if isinstance(value, torch.Tensor) and value.is_cuda and value.numel() > 0:
                storage = value.untyped_storage()
                start = storage.data_ptr()
                self._watched.append((weakref.ref(value), start, start + storage.nbytes(), word))

    def _scan_reuse(self, frame: FrameType) -> None:
        for owner, start, end, word in self._watched:
            if owner() is not None:
                continue  # still alive: the block cannot have been handed out again
            for name, tensor in tensors_in(dict(frame.f_locals)).items():
                if not tensor.is_cuda or tensor.numel() == 0:
                    continue
                ptr = tensor.untyped_storage().data_ptr()
                said = f"`{word}`'s freed block was handed out again to `{name}`"
                if start <= ptr < end and not any(o.startswith(said) for o in self.observations):
                    self.observations.append(
                        f"{said} while the other stream's use of it was still pending "
                        f"(seen before line {frame.f_lineno} ran)"
                    )


def run_once(
    runner: TargetRunner, spec: dict[str, Any], seed: int, delayed: bool, reference: bool
) -> tuple[Probe, dict[str, int], BaseException | None, Any]:
    probe = Probe(spec, delayed=delayed, reference=reference)
    watch = LineWatch(spec["file"], Probe.ranges(spec), probe)
    seed_everything(seed)
    error: BaseException | None = None
    tb = None
    with watch:
        try:
            runner.run_once()
        except TargetError:
            raise
        except Exception as caught:  # the user's code failed: a finding for the caller to judge
            error = caught
            tb = caught.__traceback__
    if watch.hook_error is not None and error is None:
        error = watch.hook_error
    try:
        torch.cuda.synchronize()
    except RuntimeError as failed:  # a CUDA error the program left behind
        if error is None:
            error, tb = failed, failed.__traceback__
    return probe, dict(watch.hits), error, tb


def describe_error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip()


def _merge_hits(result: dict[str, Any], hits: dict[str, int]) -> None:
    for name, count in hits.items():
        result["hits"][name] = result["hits"].get(name, 0) + count
    if hits.get("second"):
        result["reached"] = True


# -- methods --------------------------------------------------------------------------------------


def compare_method(runner: TargetRunner, spec: dict[str, Any]) -> dict[str, Any]:
    """``delay`` and ``lifetime``: delayed run versus synchronized reference run, per trial."""
    result = new_result(spec)
    warm_up(spec["sleep_cycles"])
    # Warm-up: a reference run and an uncounted delayed run load every kernel and size every pool.
    probe, hits, error, _ = run_once(runner, spec, spec["seed"] - 2, delayed=False, reference=True)
    if error is not None:
        result["error"] = f"the reference run failed: {describe_error(error)}"
        result["traceback"] = "".join(traceback.format_exception(error))[-3000:]
        return result
    if not hits.get("second"):
        result["notes"].append("the flagged line never ran in the warm-up run")
        return result
    run_once(runner, spec, spec["seed"] - 1, delayed=True, reference=False)
    for trial in range(1, spec["trials"] + 1):
        progress(f"trial {trial} of {spec['trials']}")
        seed = spec["seed"] + trial
        started = time.monotonic()
        delayed = reference = None  # drop the last trial's snapshots before this one runs
        delayed, hits, error, _ = run_once(runner, spec, seed, delayed=True, reference=False)
        _merge_hits(result, hits)
        reference, _, ref_error, _ = run_once(runner, spec, seed, delayed=False, reference=True)
        record: dict[str, Any] = {"trial": trial, "seed": seed, "observed": False, "evidence": []}
        if error is not None or ref_error is not None:
            record["error"] = describe_error(error or ref_error)
        differences = compare_exits(delayed.exits, reference.exits)
        if spec["method"] == "lifetime":
            reused = list(delayed.observations)
            record["evidence"] = reused + differences[:3]
            record["observed"] = bool(reused and differences)
            record["reuse_seen"] = bool(reused)
        else:
            record["evidence"] = differences[:3]
            record["observed"] = bool(differences)
        record["seconds"] = round(time.monotonic() - started, 3)
        result["trials"].append(record)
    return result


def observe_method(runner: TargetRunner, spec: dict[str, Any]) -> dict[str, Any]:
    """``host-read`` and ``host-wait``: what the host saw at the flagged line, per trial."""
    result = new_result(spec)
    warm_up(spec["sleep_cycles"])
    for trial in range(0, spec["trials"] + 1):  # trial 0 warms up and is not counted
        if trial:
            progress(f"trial {trial} of {spec['trials']}")
        seed = spec["seed"] + trial
        probe, hits, error, _ = run_once(runner, spec, seed, delayed=True, reference=False)
        if trial == 0:
            continue
        _merge_hits(result, hits)
        record = {"trial": trial, "seed": seed, "observed": bool(probe.observations)}
        record["evidence"] = probe.observations[:3]
        if error is not None:
            record["error"] = describe_error(error)
        result["trials"].append(record)
    return result


def _raised_at(spec: dict[str, Any], tb: Any) -> int | None:
    """The line of the innermost frame of the watched file in a traceback."""
    line = None
    for frame_summary in traceback.extract_tb(tb):
        if same_file(frame_summary.filename, spec["file"]):
            line = frame_summary.lineno
    return line


def _chain(error: BaseException) -> list[BaseException]:
    """The error and those it was raised while handling: a failed graph capture surfaces as the
    capture's end failing, with the flagged line's error as its context."""
    chain: list[BaseException] = []
    while error is not None and error not in chain and len(chain) < 8:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def exception_method(runner: TargetRunner, spec: dict[str, Any]) -> dict[str, Any]:
    """``exception``: PyTorch's own error at the flagged line (timing misuse, capture failure)."""
    result = new_result(spec)
    warm_up(spec["sleep_cycles"])
    pattern = re.compile(spec.get("exception_pattern") or ".", re.IGNORECASE)
    low, high = spec["second"]
    for trial in range(1, spec["trials"] + 1):
        progress(f"trial {trial} of {spec['trials']}")
        seed = spec["seed"] + trial
        _, hits, error, tb = run_once(runner, spec, seed, delayed=True, reference=False)
        _merge_hits(result, hits)
        record: dict[str, Any] = {"trial": trial, "seed": seed, "observed": False, "evidence": []}
        if error is not None:
            for candidate in _chain(error):
                line = _raised_at(spec, candidate.__traceback__)
                if line is not None and low <= line <= high and pattern.search(str(candidate)):
                    record["observed"] = True
                    record["evidence"] = [f"line {line} raised {describe_error(candidate)}"]
                    break
            else:
                line = _raised_at(spec, tb)
                record["error"] = f"{describe_error(error)} (raised at line {line})"
        result["trials"].append(record)
    return result


def _stack_lines(stack: Iterable[Any], path: str) -> list[int]:
    return [f.lineno for f in stack if f.lineno is not None and same_file(f.filename, path)]


def _collect_instead_of_raising(sanitizer_module: Any, collected: list) -> bool:
    """Make the sanitizer record every race and let the program go on (it normally raises at the
    first), so a finding is matched even when another race comes first, and the races it did see
    can explain a delay experiment's evidence. False where this torch's sanitizer looks different."""
    handler = getattr(sanitizer_module, "EventHandler", None)
    original = getattr(handler, "_handle_kernel_launch", None)
    if original is None:
        return False

    def collecting(self: Any, *args: Any, **kwargs: Any) -> list:
        collected.extend(original(self, *args, **kwargs))
        return []

    handler._handle_kernel_launch = collecting
    return True


def sanitizer_method(runner: TargetRunner, spec: dict[str, Any]) -> dict[str, Any]:
    """``sanitizer``: PyTorch's CUDA sanitizer, its reports matched to the finding's two lines."""
    from torch.cuda import _sanitizer

    result = new_result(spec)
    collected: list = []
    if not _collect_instead_of_raising(_sanitizer, collected):
        result["notes"].append("this torch's sanitizer stops at the first race it reports")
    _sanitizer.enable_cuda_sanitizer()
    progress("trial 1 of 1 (sanitizer)")
    _, hits, error, _ = run_once(runner, spec, spec["seed"], delayed=False, reference=False)
    _merge_hits(result, hits)
    record: dict[str, Any] = {"trial": 1, "seed": spec["seed"], "observed": False, "evidence": []}
    raised = getattr(error, "errors", None) if error is not None else None
    if error is not None and raised is None:
        record["error"] = describe_error(error)
    first = spec.get("first") or spec["second"]
    second = spec["second"]
    inside = lambda lines, rng: any(rng[0] <= n <= rng[1] for n in lines)  # noqa: E731
    operator = lambda access: str(access.operator).split("(", 1)[0]  # noqa: E731
    others: dict[tuple, dict[str, Any]] = {}
    for report in collected + list(raised or []):
        current = getattr(report, "current_access", None)
        previous = getattr(report, "previous_access", None)
        if current is None or previous is None:
            continue
        now = _stack_lines(current.stack_trace, spec["file"])
        before = _stack_lines(previous.stack_trace, spec["file"])
        said = (
            f"PyTorch CUDA sanitizer: {current.type} by `{operator(current)}` on stream "
            f"{current.stream} (line {now[-1] if now else '?'}) races with {previous.type} by "
            f"`{operator(previous)}` on stream {previous.stream} (line {before[-1] if before else '?'})"
        )
        if (inside(now, second) and inside(before, first)) or (inside(now, first) and inside(before, second)):
            record["observed"] = True
            if said not in record["evidence"]:
                record["evidence"].append(said)
        elif now and before:
            others.setdefault((before[-1], now[-1]), {"first": before[-1], "second": now[-1], "text": said})
    result["other_races"] = list(others.values())[:20]
    for race in result["other_races"][:3]:
        result["notes"].append("the sanitizer also reported: " + race["text"])
    result["trials"].append(record)
    return result


METHOD_RUNNERS: dict[str, Callable[[TargetRunner, dict[str, Any]], dict[str, Any]]] = {
    "delay": compare_method,
    "lifetime": compare_method,
    "host-read": observe_method,
    "host-wait": observe_method,
    "exception": exception_method,
    "sanitizer": sanitizer_method,
}
