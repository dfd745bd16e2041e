"""The result cache: ``.synclint_cache/`` next to the configuration (or in the working directory).

One small JSON file per (file content, path, enabled codes, analysis settings, synclint version,
synclint's own code) key; a hit skips decoding and analysis entirely. synclint's own source files'
sizes and modification times are part of the key, so editing a rule in a checkout never serves stale
results. The directory carries a ``CACHEDIR.TAG`` (backup tools skip it) and a ``.gitignore`` of
``*``. Any cache problem (unwritable directory, corrupt entry) silently degrades to no cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import synclint
from synclint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Related, Span

CACHE_DIR_NAME = ".synclint_cache"
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by synclint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of synclint's installed source files (names, sizes, mtimes)."""
    root = Path(synclint.__file__).parent
    digest = hashlib.sha256(synclint.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(root)}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _position(p: Position) -> list[int]:
    return [p.line, p.column]


def _span(s: Span) -> list[list[int]]:
    return [_position(s.start), _position(s.end)]


def _read_span(raw: list[list[int]]) -> Span:
    return Span(Position(*raw[0]), Position(*raw[1]))


def encode_diagnostic(d: Diagnostic) -> dict[str, Any]:
    return {
        "code": d.code,
        "message": d.message,
        "span": _span(d.span),
        "related": [[_span(r.span), r.message, r.path] for r in d.related],
        "fix": None
        if d.fix is None
        else [
            d.fix.message,
            d.fix.applicability.value,
            [[_span(e.span), e.content] for e in d.fix.edits],
        ],
        "data": dict(d.data),
        "noqa": [d.noqa_line, d.noqa_end_line],
    }


def decode_diagnostic(raw: dict[str, Any], path: str) -> Diagnostic:
    fix = raw["fix"]
    return Diagnostic(
        code=raw["code"],
        message=raw["message"],
        path=path,
        span=_read_span(raw["span"]),
        related=tuple(Related(_read_span(s), m, p) for s, m, p in raw["related"]),
        fix=None
        if fix is None
        else Fix(fix[0], Applicability(fix[1]), tuple(Edit(_read_span(s), c) for s, c in fix[2])),
        data=raw["data"],
        noqa_line=raw["noqa"][0],
        noqa_end_line=raw["noqa"][1],
    )


class Cache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._ready = False

    def key(self, content: bytes, path: str, settings_key: str) -> str:
        digest = hashlib.sha256()
        for part in (code_fingerprint(), path, settings_key):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(content)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / synclint.__version__ / key[:2] / f"{key[2:]}.json"

    def get(self, key: str, path: str) -> tuple[list[Diagnostic], list[str]] | None:
        """The cached diagnostics and warnings for ``key``, or None on a miss."""
        try:
            raw = json.loads(self._entry(key).read_text(encoding="utf-8"))
            return [decode_diagnostic(item, path) for item in raw["diagnostics"]], list(
                raw["warnings"]
            )
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: str, diagnostics: list[Diagnostic], warnings: list[str] = ()) -> None:
        try:
            self._prepare()
            entry = self._entry(key)
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(
                    {
                        "diagnostics": [encode_diagnostic(d) for d in diagnostics],
                        "warnings": list(warnings),
                    },
                    handle,
                )
            os.replace(temp, entry)
        except OSError:
            pass

    def _prepare(self) -> None:
        if self._ready:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(_TAG, encoding="utf-8")
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by synclint automatically.\n*\n", encoding="utf-8")
        self._ready = True


def remove_cache_dir(directory: Path) -> bool:
    """Remove a cache directory, but only one synclint made (it has our CACHEDIR.TAG)."""
    try:
        if (directory / "CACHEDIR.TAG").read_text(encoding="utf-8") != _TAG:
            return False
    except OSError:
        return False
    shutil.rmtree(directory, ignore_errors=True)
    return True


def clean(start: Path) -> list[Path]:
    """Remove every ``.synclint_cache`` under ``start`` (not following links); returns them."""
    removed = []
    for directory, dirnames, _ in os.walk(start):
        if CACHE_DIR_NAME in dirnames:
            target = Path(directory) / CACHE_DIR_NAME
            shutil.rmtree(target, ignore_errors=True)
            removed.append(target)
        dirnames[:] = [d for d in dirnames if d not in (CACHE_DIR_NAME, ".git", "node_modules")]
    return removed
