"""Watch the flagged lines of one file while arbitrary code runs.

A finding names lines of a file; the user's program reaches them through whatever calls it makes.
:class:`LineWatch` installs a ``sys.settrace`` hook (also for new threads) that ignores every frame
whose code does not come from the watched file, so the cost is one check per Python call elsewhere.
For frames of the watched file it reports, per named line range:

``entering(name, frame)``  just before the first line of the range runs (the place to hold a stream
                           back *before* the line's operations are enqueued);
``left(name, frame)``      once the range has run (next line event of that frame, or its return):
                           the place for the reference run's synchronization;
``line(frame)``            every later line of a frame that has entered a range (reuse scans);
``finished(frame, lineno)`` after *any* line of the file has run (the reference run synchronizes
                           the device here, so its result is free of races within the file);
``frame_exit(frame, value)`` when such a frame returns (final snapshots).

``sys.settrace`` works on every supported Python (3.10+); on 3.12 ``sys.monitoring`` would be cheaper
for unrelated frames, but settrace keeps one code path and the experiments are short.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from types import FrameType
from typing import Any, Callable, Mapping


def same_file(a: str, b: str) -> bool:
    """Whether two file names (as code objects or users spell them) are the same file."""
    if a == b:
        return True
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


#: Before 3.13 ``frame.f_locals`` is a dict cached on the frame: once a hook has read it, it keeps
#: every local it saw alive until it is read again, so a tensor the program deletes would not be
#: freed (hiding exactly the allocator reuse SYN102 is about). Re-reading it at each line drops them.
_CACHED_LOCALS = sys.version_info < (3, 13)


class Listener:
    """Override what you need; every hook is optional."""

    def entering(self, name: str, frame: FrameType) -> None:
        pass

    def left(self, name: str, frame: FrameType) -> None:
        pass

    def line(self, frame: FrameType) -> None:
        pass

    def frame_exit(self, frame: FrameType, value: Any) -> None:
        pass

    def finished(self, frame: FrameType, lineno: int) -> None:
        pass


class _FrameState:
    __slots__ = ("inside", "touched", "last")

    def __init__(self) -> None:
        self.inside: set[str] = set()
        self.touched = False
        self.last: int | None = None


class LineWatch:
    """Trace the frames of ``filename`` and report the named line ranges to ``listener``.

    Use as a context manager around the code to run; ``hits[name]`` counts how often each range was
    entered. Hooks that raise are not allowed to break the traced program: the first such error is
    kept in ``hook_error`` and tracing of that frame goes on.
    """

    def __init__(
        self,
        filename: str,
        ranges: Mapping[str, tuple[int, int]],
        listener: Listener,
    ) -> None:
        self.filename = filename
        self.ranges = {name: (lo, hi) for name, (lo, hi) in ranges.items()}
        self.listener = listener
        self.hits: Counter[str] = Counter()
        self.hook_error: BaseException | None = None
        self._frames: dict[int, _FrameState] = {}
        self._files: dict[str, bool] = {}
        self._previous: Callable | None = None
        self._previous_threading: Callable | None = None

    # -- matching --------------------------------------------------------------------------

    def watches(self, code_filename: str) -> bool:
        known = self._files.get(code_filename)
        if known is None:
            known = self._files[code_filename] = same_file(code_filename, self.filename)
        return known

    def ranges_at(self, lineno: int) -> set[str]:
        return {name for name, (lo, hi) in self.ranges.items() if lo <= lineno <= hi}

    # -- sys.settrace protocol ---------------------------------------------------------------

    def _global(self, frame: FrameType, event: str, arg: Any) -> Callable | None:
        if event == "call" and self.watches(frame.f_code.co_filename):
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Callable | None:
        key = id(frame)
        state = self._frames.get(key)
        if state is None:
            state = self._frames[key] = _FrameState()
        if event == "line":
            self._on_line(frame, state)
        elif event == "return":
            self._on_return(frame, state, arg)
            self._frames.pop(key, None)
        return self._local

    def _guard(self, hook: Callable, *args: Any) -> None:
        try:
            hook(*args)
        except Exception as error:  # a broken hook must not change what the program does
            if self.hook_error is None:
                self.hook_error = error

    def _on_line(self, frame: FrameType, state: _FrameState) -> None:
        if _CACHED_LOCALS:
            frame.f_locals  # noqa: B018 - refresh the cache: frees what the program deleted
        if state.last is not None:
            self._guard(self.listener.finished, frame, state.last)
        state.last = frame.f_lineno
        now = self.ranges_at(frame.f_lineno)
        for name in sorted(state.inside - now):
            state.inside.discard(name)
            self._guard(self.listener.left, name, frame)
        if state.touched:
            self._guard(self.listener.line, frame)
        for name in sorted(now - state.inside):
            state.inside.add(name)
            state.touched = True
            self.hits[name] += 1
            self._guard(self.listener.entering, name, frame)

    def _on_return(self, frame: FrameType, state: _FrameState, value: Any) -> None:
        if state.last is not None:
            self._guard(self.listener.finished, frame, state.last)
        for name in sorted(state.inside):
            self._guard(self.listener.left, name, frame)
        state.inside.clear()
        if state.touched:
            self._guard(self.listener.frame_exit, frame, value)

    # -- installation ------------------------------------------------------------------------

    def __enter__(self) -> "LineWatch":
        self._previous = sys.gettrace()
        self._previous_threading = threading.gettrace() if hasattr(threading, "gettrace") else None
        threading.settrace(self._global)
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)
        threading.settrace(self._previous_threading)  # type: ignore[arg-type]
        self._frames.clear()
