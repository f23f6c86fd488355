"""One error hierarchy for every command: a one-line message and an exit code.

Exit codes, for every command: 0 ok; 1 findings (corruption, a refused plan, a read-back that does not
match); 2 usage; 3 environment (file unreadable, server unreachable, auth failed); 130 interrupted (Ctrl-C);
143 terminated (SIGTERM, what `timeout` and service managers send), handled as Ctrl-C is.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
EXIT_TERMINATED = 143  # SIGTERM, as a shell reports it


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises KeyboardInterrupt: every path that
    cleans up and summarises after Ctrl-C does so after SIGTERM too; only the exit code differs."""


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
