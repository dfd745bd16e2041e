"""``python -m synclint``: the same as the ``synclint`` command."""

from synclint.cli import main

if __name__ == "__main__":
    main()
