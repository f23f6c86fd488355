"""Random damage to valid segments: the dump never crashes, and every entry before the damage is still
decoded exactly as before."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_tools.log.reads.dump import dump_file
from kafka_tools.log.reads.dump_events import DumpOptions, EntryEvent, FileEnd
from tests.independent import FIXTURES

SOURCES = sorted(
    p for p in (FIXTURES / "generated").glob("**/*.log") if "corrupt" not in p.parts and p.stat().st_size
) + sorted((FIXTURES / "generated").glob("kafka07/**/*.kafka"))


def _entries(path: Path) -> tuple[list[tuple[int, int, int]], FileEnd]:
    entries, end = [], None
    for event in dump_file(path, DumpOptions(deep_iteration=True)):
        if isinstance(event, EntryEvent):
            e = event.entry
            n = len(event.records) if event.records is not None else -1
            entries.append((e.position, e.last_offset, n))
        elif isinstance(event, FileEnd):
            end = event
    assert end is not None
    return entries, end


DAMAGE = st.one_of(
    st.tuples(st.just("flip"), st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
    st.tuples(st.just("cut"), st.integers(min_value=0), st.just(0)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=64), st.just(0)),
    st.tuples(st.just("zeros"), st.integers(min_value=1, max_value=5000), st.just(0)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(SOURCES), damage=DAMAGE)
def test_damage_never_crashes_and_never_loses_what_came_before(
    tmp_path_factory, source: Path, damage
) -> None:
    data = bytearray(source.read_bytes())
    how, arg, xor = damage
    if how == "flip":
        where = arg % len(data)
        data[where] ^= xor
    elif how == "cut":
        where = arg % len(data)
        del data[where:]
    elif how == "append":
        where = len(data)
        data += arg
    else:
        where = len(data)
        data += bytes(arg)
    target = tmp_path_factory.mktemp("fuzz") / source.name
    target.write_bytes(bytes(data))

    before, _ = _entries(source)
    after, end = _entries(target)
    untouched = [e for e in before if e[0] + _size_at(source, e[0]) <= where]
    assert after[: len(untouched)] == untouched
    assert end.valid_bytes <= len(data)


def _size_at(path: Path, position: int) -> int:
    raw = path.read_bytes()
    if path.suffix == ".kafka":
        return 4 + int.from_bytes(raw[position : position + 4], "big")
    return 12 + int.from_bytes(raw[position + 8 : position + 12], "big")
