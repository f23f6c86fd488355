"""Known pre-release layouts (kafka_tools/format/kraft/pre_release.py): a PartitionRecord v1 as Kafka
trunk wrote it in late 2023 (ELR as tags 1-2, no Directories), encoded by the tests' own encoder,
decodes with that layout and is marked so, in C and in Python alike; a record the released schema
decodes is never reinterpreted, and bytes no layout takes exactly stay an error."""

from __future__ import annotations

import pytest

from kafka_tools.format.kraft import MetadataDecodeError, MetadataRecord, decode_metadata_record, decoder
from tests.format import kraft_encoder as enc

LABEL = "pre-3.7 trunk: PartitionRecord v1 with KIP-966 ELR as tags 1-2"
TOPIC_ID = "JiPG0GbKRRqpJrShexbMfw"
BASE = {
    "partitionId": 3,
    "topicId": TOPIC_ID,
    "replicas": [1, 2, 3],
    "isr": [1, 2],
    "removingReplicas": [3],
    "addingReplicas": [],
    "leader": 2,
    "leaderEpoch": 7,
    "partitionEpoch": 9,
}
DECODERS = [pytest.param(decoder.decode_metadata_record_py, id="python")]
if decoder.HAS_SPEEDUPS:
    DECODERS.append(pytest.param(decode_metadata_record, id="c"))


@pytest.mark.parametrize("decode", DECODERS)
def test_a_pre_release_partition_record_v1_decodes_with_its_layout_and_is_marked(decode) -> None:
    data = {**BASE, "leaderRecoveryState": 1, "eligibleLeaderReplicas": [3], "lastKnownElr": [1, 4]}
    rec = decode(enc.pre_release_partition_record_v1(data))
    assert (rec.type_name, rec.type_id, rec.version, rec.known, rec.layout) == (
        "PartitionRecord",
        3,
        1,
        True,
        LABEL,
    )
    assert rec.fields == data
    assert list(rec.fields) == [  # the released schema's order, ELR last
        "partitionId",
        "topicId",
        "replicas",
        "isr",
        "removingReplicas",
        "addingReplicas",
        "leader",
        "leaderRecoveryState",
        "leaderEpoch",
        "partitionEpoch",
        "eligibleLeaderReplicas",
        "lastKnownElr",
    ]


@pytest.mark.parametrize("decode", DECODERS)
def test_absent_and_null_elr_tags_take_the_default_null(decode) -> None:
    absent = decode(enc.pre_release_partition_record_v1(dict(BASE)))
    nulls = decode(
        enc.pre_release_partition_record_v1({**BASE, "eligibleLeaderReplicas": None, "lastKnownElr": None})
    )
    for rec in (absent, nulls):
        assert rec.layout == LABEL
        assert (rec.fields["eligibleLeaderReplicas"], rec.fields["lastKnownElr"]) == (None, None)
        assert rec.fields["leaderRecoveryState"] == 0


@pytest.mark.parametrize("decode", DECODERS)
def test_released_partition_records_are_never_reinterpreted(decode) -> None:
    schema = enc.load_schemas()["PartitionRecord"]
    for version in schema.versions:
        for seed in range(5):
            value = enc.frame(schema, version, enc.sample(schema, version, seed))
            rec = decode(value)
            assert rec.layout is None and rec.version == version
            assert ("directories" in rec.fields) == (version >= 1)


@pytest.mark.parametrize("decode", DECODERS)
def test_bytes_no_layout_takes_exactly_stay_the_released_schemas_error(decode) -> None:
    value = enc.pre_release_partition_record_v1({**BASE, "eligibleLeaderReplicas": [3]})
    released_v1 = decoder.METADATA_TYPES[3].programs[1]
    for bad in (value + b"\x00", value[:-1]):
        with pytest.raises(MetadataDecodeError) as caught:
            decode(bad)
        with pytest.raises(MetadataDecodeError) as expected:
            decoder.decode_body(released_v1, bad, 3, "PartitionRecord v1")
        assert (caught.value.message, caught.value.position) == (
            expected.value.message,
            expected.value.position,
        )


def test_c_and_python_agree_on_pre_release_records_and_their_failures() -> None:
    if not decoder.HAS_SPEEDUPS:
        pytest.skip("the C extension is not built")
    values = [
        enc.pre_release_partition_record_v1({**BASE, "eligibleLeaderReplicas": elr, "lastKnownElr": last})
        for elr in (None, [], [5, 6])
        for last in (None, [1])
    ]
    values += [v[:cut] for v in values[:2] for cut in range(3, len(v))]
    for value in values:
        outcomes = []
        for decode in (decode_metadata_record, decoder.decode_metadata_record_py):
            try:
                outcomes.append(decode(value))
            except MetadataDecodeError as exc:
                outcomes.append((exc.message, exc.position))
        assert outcomes[0] == outcomes[1], value.hex()


def test_the_c_interpreter_hands_what_it_fails_on_to_the_pre_release_layouts() -> None:
    """The C table knows the released schemas only: configured without the fallback it rejects the
    record, with it (as the decoder configures it) the record comes back decoded and marked."""
    if not decoder.HAS_SPEEDUPS:
        pytest.skip("the C extension is not built")
    value = enc.pre_release_partition_record_v1({**BASE, "eligibleLeaderReplicas": [3]})
    types = {type_id: (t.name, t.programs) for type_id, t in decoder.METADATA_TYPES.items()}
    c = decoder._C
    try:
        c.kraft_configure(0, "metadata", types, MetadataRecord, decoder.RECORD_ATTRS, MetadataDecodeError)
        with pytest.raises(MetadataDecodeError):
            c.kraft_decode_metadata(value)
    finally:
        c.kraft_configure(
            0,
            "metadata",
            types,
            MetadataRecord,
            decoder.RECORD_ATTRS,
            MetadataDecodeError,
            decoder.decode_pre_release,
        )
    assert c.kraft_decode_metadata(value).layout == LABEL
    assert decode_metadata_record is c.kraft_decode_metadata  # no Python layer on the hot path


def test_the_real_pre_release_bytes_are_what_the_encoder_writes() -> None:
    """Offset 24 of apache-kafka-test-kafka-1168504093769635972's log, as `dump-log` prints it raw."""
    real = bytes.fromhex(
        "010301000000002623c6d066ca451aa926b4a17b16cc7f0200000001020000000101010000000100000000000000000201010102"
        "0101"
    )
    data = {**BASE, "partitionId": 0, "replicas": [1], "isr": [1], "removingReplicas": [], "leader": 1}
    data.update(leaderEpoch=0, partitionEpoch=0, eligibleLeaderReplicas=[], lastKnownElr=[])
    assert enc.pre_release_partition_record_v1(data) == real


def test_metadata_record_keeps_its_positional_api() -> None:
    rec = MetadataRecord(1, 2, "TopicRecord", 0, {}, True, b"")
    assert rec.layout is None and rec.raw == b""
