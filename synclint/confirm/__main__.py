"""``python -m synclint.confirm``: the ``confirm`` command on its own (the CLI also registers it)."""

from synclint.confirm.command import confirm

if __name__ == "__main__":
    confirm(prog_name="synclint confirm")
