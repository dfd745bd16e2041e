"""Generate a synthetic corpus of realistic PyTorch-project modules, for scaling curves.

Why synthetic: a real repository gives one point; to check that synclint's time grows linearly with
the code (and with the code that touches streams, not with everything), we need the same *kind* of code
at 10k, 100k and 1M lines. The modules imitate what a training code base holds: model definitions,
training loops with ``.to(device)`` and host timers, data and config utilities, tests, and (a small,
configurable fraction) stream/event/transfer code, some of it correct, some of it with the bugs synclint
looks for. Identifiers vary with a seeded random generator so that no two files are identical (a
content-keyed cache or deduplication would otherwise flatter the figures) and runs are reproducible.

Usage::

    python benchmarks/gen_corpus.py OUT_DIR --lines 100000 [--stream-fraction 0.06] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

WORDS = (
    "alpha beta gamma delta token embed hidden proj gate expert router cache block layer head "
    "query key value score mask bias scale shard bucket grad param state buffer chunk batch step "
    "epoch warmup decay norm residual attn mlp conv pool patch image text audio vocab logits loss"
).split()


def ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def camel(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS).title() for _ in range(2))


# --- chunks of plain (no-stream) code ----------------------------------------------------------


def model_class(rng: random.Random) -> str:
    name, layers = camel(rng), rng.randint(2, 6)
    dims = [rng.choice((64, 128, 256, 512, 1024)) for _ in range(layers + 1)]
    inits = "\n".join(
        f"        self.{ident(rng)}_{i} = nn.Linear({dims[i]}, {dims[i + 1]}, bias={rng.choice((True, False))})"
        for i in range(layers)
    )
    body = "\n".join(
        f"        x = self.{ident(rng)}_{i}(x) if x.dim() > 1 else x\n"
        f"        x = torch.nn.functional.{rng.choice(('gelu', 'relu', 'silu'))}(x)"
        for i in range(layers)
    )
    return f'''
class {name}(nn.Module):
    """{rng.choice(WORDS).title()} block with {layers} projections."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.dropout = nn.Dropout(p={rng.choice((0.0, 0.1, 0.2))})
{inits}

    def forward(self, x, mask=None):
        residual = x
{body}
        if mask is not None:
            x = x.masked_fill(mask, 0.0)
        return self.dropout(x) + residual if x.shape == residual.shape else x

    def extra_repr(self):
        return f"{name}(config={{self.config!r}})"
'''


def training_loop(rng: random.Random) -> str:
    fn = ident(rng)
    return f"""
def train_{fn}(model, loader, optimizer, device, epochs={rng.randint(1, 9)}, log_every={rng.choice((10, 50, 100))}):
    model.train()
    history = []
    for epoch in range(epochs):
        start = time.time()
        total = 0.0
        for step, (inputs, targets) in enumerate(loader):
            inputs = inputs.to(device)
            targets = targets.to(device)
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = torch.nn.functional.cross_entropy(outputs, targets)
            loss.backward()
            optimizer.step()
            total += loss.item()
            if step % log_every == 0:
                logger.info("epoch %d step %d loss %.4f", epoch, step, total / (step + 1))
        history.append({{"epoch": epoch, "loss": total, "seconds": time.time() - start}})
    return history
"""


def config_utils(rng: random.Random) -> str:
    cls, fn = camel(rng), ident(rng)
    fields = "\n".join(
        f"    {ident(rng)}_{i}: {rng.choice(('int', 'float', 'str', 'bool'))} = "
        f"{rng.choice(('0', '1.0', repr('x'), 'False'))}"
        for i in range(rng.randint(3, 10))
    )
    return f"""
@dataclasses.dataclass
class {cls}Config:
{fields}

    @classmethod
    def from_dict(cls, data):
        known = {{f.name for f in dataclasses.fields(cls)}}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown keys: {{sorted(unknown)}}")
        return cls(**data)


def load_{fn}(path):
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    merged = {{}}
    for key, value in raw.items():
        if isinstance(value, dict):
            merged.update({{f"{{key}}.{{k}}": v for k, v in value.items()}})
        else:
            merged[key] = value
    return merged
"""


def data_utils(rng: random.Random) -> str:
    fn = ident(rng)
    return f"""
def collate_{fn}(samples, pad_id={rng.randint(0, 3)}):
    longest = max(len(s["input_ids"]) for s in samples)
    batch = []
    for sample in samples:
        ids = list(sample["input_ids"])
        ids += [pad_id] * (longest - len(ids))
        batch.append(ids)
    return torch.tensor(batch, dtype=torch.long)


def shard_{fn}(items, world_size, rank):
    per_rank = math.ceil(len(items) / world_size)
    return items[rank * per_rank:(rank + 1) * per_rank]
"""


def test_functions(rng: random.Random) -> str:
    fn = ident(rng)
    n = rng.randint(2, 64)
    return f'''
def test_{fn}_shapes():
    x = torch.randn({n}, {n})
    y = x @ x.t()
    assert y.shape == ({n}, {n})
    assert torch.allclose(y, y.t(), atol=1e-5)


def test_{fn}_roundtrip(tmp_path):
    path = tmp_path / "{fn}.json"
    path.write_text(json.dumps({{"a": {n}}}))
    assert json.loads(path.read_text())["a"] == {n}
'''


# --- chunks of stream / event / transfer code --------------------------------------------------


def prefetcher(rng: random.Random) -> str:
    cls = camel(rng)
    return f'''
class {cls}Prefetcher:
    """Copies the next batch to the device on a side stream while the current one is used."""

    def __init__(self, loader, device):
        self.loader = iter(loader)
        self.device = device
        self.stream = torch.cuda.Stream()
        self.next_batch = None
        self.preload()

    def preload(self):
        try:
            batch = next(self.loader)
        except StopIteration:
            self.next_batch = None
            return
        with torch.cuda.stream(self.stream):
            self.next_batch = batch.pin_memory().to(self.device, non_blocking=True)

    def next(self):
        torch.cuda.current_stream().wait_stream(self.stream)
        batch = self.next_batch
        if batch is not None:
            batch.record_stream(torch.cuda.current_stream())
        self.preload()
        return batch
'''


def event_timing(rng: random.Random) -> str:
    fn = ident(rng)
    correct = rng.random() < 0.7
    sync = "    end.synchronize()\n" if correct else ""
    return f"""
def time_{fn}(fn, *args, iters={rng.choice((10, 20, 50))}):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn(*args)
    end.record()
{sync}    return start.elapsed_time(end) / iters
"""


def side_stream_compute(rng: random.Random) -> str:
    fn = ident(rng)
    correct = rng.random() < 0.7
    wait = "    side.wait_stream(torch.cuda.current_stream())\n" if correct else ""
    return f"""
def overlap_{fn}(x, weight):
    side = torch.cuda.Stream()
    y = x * {rng.randint(2, 9)}
{wait}    with torch.cuda.stream(side):
        z = y @ weight
    torch.cuda.current_stream().wait_stream(side)
    return z + 1
"""


def d2h_copy(rng: random.Random) -> str:
    fn = ident(rng)
    correct = rng.random() < 0.7
    sync = "    torch.cuda.synchronize()\n" if correct else ""
    return f"""
def fetch_{fn}(t):
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    host.copy_(t, non_blocking=True)
{sync}    return host.numpy().sum()
"""


HEADER = '''"""Synthetic module {index}: {kind}."""

import dataclasses
import json
import logging
import math
import time

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)
'''

PLAIN_CHUNKS = (model_class, training_loop, config_utils, data_utils, test_functions)
STREAM_CHUNKS = (prefetcher, event_timing, side_stream_compute, d2h_copy)


def make_module(rng: random.Random, index: int, with_streams: bool) -> str:
    kind = "stream and transfer code" if with_streams else "plain model and utility code"
    parts = [HEADER.format(index=index, kind=kind)]
    # Module sizes vary like a real code base: many small files, a few large ones.
    chunks = max(1, int(rng.lognormvariate(1.6, 0.8)))
    for _ in range(chunks):
        parts.append(rng.choice(PLAIN_CHUNKS)(rng))
    if with_streams:
        for _ in range(rng.randint(1, 3)):
            parts.insert(rng.randint(1, len(parts)), rng.choice(STREAM_CHUNKS)(rng))
    return "\n".join(parts)


def generate(
    out: Path, lines: int, stream_fraction: float = 0.06, seed: int = 0
) -> tuple[int, int]:
    """Write modules under ``out`` until they hold at least ``lines`` lines.

    Returns (files, lines) written. Files go 40 to a package directory, like a real source tree.
    """
    rng = random.Random(seed)
    written_lines = files = 0
    while written_lines < lines:
        text = make_module(rng, files, rng.random() < stream_fraction)
        package = out / f"pkg_{files // 400:03d}" / f"sub_{(files // 40) % 10}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"mod_{files % 40:02d}.py").write_text(text, encoding="utf-8")
        written_lines += text.count("\n")
        files += 1
    return files, written_lines


def parse_size(text: str) -> int:
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * scale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to create (must be empty or absent)")
    parser.add_argument("--lines", type=parse_size, default=100_000, help="e.g. 10k, 100k, 1m")
    parser.add_argument("--stream-fraction", type=float, default=0.06)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty")
    if not 0.0 <= args.stream_fraction <= 1.0:
        parser.error("--stream-fraction must be between 0 and 1")
    files, lines = generate(args.out, args.lines, args.stream_fraction, args.seed)
    print(f"wrote {files} files, {lines} lines to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
