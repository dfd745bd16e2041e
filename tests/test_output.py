"""Every output format, on the same findings (the fake rules give a safe fix, an unsafe fix and a
related location)."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest
from frame_helpers import write

import synclint

SOURCE = "import os\n\ndef f(x):\n    marker()\n    return risky(x)\n"


@pytest.fixture
def sample(project, fake_rules):
    write(project / "pkg" / "mod.py", SOURCE)
    return project


def run_format(cli, name, *extra):
    return cli("pkg", "--no-cache", "--output-format", name, *extra)


def test_full(sample, cli):
    result = run_format(cli, "full")
    assert result.status == 1
    expected = (
        "SYN901 [*] marker() called\n"
        "  --> pkg/mod.py:4:5\n"
        "  |\n"
        "3 | def f(x):\n"
        "4 |     marker()\n"
        "  |     ^^^^^^^^\n"
        "  |\n"
        "help: Rename `marker` to `marked`\n"
        "\n"
        "SYN902 risky() called\n"
        "  --> pkg/mod.py:5:12\n"
        "  |\n"
        "4 |     marker()\n"
        "5 |     return risky(x)\n"
        "  |            ^^^^^^^^\n"
        "  |\n"
        "note: argument here\n"
        "  --> pkg/mod.py:5:18\n"
        "  |\n"
        "4 |     marker()\n"
        "5 |     return risky(x)\n"
        "  |                  ^\n"
        "  |\n"
        "help: Use `careful` instead (unsafe fix: apply with `--fix --unsafe-fixes`)\n"
        "\n"
        "Found 2 errors.\n"
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the "
        "`--unsafe-fixes` option).\n"
    )
    assert result.out == expected


def test_full_frame_with_tabs_and_wide_gutter(project, cli, fake_rules):
    write(project / "t.py", "\n" * 99 + "if x:\n\tmarker()\n")
    out = cli("t.py", "--no-cache").out
    assert " --> t.py:101:2\n" in out
    assert "101 |     marker()\n    |     ^^^^^^^^\n" in out


def test_concise(sample, cli):
    result = run_format(cli, "concise")
    assert result.out.splitlines() == [
        "pkg/mod.py:4:5: SYN901 [*] marker() called",
        "pkg/mod.py:5:12: SYN902 risky() called",
        "Found 2 errors.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the "
        "`--unsafe-fixes` option).",
    ]


def test_json(sample, cli):
    items = json.loads(run_format(cli, "json").out)
    assert [i["code"] for i in items] == ["SYN901", "SYN902"]
    first, second = items
    assert first["filename"] == str(sample / "pkg" / "mod.py")
    assert first["location"] == {"row": 4, "column": 5}
    assert first["end_location"] == {"row": 4, "column": 13}
    assert first["fix"] == {
        "applicability": "safe",
        "message": "Rename `marker` to `marked`",
        "edits": [
            {
                "content": "marked",
                "location": {"row": 4, "column": 5},
                "end_location": {"row": 4, "column": 11},
            }
        ],
    }
    assert first["url"].endswith("/rules/SYN901.md")
    assert first["noqa_row"] == 4
    assert first["data"] == {"name": "marker"}
    assert second["fix"]["applicability"] == "unsafe"
    assert second["related"] == [
        {
            "filename": str(sample / "pkg" / "mod.py"),
            "location": {"row": 5, "column": 18},
            "end_location": {"row": 5, "column": 19},
            "message": "argument here",
        }
    ]


def test_json_lines_matches_json(sample, cli):
    lines = run_format(cli, "json-lines").out.splitlines()
    assert [json.loads(line) for line in lines] == json.loads(run_format(cli, "json").out)


def test_json_when_clean(project, cli):
    write(project / "a.py", "x = 1\n")
    assert json.loads(cli("a.py", "--output-format", "json").out) == []


def test_github(sample, cli):
    out = run_format(cli, "github").out
    lines = out.splitlines()
    assert lines[0] == (
        "::error file=pkg/mod.py,line=4,col=5,endLine=4,endColumn=13,"
        "title=synclint (SYN901)::SYN901 marker() called"
    )
    assert lines[1].startswith("::error file=pkg/mod.py,line=5,col=12,")
    assert "SYN901 [*] marker() called\n  --> pkg/mod.py:4:5" in out  # the full report follows
    assert out.rstrip().endswith("`--unsafe-fixes` option).")


def test_github_paths_are_relative_to_the_repository_root(sample, cli, monkeypatch):
    (sample / ".git").mkdir()
    monkeypatch.chdir(sample / "pkg")
    out = cli("mod.py", "--no-cache", "--output-format", "github").out
    assert out.startswith("::error file=pkg/mod.py,line=4,")
    assert " --> mod.py:4:5" in out  # the report itself stays relative to where it was run


def test_github_escaping():
    from synclint.diagnostics import Diagnostic, Position, Span
    from synclint.output.github import annotation

    at = Span(Position(1, 1), Position(1, 2))
    d = Diagnostic("SYN101", "100% wrong\r\nline two: a, b", "dir,x/a:b.py", at)
    assert annotation(d) == (
        "::error file=dir%2Cx/a%3Ab.py,line=1,col=1,endLine=1,endColumn=2,"
        "title=synclint (SYN101)::SYN101 100%25 wrong%0D%0Aline two: a, b"
    )


def test_output_is_deterministic(project, cli, fake_rules):
    for index in range(40):  # enough files for worker processes
        write(project / f"m{index:02d}.py", "marker()\nrisky(1)\n")
    first = cli(".", "--no-cache", "--output-format", "concise").out
    second = cli(".", "--no-cache", "--output-format", "concise").out
    assert first == second
    paths = [line.split(":")[0] for line in first.splitlines() if line.startswith("m")]
    assert paths == sorted(paths) and len(paths) == 80


# -- SARIF -------------------------------------------------------------------------------------

SCHEMA_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SCHEMA_URLS = (
    SCHEMA_ID,
    "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/main/sarif-2.1/schema/sarif-schema-2.1.0.json",
)


def _official_schema(request) -> dict:
    """The official OASIS SARIF 2.1.0 (errata 01) schema, never committed here: from
    $SYNCLINT_SARIF_SCHEMA, from pytest's cache, or downloaded once from OASIS / the OASIS TC's
    repository; the test skips, saying why, when none of these is available (offline)."""
    explicit = os.environ.get("SYNCLINT_SARIF_SCHEMA")
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    cached = (
        Path(cache.mkdir("sarif-schema")) if cache else Path(os.devnull).parent / "-"
    ) / "sarif-schema-2.1.0.json"
    text = None
    if explicit:
        text = Path(explicit).read_text(encoding="utf-8")
    elif cached.is_file():
        text = cached.read_text(encoding="utf-8")
    else:
        errors = []
        for url in SCHEMA_URLS:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    text = response.read().decode("utf-8")
                break
            except OSError as error:
                errors.append(f"{url}: {error}")
        if text is None:
            pytest.skip(
                "the official SARIF 2.1.0 schema could not be had (offline?); set "
                "SYNCLINT_SARIF_SCHEMA to a local copy of sarif-schema-2.1.0.json. "
                + "; ".join(errors)
            )
    schema = json.loads(text)
    assert schema.get("id") == SCHEMA_ID, "not the official SARIF 2.1.0 errata 01 schema"
    if cache and not explicit and not cached.is_file():
        cached.write_text(text, encoding="utf-8")
    return schema


def _sarif(cli) -> dict:
    return json.loads(run_format(cli, "sarif").out)


def test_sarif_validates_against_the_official_schema(sample, cli, request):
    import jsonschema

    schema = _official_schema(request)
    log = _sarif(cli)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # The validator does reject what GitHub would reject (so the check above means something).
    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert len(list(validator_class(schema).iter_errors(broken))) == 2


def test_sarif_has_what_github_code_scanning_reads(sample, cli):
    log = _sarif(cli)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "synclint" and driver["version"] == synclint.__version__
    assert driver["informationUri"].startswith("https://")
    from synclint.rules.registry import all_rules

    assert [rule["id"] for rule in driver["rules"]] == list(all_rules())
    first, second = run["results"]
    assert first["ruleId"] == "SYN901" and first["level"] == "error"
    assert driver["rules"][first["ruleIndex"]]["id"] == "SYN901"
    assert first["message"]["text"] == "marker() called"
    location = first["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": "pkg/mod.py"},
        "region": {"startLine": 4, "startColumn": 5, "endLine": 4, "endColumn": 13},
    }
    assert second["relatedLocations"] == [
        {
            "id": 1,
            "physicalLocation": {
                "artifactLocation": {"uri": "pkg/mod.py"},
                "region": {"startLine": 5, "startColumn": 18, "endLine": 5, "endColumn": 19},
            },
            "message": {"text": "argument here"},
        }
    ]


def test_sarif_uris_are_relative_to_the_repository_root(sample, cli, monkeypatch):
    (sample / ".git").mkdir()
    monkeypatch.chdir(sample / "pkg")
    log = json.loads(cli("mod.py", "--no-cache", "--output-format", "sarif").out)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"
    ]
    assert uri == "pkg/mod.py"


def test_sarif_log_api_for_confirm(fake_rules, tmp_path):
    from synclint.output.sarif import sarif_log
    from synclint.pipeline import FileSettings, lint_text

    diagnostics = lint_text(
        SOURCE, str(tmp_path / "m.py"), FileSettings(frozenset({"SYN901"}))
    ).diagnostics
    log = sarif_log(diagnostics, tmp_path, result_properties=lambda d: {"confirmed": True})
    result = log["runs"][0]["results"][0]
    assert result["properties"] == {"confirmed": True}
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "m.py"


def test_diagnostic_to_json_api(fake_rules, tmp_path):
    from synclint.output.json_format import diagnostic_to_json
    from synclint.pipeline import FileSettings, lint_text

    d = lint_text(SOURCE, "m.py", FileSettings(frozenset({"SYN901"}))).diagnostics[0]
    assert diagnostic_to_json(d, tmp_path)["filename"] == str(tmp_path / "m.py")


def test_frames_count_lines_like_python_despite_form_feeds(project, cli, fake_rules):
    write(project / "ff.py", "x = 1\n\x0c\ny = 2\nmarker()\n")
    out = cli("ff.py", "--no-cache").out
    assert " --> ff.py:4:1\n" in out
    assert "4 | marker()\n  | ^^^^^^^^\n" in out


def test_unsafe_fixes_are_marked_fixable_with_unsafe_fixes(sample, cli):
    lines = run_format(cli, "concise", "--unsafe-fixes").out.splitlines()
    assert lines[1] == "pkg/mod.py:5:12: SYN902 [*] risky() called"
    assert lines[-1] == "[*] 2 fixable with the `--fix` option."
