"""The abstract state at one program point, and how two paths' states join.

Joins are where precision is decided: an edge (a wait, a synchronization) made on only one branch
does not order the join, so vector clocks *meet* (per-stream minimum); the accesses either branch
made are all kept (union), so hazards from either path show after the join.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from synclint.model.timeline import Access
from synclint.model.values import Alternatives, StreamValue

VC = dict  # stream key -> count
_MISSING = object()

#: Accesses kept per storage: the newest of each (stream, mode). Bounded so that long functions stay
#: linear.
HISTORY_LIMIT = 16


def every_element(key: str) -> str:
    """The key under which waits made by every element of a list of streams are kept
    (``self.streams[*]`` for ``self.streams[i % n]``: :attr:`StreamValue.every`); a key of its own
    for a stream taken from no list."""
    bracket = key.find("[")
    return key[:bracket] + "[*]" if bracket > 0 else key + "[*]"


def vc_join(a: dict, b: dict) -> dict:
    if not b:
        return dict(a)
    if not a:
        return dict(b)
    get = a.get
    out = dict(a)
    out.update({k: v for k, v in b.items() if v > get(k, 0)})
    return out


def vc_meet(a: dict, b: dict) -> dict:
    return {k: min(v, b[k]) for k, v in a.items() if k in b and min(v, b[k]) > 0}


@dataclass
class EventState:
    vc: dict
    recorded_by: tuple  # RECORD_EVENT ops that may have recorded it
    stream: Optional[StreamValue] = None  # where it was last recorded (None: unknown or several)


@dataclass
class State:
    current: StreamValue
    env: dict = field(default_factory=dict)
    vc: dict = field(default_factory=dict)  # stream key -> VC
    host_vc: dict = field(default_factory=dict)
    events: dict = field(default_factory=dict)  # event key -> EventState
    history: dict = field(default_factory=dict)  # storage id -> tuple[Access, ...]
    dead: bool = False
    #: Streams and events made on this path (keys of creation sites, ``copy_stream@3``). A join
    #: keeps the clock of a stream, and the recording of an event, made on one arm only: on the
    #: other, that stream or event does not exist yet.
    born: frozenset = frozenset()
    #: The newest op each stream may have been given on a path to here (the highest sequence
    #: number, whichever path issued it): whether an event's recording covers all of a path's work
    #: on a stream (see :func:`_event_join`).
    issued: dict = field(default_factory=dict)

    def copy(self) -> "State":
        return State(
            current=self.current,
            env=dict(self.env),
            vc={k: dict(v) for k, v in self.vc.items()},
            host_vc=dict(self.host_vc),
            events={k: EventState(dict(e.vc), e.recorded_by, e.stream) for k, e in self.events.items()},
            history=dict(self.history),  # values are tuples: shared until changed
            dead=self.dead,
            born=self.born,
            issued=dict(self.issued),
        )

    def stream_vc(self, key: str) -> dict:
        vc = vc_join(self.vc.get(key, {}), self.host_vc)
        every = self.vc.get(every_element(key))
        return vc_join(vc, every) if every else vc

    def remember(self, access: Access) -> None:
        """Add an access to its storage's history, dropping what it supersedes on its own stream."""
        history = self.history.get(access.storage.id, ())
        same = access.stream.key
        if access.mode == "write":
            kept = [a for a in history if a.stream.key != same]
        else:
            kept = [a for a in history if not (a.stream.key == same and a.mode == "read")]
        kept.append(access)
        self.history[access.storage.id] = tuple(kept[-HISTORY_LIMIT:])


def join(a: State, b: State) -> State:
    if a.dead:
        return b.copy()
    if b.dead:
        return a.copy()
    # Not a.copy(): the clocks and events are rebuilt below from both sides.
    out = State(current=a.current, env=dict(a.env), history=dict(a.history), born=a.born | b.born)
    # Most names are bound to the same object on both paths: find the others in one pass.
    env, mine_of = out.env, a.env.get
    chosen: list = []  # (the state that chose a side stream, its key): see below
    for name, value in [(n, v) for n, v in b.env.items() if mine_of(n, _MISSING) is not v]:
        mine = env.get(name)
        if mine is None:
            env[name] = value
        else:
            env[name] = alternatives(mine, value)
            if type(mine) is StreamValue and type(value) is StreamValue:
                if value.key == b.current.key and mine.key != a.current.key:
                    chosen.append((a, mine.key))
                elif mine.key == a.current.key and value.key != b.current.key:
                    chosen.append((b, value.key))
    # What the host saw on a path orders all later work on that path, so fold it in first: a
    # device wait on one arm and a host sync on the other both order what follows.
    out.vc = {k: vc_meet(a.stream_vc(k), b.stream_vc(k)) for k in set(a.vc) | set(b.vc)}
    if a.born is not b.born:
        # `if s is None: s = torch.cuda.Stream(); s.wait_stream(current)`: where the stream is
        # made, it waited; on the other arm it is not made, so no path has it without the wait.
        # (In a loop, the second pass starts with the stream made, and meets as usual.)
        for k in a.born - b.born:
            if k in a.vc:
                out.vc[k] = a.stream_vc(k)
        for k in b.born - a.born:
            if k in b.vc:
                out.vc[k] = b.stream_vc(k)
    # `if overlap: stream = side; stream.wait_stream(current) else: stream = current`: the side
    # stream is chosen, and made to wait, on one arm only; on the other the name is the caller's
    # stream and the side stream is not used. What waits on it after the join (a block `with
    # torch.cuda.stream(stream):`) runs where it was chosen, so its clock is that arm's.
    for chooser, key in chosen:
        if key in chooser.vc:
            out.vc[key] = chooser.stream_vc(key)
    out.host_vc = vc_meet(a.host_vc, b.host_vc)
    out.issued = vc_join(a.issued, b.issued)
    for key in set(a.events) | set(b.events):
        ea, eb = a.events.get(key), b.events.get(key)
        if ea and eb:
            recorded = ea.recorded_by + tuple(op for op in eb.recorded_by if op not in ea.recorded_by)
            stream = ea.stream if ea.stream is not None and eb.stream is not None and ea.stream.key == eb.stream.key else None
            vc = ea.vc if ea.vc == eb.vc else _event_join(ea.vc, a.issued, eb.vc, b.issued)
            out.events[key] = EventState(dict(vc), recorded, stream)
        elif (ea is not None and key in a.born and key not in b.born) or (
            eb is not None and key in b.born and key not in a.born
        ):
            # Made (and recorded) on one arm only: on the other it does not exist, so whoever
            # waits on it after the join waits on that arm's recording (a copy started with its
            # event under `if should_collect():`, the event kept for the next call).
            only = ea or eb
            out.events[key] = EventState(dict(only.vc), only.recorded_by, only.stream)
        else:
            only = ea or eb
            out.events[key] = EventState({}, only.recorded_by, only.stream)
    closed_a, closed_b = _closer(a), _closer(b)
    mine_of, theirs_of = a.history.get, b.history.get
    differing = [sid for sid, theirs in b.history.items() if mine_of(sid) is not theirs]
    differing += [sid for sid in a.history if sid not in b.history]
    for sid in differing:
        mine, theirs = mine_of(sid, ()), theirs_of(sid, ())
        if mine is theirs:
            continue
        # An access made on one branch only, and already ordered before that branch's current
        # stream when it ends, stays ordered on that path: the other branch cannot undo that.
        merged = [x for x in mine if x in theirs or not closed_a(x)]
        merged += [x for x in theirs if x not in mine and not closed_b(x)]
        out.history[sid] = tuple(merged[-HISTORY_LIMIT * 2:])
    return out


def _event_join(va: dict, issued_a: dict, vb: dict, issued_b: dict) -> dict:
    """What waiting on an event covers after two paths meet, each with its own recording.

    Clocks meet (the lower count) in general. But where one path's recording covers everything
    that path gave a stream, the other path's count is exact for both: its work is covered up to
    that count, and the first path has nothing beyond its own. So an event recorded again after
    the work an arm adds (``if more: with stream(s): buf = ...; ready.record(s)``), joined with
    the arm that adds nothing, still covers that work."""
    out = {}
    for key in set(va) | set(vb):
        x, y = va.get(key, 0), vb.get(key, 0)
        a_all, b_all = x >= issued_a.get(key, 0), y >= issued_b.get(key, 0)
        seen = max(x, y) if a_all and b_all else x if b_all else y if a_all else min(x, y)
        if seen > 0:
            out[key] = seen
    return out


def _closer(state: State):
    key = state.current.key
    vc = state.stream_vc(key)
    host = state.host_vc

    def closed(access: Access) -> bool:
        seq = access.op.seq
        if seq <= 0:
            return False
        # Seen by the host (`part.cpu()` on its stream): complete, so nothing issued later races
        # with it, whatever stream it ran on.
        if host.get(access.stream.key, 0) >= seq:
            return True
        return access.stream.key != key and vc.get(access.stream.key, 0) >= seq

    return closed


def alternatives(a, b) -> Alternatives:
    """One value standing for ``a`` on some paths and ``b`` on others."""
    values: list = []
    for v in (a, b):
        for item in v.values if isinstance(v, Alternatives) else (v,):
            if not any(item is seen for seen in values):
                values.append(item)
    return Alternatives(tuple(values[:8]))
