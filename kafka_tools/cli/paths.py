"""The one click type for a path argument or option: click's own check of it is left off.

click.Path checks that an existing path is readable (`os.access`) and answers exit 2 with the usage
text; as root every path passes, so only another user ever met it, and for them an unreadable log dir,
segment or credentials file was a usage error. Reading is the command's: an unreadable path is the
environment's, one line naming it and the reason, exit 3 (the exit-code matrix's unreadable file).
"""

from __future__ import annotations

from typing import Any

import click


def path_type(**kwargs: Any) -> click.Path:
    """click.Path(**kwargs) without the readable check (see the module's docstring)."""
    return click.Path(readable=False, **kwargs)
