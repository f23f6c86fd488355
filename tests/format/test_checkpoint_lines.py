"""The checkpoint reader counts and splits lines a chunk at a time (an 11-million-line checkpoint once
took 1.66 GB and two minutes): its lines must be exactly those `str.splitlines` made of the whole file,
whatever falls on a chunk's edge (a `\\r\\n` cut in two, a UTF-8 character cut in two)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.format import checkpoints

_pieces = st.lists(
    st.sampled_from(["a", "0", " ", "\n", "\r", "\r\n", "\x0b", "\x1c", "\x85", "\u2028", "é", "€", "𝄞"]),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(pieces=_pieces, chunk=st.integers(min_value=1, max_value=9))
def test_lines_and_their_count_are_what_splitlines_makes(tmp_path_factory, pieces, chunk) -> None:
    text = "".join(pieces)
    path = tmp_path_factory.mktemp("lines") / "f"
    path.write_bytes(text.encode())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "CHUNK", chunk)
        assert checkpoints._line_count(path, 1 << 20, "x") == len(text.splitlines())
        assert list(checkpoints._lines(path)) == text.splitlines()


@settings(max_examples=200, deadline=None)
@given(head=st.text(alphabet="ab\n", max_size=20), chunk=st.integers(min_value=1, max_value=9))
def test_text_that_is_not_utf8_is_named_at_its_byte_and_line(tmp_path_factory, head, chunk) -> None:
    raw = head.encode() + b"\xe2\x82" + b"x\n"  # a 3-byte character cut after 2
    path = tmp_path_factory.mktemp("utf8") / "f"
    path.write_bytes(raw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "CHUNK", chunk)
        with pytest.raises(checkpoints.CheckpointError) as info:
            checkpoints._line_count(path, 1 << 20, "x")
    assert str(info.value) == f"not UTF-8 text (byte {len(head.encode())})"
    assert info.value.line == head.count("\n") + 1


def test_a_count_over_the_cap_is_refused_without_keeping_a_line(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    lines = checkpoints.MAX_CHECKPOINT_ENTRIES + 1
    path.write_bytes(b"0\n%d\n" % lines + b"t 0 0\n" * lines)
    with pytest.raises(checkpoints.CheckpointError, match="more than the 1000000 ktool reads"):
        checkpoints.read_offset_checkpoint(path)


def test_a_small_file_is_capped_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    with open(path, "wb") as f:
        f.truncate(checkpoints.MAX_SMALL_TEXT_FILE + 1)
    with pytest.raises(checkpoints.CheckpointError, match="too large for this file"):
        checkpoints.read_properties(path)
