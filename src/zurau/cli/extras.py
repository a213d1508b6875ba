"""What an edge command says when an optional dependency is missing.

The edge services need packages the base install leaves out (pyproject's
``[project.optional-dependencies]``): ``zurau registry`` the ``registry`` extra, ``zurau connect``
the ``connect`` extra, ``zurau console`` the ``console`` extra, ``zurau pipeline`` the ``spark``
extra (and ``connect`` for the CDC pipeline); ``zurau[all]`` installs every one.

:func:`needs_extra` wraps such a command: a :class:`ModuleNotFoundError` for a module outside
Zurau that escapes it (while importing the service or starting it) becomes one line on stderr,
``error: zurau registry needs the 'registry' extra: pip install 'zurau[registry]' (missing module
httpx)``, and exit status 1, instead of a traceback. A missing Zurau module is a bug and is raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from zurau.cli.output import print_error


def missing_extra_message(command: str, extra: str, module: str) -> str:
    return f"{command} needs the '{extra}' extra: pip install 'zurau[{extra}]' (missing module {module})"


@contextmanager
def needs_extra(command: str, extra: str) -> Iterator[None]:
    """See the module docstring."""
    try:
        yield
    except ModuleNotFoundError as e:
        if not e.name or e.name.partition(".")[0] == "zurau":
            raise
        print_error(missing_extra_message(command, extra, e.name))
        raise typer.Exit(1) from None
