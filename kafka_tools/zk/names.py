"""The names ktool puts in znode paths, checked before they reach ZooKeeper: a consumer group's
(``/consumers/GROUP``) as ZooKeeper's own path rules allow, a topic's as Kafka's Topic.validate does.
Every path ktool makes from a group's name is made here (:func:`group_path`), so a name kazoo or
ZooKeeper would refuse (``..`` is a relative path to kazoo) is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import re

from kafka_tools.errors import UsageError

CONSUMERS = "/consumers"

# What ZooKeeper's PathUtils.validatePath refuses in a path component besides `.`, `..` and the empty
# name: `/`, NUL, the control characters and the code points it reserves.
_NOT_IN_ZNODE_NAME = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\uffff/]")
# Kafka's legal topic names (Topic.legalChars, at most 249 of them; Topic.validate refuses `.` and `..`).
LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def znode_name_problem(name: str) -> str | None:
    """Why `name` cannot be one component of a znode path, as ZooKeeper's PathUtils.validatePath says
    (None: it can). Kafka's ZooKeeper-era consumer checked its group.id only against
    [a-zA-Z0-9._-]* (kafka.common.Config.validateChars), so `.` and `..` passed it: ZooKeeper never held
    such a group."""
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"`{name}` is a relative path in ZooKeeper"
    bad = _NOT_IN_ZNODE_NAME.search(name)
    if bad:
        return f"ZooKeeper refuses {bad.group()!r} in a znode name"
    return None


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a Kafka topic name (Kafka's Topic.validate; None: it is one)."""
    if name in (".", ".."):
        return f"Kafka refuses `{name}` as a topic name"
    if not LEGAL_TOPIC.fullmatch(name):
        return "a topic name is 1 to 249 of a-z A-Z 0-9 . _ -"
    return None


def check_group_name(group: str) -> str:
    """`group`, when it can be a consumer group in ZooKeeper (/consumers/GROUP); else a UsageError (exit
    2) saying why, before anything is asked of ZooKeeper."""
    problem = znode_name_problem(group)
    if problem is not None:
        raise UsageError(f"group {group!r} cannot be a consumer group in ZooKeeper: {problem}")
    return group


def check_topic_name(topic: str) -> str:
    """`topic`, when it is a Kafka topic name; else a UsageError (exit 2) saying why."""
    problem = topic_name_problem(topic)
    if problem is not None:
        raise UsageError(f"topic {topic!r} is not a Kafka topic name: {problem}")
    return topic


def group_path(group: str, *below: str) -> str:
    """``/consumers/GROUP[/BELOW...]``, `group` checked by :func:`check_group_name`: every path ktool makes
    from a group's name is made here."""
    return "/".join((CONSUMERS, check_group_name(group), *below))


def offset_path(group: str, topic: str, partition: int) -> str:
    """``/consumers/GROUP/offsets/TOPIC/PARTITION``, group and topic checked."""
    return group_path(group, "offsets", check_topic_name(topic), str(partition))
