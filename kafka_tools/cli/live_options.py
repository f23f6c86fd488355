"""`--live` / `--offline`: the one pair of flags every command reading log dirs shares, for when a
log dir's `.lock` cannot tell whether a broker writes it (a copy of a log dir, a broker on another
host's mount). Without either, the lock decides (kafka_tools/broker_lock.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kafka_tools import broker_lock

F = TypeVar("F", bound=Callable[..., Any])


def _set_mode(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if ctx.resilient_parsing:
        return
    if value is None:
        return  # $KTOOL_LIVENESS, or the lock
    before = broker_lock.mode()
    broker_lock.set_mode(value)
    ctx.call_on_close(lambda: broker_lock.set_mode(before))  # an in-process caller's next command asks again


def live_options(func: F) -> F:
    return click.option(
        "--live/--offline",
        "liveness",
        default=None,
        expose_value=False,
        is_eager=True,
        callback=lambda ctx, param, value: _set_mode(
            ctx, param, None if value is None else (broker_lock.LIVE if value else broker_lock.OFFLINE)
        ),
        help="Read the log dirs as a running broker's (its newest segment in flight, repairs refused) or "
        "as a stopped one's [default: $KTOOL_LIVENESS, else whether a broker holds the log dir's .lock].",
    )(func)
