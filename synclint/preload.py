"""Everything a worker process needs to lint any file, imported by importing this module.

The command line's workers fork from a server that imports this once (see
:mod:`synclint.fork_server`), so none of them pays for it again: libcst alone takes a few
hundred milliseconds, most of it building its node classes. ``tests/test_workers.py`` checks that
linting any fixture, with every rule, in every mode, imports nothing this did not.
"""

import libcst.native  # noqa: F401 - libcst's parser, for files the mirror cannot build

import synclint.cache  # noqa: F401 - a ``check`` job with a cache
import synclint.cli  # noqa: F401 - a worker runs the ``synclint`` script as its main module
import synclint.engine  # noqa: F401
import synclint.fixer  # noqa: F401 - ``--fix`` and ``--diff`` jobs
import synclint.mirror  # noqa: F401
import synclint.mirror_code  # noqa: F401
import synclint.model.scopes  # noqa: F401
import synclint.positions  # noqa: F401
import synclint.runner  # noqa: F401
import synclint.screen  # noqa: F401
from synclint.rules.registry import all_rules

all_rules()  # imports every rule module
