"""What dump-log's renderers are handed instead of decoding: the records of a batch, the messages of
a wrapper or a run, a control record's fields — and, when the C extension is built, a batch's or a
message set's lines written straight from its bytes (Kafka's text lines, ktool's JSON objects).

The renderers decide the look (colour, decoders, which fields); this decides nothing of the look and
only reads bytes, through format/ (accel is asked at each call, so one switch turns C off everywhere).
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_tools.format import accel
from kafka_tools.format.message_set import LegacyMessage, iter_messages
from kafka_tools.format.record_batch import ControlRecord, RecordBatch, control_record
from kafka_tools.format.record_reader import Record


class RecordWriter:
    """The decoding a dump renderer needs, C where it is built, the Python reference otherwise."""

    # -- decoded objects (the Python path, and what the C lines fall back to) --------------------------

    @staticmethod
    def records(batch: RecordBatch) -> list[Record]:
        return batch.records()

    @staticmethod
    def inner_messages(wrapper) -> list:
        return wrapper.inner_messages()

    @staticmethod
    def messages(data: bytes, position: int) -> Iterator[LegacyMessage]:
        """The plain messages of a MessageRun's bytes (`position`: the file position of data[0])."""
        return iter_messages(data, position)

    @staticmethod
    def control(record: Record) -> ControlRecord:
        """A control batch's record (raises RecordDecodeError when its key is too short)."""
        return control_record(record)

    # -- lines made in C from the bytes -----------------------------------------------------------------

    @property
    def has_payload_lines(self) -> bool:
        return accel.fast("format_payload") is not None

    @property
    def has_record_lines(self) -> bool:
        return accel.fast("format_records") is not None

    @property
    def has_message_lines(self) -> bool:
        return accel.fast("format_messages") is not None

    @staticmethod
    def payload_lines(
        batch: RecordBatch,
        label: str,
        print_data: bool,
        file_json: str | None = None,
        section: bytes | bytearray | None = None,
        head: str | None = None,
    ) -> bytes:
        """A batch's record lines (text, or `record` JSON objects with `file_json`, the file name as a
        JSON string), read in C from its records section (`section`: a compressed batch's,
        decompressed), after `head` (the batch's own line); RecordDecodeError as `records()` raises
        it; UnicodeEncodeError for a file name that is not text."""
        args = (*batch.payload_args(section), label, print_data, False, file_json, batch.position, head)
        return accel.C.format_payload(*args)

    @staticmethod
    def record_lines(records: list[Record], label: str, print_data: bool) -> bytes:
        """Kafka's text lines of decoded records, made in C (one write a batch)."""
        return accel.C.format_records(records, label, print_data)

    @staticmethod
    def message_lines(
        inner_set, position: int, json: bool, print_data: bool, file_json: str, wrapper_position: int
    ) -> bytes | None:
        """A set of plain messages' lines (text, or JSON objects), made in C; None when it holds a
        compressed message (or an offset past int64): the renderer then goes message by message."""
        data, _, shift, append_time = inner_set
        try:
            return accel.C.format_messages(
                data, position, json, print_data, file_json, wrapper_position, shift, append_time
            )
        except (ValueError, OverflowError):
            return None
