"""The line watch: hooks fire around the right lines of the right file, and only there."""

from __future__ import annotations

import threading
from pathlib import Path

from synclint.confirm.instrument import LineWatch, Listener, same_file

PROGRAM = """\
log = []

def helper():
    log.append("helper")

def main(n=2):
    total = 0
    for i in range(n):
        log.append(("first", i))
        total += i
        log.append(("second", i))
    helper()
    return total
"""


class Recorder(Listener):
    def __init__(self, log):
        self.log = log
        self.events = []
        self.exits = []

    def entering(self, name, frame):
        self.events.append(("enter", name, len(self.log)))

    def left(self, name, frame):
        self.events.append(("left", name, len(self.log)))

    def frame_exit(self, frame, value):
        self.exits.append((frame.f_code.co_name, value, sorted(frame.f_locals)))


def load(tmp_path: Path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    namespace: dict = {"__name__": "prog"}
    exec(compile(PROGRAM, str(path), "exec"), namespace)
    return path, namespace


def test_entering_fires_before_the_line_and_left_after_it(tmp_path) -> None:
    path, ns = load(tmp_path)
    recorder = Recorder(ns["log"])
    with LineWatch(str(path), {"first": (9, 9), "second": (11, 11)}, recorder) as watch:
        assert ns["main"]() == 1
    # before line 9 runs the log has i*3 entries (3 appends per iteration); after it, one more
    assert recorder.events == [
        ("enter", "first", 0), ("left", "first", 1),
        ("enter", "second", 1), ("left", "second", 2),
        ("enter", "first", 2), ("left", "first", 3),
        ("enter", "second", 3), ("left", "second", 4),
    ]
    assert watch.hits == {"first": 2, "second": 2}
    assert recorder.exits == [("main", 1, ["i", "n", "total"])]


def test_frames_that_never_touch_a_range_are_not_reported(tmp_path) -> None:
    path, ns = load(tmp_path)
    recorder = Recorder(ns["log"])
    with LineWatch(str(path), {"second": (11, 11)}, recorder):
        ns["helper"]()
    assert recorder.events == [] and recorder.exits == []


def test_other_files_are_ignored(tmp_path) -> None:
    path, ns = load(tmp_path)
    recorder = Recorder(ns["log"])
    with LineWatch(str(tmp_path / "other.py"), {"first": (9, 9)}, recorder) as watch:
        ns["main"]()
    assert recorder.events == [] and not watch.hits


def test_a_failing_hook_does_not_change_the_program(tmp_path) -> None:
    path, ns = load(tmp_path)

    class Broken(Listener):
        def entering(self, name, frame):
            raise RuntimeError("hook bug")

    with LineWatch(str(path), {"first": (9, 9)}, Broken()) as watch:
        assert ns["main"](3) == 3
    assert isinstance(watch.hook_error, RuntimeError) and watch.hits["first"] == 3


def test_threads_started_inside_are_watched(tmp_path) -> None:
    path, ns = load(tmp_path)
    recorder = Recorder(ns["log"])
    with LineWatch(str(path), {"first": (9, 9)}, recorder) as watch:
        worker = threading.Thread(target=ns["main"])
        worker.start()
        worker.join()
    assert watch.hits["first"] == 2


def test_the_previous_trace_function_is_restored(tmp_path) -> None:
    import sys

    before = sys.gettrace()
    path, ns = load(tmp_path)
    with LineWatch(str(path), {"first": (9, 9)}, Listener()):
        pass
    assert sys.gettrace() is before


def test_same_file_resolves_links(tmp_path) -> None:
    real = tmp_path / "a.py"
    real.write_text("")
    link = tmp_path / "b.py"
    link.symlink_to(real)
    assert same_file(str(link), str(real)) and not same_file(str(real), str(tmp_path / "c.py"))


def test_finished_follows_every_line_of_the_file(tmp_path) -> None:
    path, ns = load(tmp_path)
    done = []

    class Lines(Listener):
        def finished(self, frame, lineno):
            done.append((frame.f_code.co_name, lineno, len(ns["log"])))

    with LineWatch(str(path), {}, Lines()):
        ns["main"](1)
    assert done == [
        ("main", 7, 0), ("main", 8, 0), ("main", 9, 1), ("main", 10, 1), ("main", 11, 2),
        ("main", 8, 2), ("helper", 4, 3), ("main", 12, 3), ("main", 13, 3),
    ]


def test_a_hook_reading_locals_does_not_keep_deleted_objects_alive(tmp_path) -> None:
    """Reading ``frame.f_locals`` in a hook must not delay the program's own frees (on Python
    before 3.13 the frame caches that dict): the freed-block reuse SYN102 needs depends on it."""
    import weakref

    path = tmp_path / "dels.py"
    path.write_text(
        "class Box:\n    pass\n\ndef main():\n    x = Box()\n    y = 1\n    del x\n    z = 2\n    return z\n"
    )
    namespace: dict = {"__name__": "dels"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    seen: dict = {}

    class Peek(Listener):
        def entering(self, name, frame):
            if name == "read":
                seen["x"] = weakref.ref(frame.f_locals["x"])
            if name == "after_del":
                seen["dead_before_line_8"] = seen["x"]() is None

    with LineWatch(str(path), {"read": (6, 6), "after_del": (8, 8)}, Peek()):
        namespace["main"]()
    assert seen["dead_before_line_8"] is True
