"""Build hook: ship the rule pages inside the package.

``rules/*.md`` is the single source of the rule pages; building copies them into
``synclint/rulebook/`` in the build tree so that ``synclint rule SYN101`` works from an installed
wheel. Everything else is configured in ``pyproject.toml``.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithRuleBook(build_py):
    def run(self) -> None:
        super().run()
        pages = Path(__file__).resolve().parent / "rules"
        target = Path(self.build_lib) / "synclint" / "rulebook"
        self.mkpath(str(target))
        for page in sorted(pages.glob("*.md")):
            self.copy_file(str(page), str(target / page.name))


setup(cmdclass={"build_py": BuildWithRuleBook})
