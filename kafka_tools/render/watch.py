"""`ktool groups watch` output: one line per event, flushed at once (a script reads it as it comes).

JSON Lines: ``{"ts": "<ISO-8601 UTC, ms>", "event": …, "group": … or null, <the event's fields>}``.
Text: ``<ts> <event> [<group>] key=value …``, coloured by kind on a terminal, plain in a pipe.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, TextIO

from kafka_tools.consumers.group_tracker import WatchEvent
from kafka_tools.render.json_lines import dumps as json_line

_STYLES = {
    "member-joined": "green",
    "broker-joined": "green",
    "member-left": "yellow",
    "broker-left": "red",
    "rebalance-started": "yellow",
    "rebalance-finished": "bold green",
    "partition-stuck": "bold red",
    "partition-recovered": "green",
    "connection-suspended": "red",
    "session-expired": "bold red",
    "connection-restored": "green",
    "malformed-znode": "red",
    "timeout": "bold red",
}


def timestamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_json(event: WatchEvent) -> dict[str, Any]:
    return {
        "type": "event",
        "ts": timestamp(event.ts),
        "event": event.event,
        "group": event.group,
        **event.fields,
    }


def _value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json_line(value)
    return str(value)


def event_text(event: WatchEvent) -> str:
    parts = [timestamp(event.ts), event.event]
    if event.group is not None:
        parts.append(f"group={event.group}")
    fields = dict(event.fields)
    if event.event == "rebalance-verified":  # the lists are empty when it is fine: say so shortly
        fields = {k: v for k, v in fields.items() if v != []}
    if event.event == "group-state":  # a line per partition would drown the state: `--json` has them
        fields.pop("owners", None)
    parts += [f"{key}={_value(value)}" for key, value in fields.items()]
    return " ".join(parts)


class WatchRenderer:
    def __init__(self, out: TextIO, colour: bool, as_json: bool) -> None:
        self.out = out
        self.as_json = as_json
        self.events = 0
        self._console = None
        if colour and not as_json:
            from rich.console import Console

            self._console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=True)

    def finish(self) -> None:
        """--json: the summary line, however the watch ended (--once, --until-stable, Ctrl-C)."""
        if self.as_json:
            self.out.write(json_line({"type": "summary", "events": self.events}) + "\n")
            self.out.flush()

    def __call__(self, event: WatchEvent) -> None:
        self.events += 1
        if self.as_json:
            self.out.write(json_line(event_json(event)) + "\n")
        elif self._console is not None:
            ok = event.fields.get("ok")
            style = _STYLES.get(event.event) or ("bold red" if ok is False else None)
            self._console.print(event_text(event), style=style, markup=False)
        else:
            self.out.write(event_text(event) + "\n")
        self.out.flush()
