"""The static catalogue (used by warm runs, which do not import the rules) matches the registry."""

from synclint.catalogue import CATALOGUE, DEFAULT_CODES, KNOWN_CODES
from synclint.rules.registry import all_rules


def test_catalogue_matches_the_registry() -> None:
    registry = [(code, rule.name, rule.default_enabled) for code, rule in all_rules().items()]
    assert list(CATALOGUE) == registry


def test_known_and_default_codes() -> None:
    assert KNOWN_CODES == tuple(all_rules())
    assert set(DEFAULT_CODES) == {c for c, r in all_rules().items() if r.default_enabled}


def test_a_warm_start_does_not_import_libcst() -> None:
    """Resolving the selection and the project's settings needs no rule module."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; "
        "import synclint.check_command, synclint.project; "
        "p = synclint.project.Project(synclint.project.Overrides()); "
        "p.file_settings(Path('x.py').resolve()); "
        "print('libcst' in sys.modules, 'synclint.rules.registry' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
