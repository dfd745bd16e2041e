"""Bad input gets a clear message, never a traceback, and nothing is changed."""

from __future__ import annotations

import os

import pytest
from frame_helpers import write


def lint_bytes_cli(project, cli, data: bytes, *extra):
    path = project / "bad.py"
    path.write_bytes(data)
    result = cli("bad.py", "--no-cache", "--output-format", "concise", *extra)
    assert "Traceback" not in result.err
    assert path.read_bytes() == data, "a file must never change unless fixing"
    return result


def test_syntax_error_with_position_and_reason_others_still_linted(project, cli, fake_rules):
    write(project / "a.py", "def f(:\n    pass\n")
    write(project / "b.py", "marker()\n")
    result = cli(".", "--no-cache", "--output-format", "concise")
    assert result.status == 1
    assert "a.py:1:7: SYN001 syntax error: invalid syntax" in result.out
    assert "b.py:1:1: SYN901" in result.out


def test_not_utf8(project, cli):
    result = lint_bytes_cli(project, cli, b"x = 1\ny = '\xff\xfe'\n")
    assert result.status == 1
    assert "bad.py:2:6: SYN001 not valid UTF-8: byte 0xff cannot be decoded" in result.out


def test_pep263_coding_line_is_honoured(project, cli, fake_rules):
    result = lint_bytes_cli(
        project, cli, "# coding: latin-1\nname = 'caf\u00e9'\nmarker()\n".encode("latin-1")
    )
    assert result.out.startswith("bad.py:3:1: SYN901")


def test_wrong_coding_line(project, cli):
    result = lint_bytes_cli(project, cli, "# coding: ascii\nname = 'caf\u00e9'\n".encode("utf-8"))
    assert "SYN001 not valid ascii" in result.out


def test_unknown_coding(project, cli):
    result = lint_bytes_cli(project, cli, b"# coding: klingon\nx = 1\n")
    assert "SYN001 invalid encoding declaration" in result.out


def test_utf8_bom(project, cli, fake_rules):
    result = lint_bytes_cli(project, cli, b"\xef\xbb\xbfmarker()\n")
    assert result.out.startswith("bad.py:1:1: SYN901")


def test_binary_file_named_py(project, cli):
    result = lint_bytes_cli(project, cli, b"\x7fELF\x02\x01\x01\x00\x00\x00")
    assert result.status == 1
    assert "SYN001 file contains NUL bytes: this is not Python source" in result.out


@pytest.mark.parametrize(
    ("encoding", "name"),
    [("utf-16", "UTF-16 little-endian"), ("utf-16-be", "UTF-16 big-endian"), ("utf-32", "UTF-32 little-endian")],
)
def test_wide_unicode_file_is_named_for_its_encoding(project, cli, encoding, name):
    """A file an editor saved as UTF-16 or UTF-32 with a byte-order mark is text, not a binary
    file: the finding says which encoding it is and what to do (Python cannot run it)."""
    text = '"""Pipelined decoding."""\nimport torch\n'
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    result = lint_bytes_cli(project, cli, data)
    assert result.status == 1
    assert f"bad.py:1:1: SYN001 file is encoded as {name}" in result.out
    assert "re-encode it as UTF-8" in result.out and "NUL bytes" not in result.out


@pytest.mark.parametrize("data", [b"", b"\n", b"   \n\n", b"# only a comment", b"\r\n"])
def test_empty_and_trivial_files(project, cli, data):
    result = lint_bytes_cli(project, cli, data)
    assert result.status == 0, result.out


def _deny_reading(monkeypatch, name: str) -> None:
    """Make reading the file ``name`` fail as a permission error would."""
    from pathlib import Path

    real = Path.read_bytes

    def read_bytes(self):
        if self.name == name:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def test_unreadable_file(project, cli, fake_rules, monkeypatch):
    write(project / "a.py", "x = 1\n")
    write(project / "b.py", "marker()\n")
    if os.geteuid() == 0:  # root reads anything: simulate the failure instead
        _deny_reading(monkeypatch, "a.py")
    else:
        os.chmod(project / "a.py", 0)
    result = cli(".", "--no-cache", "--output-format", "concise")
    assert result.status == 2
    assert "error: cannot read a.py: Permission denied" in result.err
    assert "b.py:1:1: SYN901" in result.out


def test_a_run_with_unreadable_files_is_not_called_clean(project, cli, monkeypatch):
    """With no finding in the files read, the summary still says some files were not checked."""
    write(project / "a.py", "x = 1\n")
    write(project / "b.py", "y = 2\n")
    _deny_reading(monkeypatch, "a.py")
    result = cli(".", "--no-cache", "--output-format", "concise")
    assert result.status == 2
    assert "All checks passed!" not in result.out
    assert "No findings, but 1 file could not be checked (see the errors above)." in result.out


def test_deeply_nested_code_does_not_crash(project, cli):
    result = lint_bytes_cli(project, cli, b"x = " + b"(" * 300 + b"1" + b")" * 300 + b"\n")
    assert result.status in (0, 1)
    assert "internal error" not in result.err


def test_malformed_pyproject(project, cli):
    write(project / "pyproject.toml", "[tool.synclint\n")
    write(project / "a.py", "x = 1\n")
    result = cli("a.py")
    assert result.status == 2
    assert "pyproject.toml: invalid TOML" in result.err and "line 1" in result.err


def test_unknown_code_in_a_suppression_is_a_warning(project, cli):
    write(project / "a.py", "x = 1  # synclint: ignore[SYN777]\n")
    result = cli("a.py")
    assert result.status == 0
    assert "warning: a.py:1: unknown rule code `SYN777` in a suppression comment" in result.err


def test_directory_named_like_a_python_file(project, cli):
    (project / "weird.py").mkdir()
    write(project / "weird.py" / "inner.py", "x = 1\n")
    assert cli(".").status == 0
