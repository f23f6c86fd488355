"""One error hierarchy for every command: a one-line message and an exit code.

Exit codes, for every command: 0 ok; 1 findings (corruption, a refused plan, a read-back that does not
match); 2 usage; 3 environment (file unreadable, server unreachable, auth failed); 130 interrupted (Ctrl-C);
143 terminated (SIGTERM, what `timeout` and service managers send), handled as Ctrl-C is.
"""

from __future__ import annotations

import errno
import os

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


# -- an OSError said in one line ------------------------------------------------------------------


def os_reason(exc: OSError, path: str | os.PathLike | None = None) -> str:
    """Why an OSError happened, in the one wording every command uses for its cause: the system's own
    words with a small first letter (`no such file or directory`, `permission denied`, `is a
    directory`, `too many levels of symbolic links`); a missing target of the symbolic link `path`
    is `a dangling symbolic link`."""
    if exc.errno == errno.ENOENT and path is not None and os.path.islink(path):
        return "a dangling symbolic link"
    text = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__)
    return text[:1].lower() + text[1:]


def os_error_line(path: str | os.PathLike, exc: OSError) -> str:
    """`PATH: why`, the one line an OSError about `path` is said in."""
    return f"{os.fspath(path)}: {os_reason(exc, path)}"


def path_error(path: str | os.PathLike) -> str | None:
    """`PATH: why` when `path` cannot be reached (missing, a dangling link, a loop of links, a directory
    that cannot be searched), None when it can: for checking the paths a user named before reading."""
    try:
        os.stat(path)
    except OSError as exc:
        return os_error_line(path, exc)
    except ValueError as exc:  # a NUL byte in the name
        return f"{os.fspath(path)}: {exc}"
    return None


def os_error(path: str | os.PathLike, exc: OSError) -> InputError:
    """The InputError (exit 3) saying an OSError about `path` in its one line."""
    return InputError(os_error_line(path, exc))


def missing_line(path: str | os.PathLike) -> str:
    """`PATH: why` for a path found missing (as `path_error` says it, or `no such file or directory`
    when it has appeared since)."""
    return path_error(path) or os_error_line(path, FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)))
