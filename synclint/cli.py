"""The ``synclint`` command line.

``synclint PATH...`` is ``synclint check PATH...``. Exit status: 0 clean, 1 findings, 2 usage,
configuration or internal error (click's own "1 on an uncaught exception" is mapped to 2, so a crash
never looks like "findings"). Only click is imported at start-up; each command imports what it needs.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click

import synclint

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github")


class Failure(click.ClickException):
    """A usage or configuration problem: message on standard error, exit status 2."""

    exit_code = EXIT_ERROR

    def show(self, file=None) -> None:
        _err(f"error: {self.message}")


def _write(stream, text: str) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def _out(text: str) -> None:
    _write(sys.stdout, text if text.endswith("\n") else text + "\n")


def _err(text: str) -> None:
    _write(sys.stderr, text if text.endswith("\n") else text + "\n")


def _confirm_command() -> click.Command | None:
    """``synclint confirm`` from :mod:`synclint.confirm.command`, imported only when asked for."""
    try:
        from synclint.confirm.command import confirm  # noqa: PLC0415
    except ModuleNotFoundError as error:
        if error.name and (
            error.name == "synclint.confirm" or error.name.startswith("synclint.confirm.")
        ):
            return None
        return _broken_confirm(error)
    except Exception as error:  # noqa: BLE001 - a broken optional command must not break `check`
        return _broken_confirm(error)
    return confirm


def _broken_confirm(error: BaseException) -> click.Command:
    @click.command(
        "confirm",
        help="Prove findings on a GPU (failed to load).",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def broken() -> int:
        raise Failure(f"`synclint confirm` is unavailable: {type(error).__name__}: {error}")

    return broken


class SynclintGroup(click.Group):
    """A group whose default command is ``check``: ``synclint src/`` lints ``src/``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if (
            args
            and args[0] not in self.commands
            and args[0] != "confirm"
            and args[0] not in ("-h", "--help", "--version")
        ):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == "confirm":
            return _confirm_command()
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = list(super().list_commands(ctx))
        import importlib.util

        try:
            if importlib.util.find_spec("synclint.confirm") is not None:
                names.append("confirm")
        except (ImportError, ValueError):
            pass
        return sorted(names)


@click.group(cls=SynclintGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    synclint.__version__, "--version", prog_name="synclint", message="%(prog)s %(version)s"
)
def cli() -> None:
    """synclint: find CUDA stream and event synchronization bugs in PyTorch code.

    `synclint PATH...` is short for `synclint check PATH...`.
    """


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--select",
    multiple=True,
    help="Rules to enable (codes, prefixes like SYN1, or ALL); replaces the configured set.",
)
@click.option(
    "--extend-select", multiple=True, help="Rules to enable in addition to the selected ones."
)
@click.option("--ignore", multiple=True, help="Rules to disable.")
@click.option("--fix/--no-fix", default=False, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or offer unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    default=None,
    help="How to report findings (default: full).",
)
@click.option(
    "--statistics", is_flag=True, help="Print how many findings of each rule, not the findings."
)
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are findings.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option(
    "--force-exclude", is_flag=True, help="Apply exclusions to files named on the command line too."
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Use this configuration file for every path.",
)
@click.option(
    "--stdin-filename", default=None, help="The file name to report for `-` (standard input)."
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only (no summary, no warnings).")
def check(
    paths,
    select,
    extend_select,
    ignore,
    fix,
    unsafe_fixes,
    diff,
    output_format,
    statistics,
    exit_zero,
    no_cache,
    force_exclude,
    config_path,
    stdin_filename,
    quiet,
) -> int:
    """Lint PATHS (files or directories; default: the current directory; `-`: standard input)."""
    from synclint import fork_server

    # Before the imports below (about 30 ms): the server's own imports take the other core.
    if fork_server.workers_certain(paths, cache_off=no_cache or fix or diff):
        fork_server.start()
    from synclint.check_command import CheckOptions, run_check

    options = CheckOptions(
        paths=tuple(paths),
        select=_codes(select) if select else None,
        extend_select=_codes(extend_select),
        ignore=_codes(ignore),
        fix=fix,
        unsafe_fixes=unsafe_fixes,
        diff=diff,
        output_format=output_format or "full",
        statistics=statistics,
        exit_zero=exit_zero,
        no_cache=no_cache,
        force_exclude=force_exclude,
        config=config_path,
        stdin_filename=stdin_filename,
        quiet=quiet,
    )
    return run_check(options, out=_out, err=_err, fail=Failure)


@cli.command("rules")
def rules_command() -> int:
    """List every rule: code, name, default, fix."""
    from synclint.rules.registry import all_rules

    rows = [("Code", "Name", "Default", "Fix", "Summary")]
    for code, rule in all_rules().items():
        rows.append(
            (
                code,
                rule.name,
                "on" if rule.default_enabled else "off",
                rule.fix_kind.value,
                rule.summary,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        _out("  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4])
    return EXIT_CLEAN


@cli.command("rule")
@click.argument("code")
def rule_command(code: str) -> int:
    """Print the documentation page of rule CODE."""
    from synclint.rule_pages import rule_page
    from synclint.rules.registry import all_rules

    code = code.strip().upper()
    if code not in all_rules():
        raise Failure(f"unknown rule `{code}`; known rules: {', '.join(all_rules())}")
    page = rule_page(code)
    if page is None:
        raise Failure(f"no documentation page for {code} in this installation")
    _out(page)
    return EXIT_CLEAN


@cli.command("clean")
def clean_command() -> int:
    """Remove synclint's caches under the current directory (and the configured `cache-dir`)."""
    from synclint.cache import clean, remove_cache_dir
    from synclint.config import ConfigError
    from synclint.project import Overrides, Project

    removed = clean(Path.cwd())
    try:
        configured = Project(Overrides()).cache_dir()
    except ConfigError as error:
        raise Failure(str(error)) from None
    if remove_cache_dir(configured):
        removed.append(configured)
    for path in removed:
        _err(f"removed {os.path.relpath(path)}")
    return EXIT_CLEAN


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit status (never raises, except SystemExit)."""
    try:
        result = cli.main(args=argv, prog_name="synclint", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.UsageError as error:
        error.show()
        return EXIT_ERROR
    except click.ClickException as error:
        error.show()
        return EXIT_ERROR
    except click.Abort:
        _err("Aborted.")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        except OSError:
            pass
        return EXIT_ERROR
    except Exception as error:  # noqa: BLE001
        _err(
            f"error: internal error: {type(error).__name__}: {error} (this is a synclint bug; please report it)"
        )
        _err(traceback.format_exc().rstrip())
        return EXIT_ERROR
    return result if isinstance(result, int) else EXIT_CLEAN


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(argv))
