"""Configuration files: discovery (closest wins), validation, selection layering, analysis keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from frame_helpers import write

from synclint.config import VALID_KEYS, ConfigError, ConfigFinder, load_config
from synclint.project import Overrides, Project
from synclint.settings import AnalysisSettings


def codes_found(cli, *args) -> list[tuple[str, str]]:
    result = cli(*args, "--no-cache", "--output-format", "json")
    assert result.status in (0, 1), result.err
    return sorted((Path(item["filename"]).name, item["code"]) for item in json.loads(result.out))


def test_closest_configuration_wins(project, cli, fake_rules):
    write(project / "pyproject.toml", '[tool.synclint]\nignore = ["SYN901"]\n')
    write(project / "a.py", "marker()\nrisky(1)\n")
    write(project / "sub" / "synclint.toml", 'select = ["SYN901"]\n')
    write(project / "sub" / "b.py", "marker()\nrisky(1)\n")
    assert codes_found(cli, ".") == [("a.py", "SYN902"), ("b.py", "SYN901")]


def test_synclint_toml_beats_pyproject_in_one_directory(project):
    write(project / "pyproject.toml", '[tool.synclint]\nselect = ["SYN001"]\n')
    write(project / "synclint.toml", 'ignore = ["SYN001"]\n')
    config = ConfigFinder(project).for_directory(project)
    assert config.path == project / "synclint.toml"


def test_pyproject_without_our_table_is_passed_over(project):
    write(project / "synclint.toml", 'ignore = ["SYN001"]\n')
    write(project / "sub" / "pyproject.toml", "[tool.black]\nline-length = 80\n")
    config = ConfigFinder(project).for_directory(project / "sub")
    assert config.path == project / "synclint.toml"


def test_unknown_key_is_an_error_naming_the_valid_keys(project, cli):
    write(project / "pyproject.toml", '[tool.synclint]\nselct = ["SYN101"]\n')
    write(project / "a.py", "x = 1\n")
    result = cli("a.py")
    assert result.status == 2
    assert "unknown key `selct`" in result.err
    for key in VALID_KEYS:
        assert key in result.err


def test_malformed_toml_names_file_and_position(project, cli):
    write(project / "pyproject.toml", "[tool.synclint]\nselect = [SYN101]\nignore = []\n")
    write(project / "a.py", "x = 1\n")
    result = cli("a.py")
    assert result.status == 2
    assert "pyproject.toml: invalid TOML" in result.err
    assert "line 2, column 11" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    "body, message",
    [
        ('select = "SYN101"', "`select` must be a list of strings"),
        ("respect-gitignore = 1", "`respect-gitignore` must be true or false"),
        ('parameter-origin = "anywhere"', "`parameter-origin` must be one of"),
        ('per-file-ignores = ["x"]', "`per-file-ignores` must be a table"),
        ("cache-dir = 3", "`cache-dir` must be a string"),
    ],
)
def test_wrong_types_are_errors(project, body, message):
    write(project / "synclint.toml", body + "\n")
    with pytest.raises(ConfigError, match=message):
        load_config(project / "synclint.toml")


def test_unknown_code_in_configuration_is_an_error(project, cli):
    write(project / "synclint.toml", 'extend-select = ["SYN998"]\n')
    write(project / "a.py", "x = 1\n")
    result = cli("a.py")
    assert result.status == 2
    assert "synclint.toml" in result.err and "SYN998" in result.err


def test_command_line_select_overrides_configured_ignore(project, cli, fake_rules):
    write(project / "synclint.toml", 'ignore = ["SYN901"]\n')
    write(project / "a.py", "marker()\n")
    assert codes_found(cli, "a.py") == []
    assert codes_found(cli, "a.py", "--select", "SYN901") == [("a.py", "SYN901")]


def test_per_file_ignores(project, cli, fake_rules):
    write(
        project / "synclint.toml",
        '[per-file-ignores]\n"tests/*" = ["SYN90"]\n"b.py" = ["SYN902"]\n',
    )
    write(project / "tests" / "t.py", "marker()\nrisky(1)\n")
    write(project / "b.py", "marker()\nrisky(1)\n")
    assert codes_found(cli, ".") == [("b.py", "SYN901")]


def test_explicit_config_file(project, cli, fake_rules):
    write(project / "elsewhere" / "conf.toml", 'select = ["SYN902"]\n')
    write(project / "synclint.toml", 'select = ["SYN901"]\n')
    write(project / "a.py", "marker()\nrisky(1)\n")
    assert codes_found(cli, "a.py", "--config", "elsewhere/conf.toml") == [("a.py", "SYN902")]
    missing = cli("a.py", "--config", "nope.toml")
    assert missing.status == 2 and "nope.toml" in missing.err


def test_analysis_keys_reach_analysis_settings(project):
    write(
        project / "pyproject.toml",
        "[tool.synclint]\n"
        'accelerator-wrappers = ["mylib.accel"]\n'
        'synchronizing-functions = ["mylib.sync"]\n'
        'parameter-origin = "synchronized"\n',
    )
    write(project / "a.py", "x = 1\n")
    settings = Project(Overrides(), project).file_settings(project / "a.py").settings
    assert settings == AnalysisSettings(("mylib.accel",), ("mylib.sync",), "synchronized")


def test_defaults_without_any_configuration(project):
    write(project / "a.py", "x = 1\n")
    from synclint.engine import default_codes

    chosen = Project(Overrides(), project).file_settings(project / "a.py")
    assert chosen.codes == default_codes()
    assert chosen.settings == AnalysisSettings()


def test_cache_dir_key(project, cli):
    write(project / "synclint.toml", 'cache-dir = "var/cache"\n')
    write(project / "a.py", "x = 1\n")
    assert cli("a.py").status == 0
    assert (project / "var" / "cache" / "CACHEDIR.TAG").is_file()
    assert not (project / ".synclint_cache").exists()
