"""The offsets files `ktool offsets export` writes and `import` reads: ZooKeeper-style
`/consumers/G/offsets/T/P:offset` lines or `group,topic,partition,offset` CSV, told apart line by line."""

from __future__ import annotations

import csv
from pathlib import Path

from kafka_tools.errors import InputError, os_error


def parse_offsets_file(path: Path) -> dict[str, dict[tuple[str, int], int]]:
    """Both formats, told apart line by line; errors name the line."""
    if path.exists() and not path.is_dir() and not path.is_file():
        raise InputError(f"{path}: not a regular file (expected an offsets file)")
    try:
        lines = path.read_text().splitlines()
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory (expected an offsets file)") from None
    except OSError as exc:
        raise os_error(path, exc) from None
    out: dict[str, dict[tuple[str, int], int]] = {}
    for n, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            if line.startswith("/consumers/"):
                znode, _, offset = line.rpartition(":")
                _, _, group, kind, topic, partition = znode.split("/")
                if kind != "offsets":
                    raise ValueError(kind)
            else:
                group, topic, partition, offset = next(csv.reader([line]))
            out.setdefault(group, {})[(topic, int(partition))] = int(offset)
        except ValueError:
            raise InputError(
                f"{path}:{n}: not `/consumers/G/offsets/T/P:offset` nor `group,topic,partition,offset`"
            ) from None
    return out
