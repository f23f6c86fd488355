"""One error hierarchy for every command: a one-line message and an exit code.

Exit codes, for every command: 0 ok; 1 findings (corruption, a refused plan, a read-back that does not
match); 2 usage; 3 environment (file unreadable, server unreachable, auth failed); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT


class KtoolError(Exception):
    """Base of every error ktool reports to a user; `str()` is the one line it prints."""

    exit_code = EXIT_ENVIRONMENT


class UsageError(KtoolError):
    exit_code = EXIT_USAGE


class InputError(KtoolError):
    """A file or server cannot be read at all (missing, unreadable, unreachable)."""

    exit_code = EXIT_ENVIRONMENT


class FindingsError(KtoolError):
    """The command ran, and what it found (corruption, a refused plan) makes it fail."""

    exit_code = EXIT_FINDINGS
