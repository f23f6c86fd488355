"""The C extension (format/csrc/), imported here and nowhere else, and the one switch that turns it off.

`C` is the extension module, or None when it is not built or `KTOOL_PURE_PYTHON=1` was set at import.
Every fast path asks `fast(name)` when it runs, so setting `C` to None (the tests' `pure` fixture)
turns every C path off at once and the pure-Python reference runs everywhere; `without(...)` keeps all
but the named ones on, to test a mix (the C walk with the Python renderer).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any


def _load() -> ModuleType | None:
    if os.environ.get("KTOOL_PURE_PYTHON"):
        return None
    try:
        from kafka_tools.format import _speedups
    except ImportError:
        return None
    return _speedups


C: Any = _load()
BUILT = C is not None  # the extension is there and was not disabled at import


def map_guard() -> ModuleType | None:
    """The extension for its SIGBUS guard of mapped files (format/mapping.py), loaded even when
    `KTOOL_PURE_PYTHON=1` turned its decoders off: the pure-Python walk reads maps too. None when it is
    not built (then nothing is mapped)."""
    if C is not None:
        return C
    try:
        from kafka_tools.format import _speedups
    except ImportError:
        return None
    return _speedups


def fast(name: str) -> Callable | None:
    """The C function `name` when the C paths are on, else None (take the Python path)."""
    return getattr(C, name, None)


def without(*names: str) -> SimpleNamespace:
    """The extension with the named functions missing: what `C` is set to for a mix of C and Python."""
    kept = {k: getattr(C, k) for k in dir(C) if not k.startswith("__") and k not in names}
    return SimpleNamespace(**kept)
