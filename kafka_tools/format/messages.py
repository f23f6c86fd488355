"""The texts of the decoder's errors, once: the Python readers format these templates, and the C
reader's texts (csrc/records_v2.c `failure_text`, whose names these mirror) are checked against them
by tests/format/test_messages.py, so the two cannot drift apart. `{}` where C has `%lld`."""

from __future__ import annotations

# -- a v2 record (the C reader's `failure_text`), said as "record N: <text>" --------------------------
PAST_END = "runs past the end of the batch"
TOO_LONG = "varint longer than 10 bytes"
BAD_LENGTH = "length {} is impossible"
BAD_KEY = "key length {} is invalid"
BAD_VALUE = "value length {} is invalid"
BAD_HEADER_COUNT = "header count {} is impossible"
BAD_HEADER_KEY = "header key length {} is invalid"
BAD_HEADER_VALUE = "header value length {} is invalid"
OFFSET_OVERFLOW = "offset delta {} takes the offset past int64"
TIMESTAMP_OVERFLOW = "timestamp delta {} takes the timestamp past int64"
FIELDS_END = "fields do not end where its length {} says"
RECORD_AT = "record {}: {}"
STRAY_BYTES = "{} after the batch's {}"  # plural('stray byte'), plural('record')

# -- a v0/v1 message and a wrapper's inner set --------------------------------------------------------
NOT_MESSAGE_MAGIC = "magic {} is not a message-set magic (0 or 1)"
MESSAGE_BELOW_MINIMUM = "message size {} is below the minimum {}"
MESSAGE_PAST_SET = "message size {} runs past the end of its message set"
FIELD_PAST_MESSAGE = "{} length {} runs past the message"  # key | value
VALUE_LENGTH_CUT = "message ends inside its value length"
AFTER_VALUE = "message has {} after its value"  # plural('byte')
INNER_AT = "inner message {}: {}"
INNER_STRAY = "{} after {} (decompressed payload)"  # plural('stray byte'), plural('inner message')
WRAPPER_EMPTY = "compressed wrapper holds no messages"
WRAPPER_NULL = "compressed wrapper has a null value"
INNER_V1_PAST_INT64 = "inner message {}: relative offset {} moved by {} is past int64"

# -- compressed payloads --------------------------------------------------------------------------------
INSIDE_PAYLOAD = "{} (inside the decompressed payload)"
UNDECOMPRESSABLE = "{} payload cannot be decompressed: {}"  # codec label, why

# The C reader's names (csrc/record_reader.h `why`) for the record texts above.
C_RECORD_TEXTS = {
    "PAST_END": PAST_END,
    "TOO_LONG": TOO_LONG,
    "BAD_LENGTH": BAD_LENGTH,
    "BAD_KEY": BAD_KEY,
    "BAD_VALUE": BAD_VALUE,
    "BAD_HEADER_COUNT": BAD_HEADER_COUNT,
    "BAD_HEADER_KEY": BAD_HEADER_KEY,
    "BAD_HEADER_VALUE": BAD_HEADER_VALUE,
    "OFFSET_OVERFLOW": OFFSET_OVERFLOW,
    "TIMESTAMP_OVERFLOW": TIMESTAMP_OVERFLOW,
    "default": FIELDS_END,
}
