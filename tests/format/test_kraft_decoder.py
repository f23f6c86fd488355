"""The KRaft record decoder against an encoder written in the tests from Kafka's JSON schemas
(tests/format/kraft_encoder.py): every record type, every version, every field set to a non-default
value (tagged fields too), nullable fields null, absent tagged fields at their schema default; the
generated table equal to what the generator makes of the schemas now; bad bytes rejected with their
position, unknown types and versions reported, never raised."""

from __future__ import annotations

import base64

import pytest

from kafka_tools.format.kraft import (
    MetadataDecodeError,
    decode_control_record,
    decode_metadata_record,
)
from tests.format import kraft_encoder as enc

pytestmark = pytest.mark.skipif(not enc.SCHEMA_DIR.is_dir(), reason="../shared/kraft-schemas is absent")


@pytest.fixture(scope="module")
def schemas() -> dict[str, enc.Schema]:
    return enc.load_schemas()


def _cases(schemas):
    for s in schemas.values():
        for v in s.versions:
            yield s, v


def _decode(schema: enc.Schema, version: int, data: dict):
    if schema.kind == "metadata":
        return decode_metadata_record(enc.frame(schema, version, data))
    return decode_control_record(enc.control_key(schema), enc.encode_body(schema, version, data))


def test_the_schemas_hold_27_metadata_and_5_control_records(schemas) -> None:
    kinds = [s.kind for s in schemas.values()]
    assert kinds.count("metadata") == 27 and kinds.count("control") == 5


def test_the_committed_table_is_what_the_generator_makes_of_the_schemas() -> None:
    from kafka_tools.format.kraft import generate

    assert (generate.TABLE).read_text() == generate.render(generate.load(enc.SCHEMA_DIR))


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
def test_every_type_and_version_round_trips(schemas, nulls: bool) -> None:
    checked = 0
    for i, (schema, version) in enumerate(_cases(schemas)):
        for seed in range(3):
            data = enc.sample(schema, version, seed * 1000 + i, nulls=nulls)
            rec = _decode(schema, version, data)
            assert rec.known, (schema.name, version)
            assert (rec.type_name, rec.type_id) == (schema.name, schema.type_id)
            if schema.kind == "metadata":
                assert (rec.frame_version, rec.version) == (1, version)
            assert rec.fields == data, (schema.name, version)
            checked += 1
    assert checked == 3 * sum(len(s.versions) for s in schemas.values())


def _default(field: dict, version: int):
    """A field's default, read from the JSON as Kafka's generated classes read it."""
    default = field.get("default")
    type_ = field["type"]
    if default == "null":
        return None
    if type_.startswith("[]"):
        return []
    if type_ == "bool":
        return default == "true"
    if type_ == "string":
        return default or ""
    if type_ == "uuid":
        return base64.urlsafe_b64encode(bytes(16)).decode().rstrip("=")
    return int(default or 0)


def test_absent_tagged_fields_take_their_schema_default(schemas) -> None:
    seen_tagged = 0
    for i, (schema, version) in enumerate(_cases(schemas)):
        data = enc.sample(schema, version, i)
        expected = dict(data)
        for f in schema.fields:
            if enc._within(f["versions"], version) and enc._within(f.get("taggedVersions"), version):
                del data[enc.key_of(f["name"])]
                expected[enc.key_of(f["name"])] = _default(f, version)
                seen_tagged += 1
        rec = _decode(schema, version, data)
        assert rec.fields == expected
        assert list(rec.fields) == list(expected)  # schema order, tagged fields in their place
    assert seen_tagged > 20


def test_uuids_print_as_kafka_does(schemas) -> None:
    topic = schemas["TopicRecord"]
    rec = decode_metadata_record(enc.frame(topic, 0, {"name": "t", "topicId": "JiPG0GbKRRqpJrShexbMfw"}))
    assert rec.fields == {"name": "t", "topicId": "JiPG0GbKRRqpJrShexbMfw"}


def test_unknown_types_and_versions_are_reported_not_raised(schemas) -> None:
    topic = schemas["TopicRecord"]
    body = enc.encode_body(topic, 0, {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    unknown_type = b"\x01\x7f\x00" + body
    rec = decode_metadata_record(unknown_type)
    assert (rec.known, rec.type_id, rec.type_name, rec.fields, rec.raw) == (
        False,
        127,
        "Unknown",
        {},
        unknown_type,
    )
    newer = b"\x01\x02\x05" + body  # TopicRecord v5: newer than the schemas
    rec = decode_metadata_record(newer)
    assert (rec.known, rec.type_name, rec.version, rec.raw) == (False, "TopicRecord", 5, newer)
    rec = decode_control_record(b"\x00\x00\x00\x63", b"\x00")
    assert (rec.known, rec.type_id, rec.type_name) == (False, 0x63, "Unknown")


def test_a_truncated_body_names_its_position(schemas) -> None:
    topic = schemas["TopicRecord"]
    value = enc.frame(topic, 0, {"name": "abc", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    # frame (3) + name (1 + 3) = 7: the topic id starts at byte 7
    with pytest.raises(MetadataDecodeError) as info:
        decode_metadata_record(value[:12])
    assert info.value.position == 7
    with pytest.raises(MetadataDecodeError) as info:
        decode_metadata_record(value + b"\x00")
    assert info.value.position == len(value)
    assert "garbage" in info.value.message


def test_every_truncation_of_every_record_is_an_error_never_a_crash(schemas) -> None:
    for i, (schema, version) in enumerate(_cases(schemas)):
        data = enc.sample(schema, version, i)
        if schema.kind == "metadata":
            value = enc.frame(schema, version, data)
            for cut in range(len(value)):
                with pytest.raises(MetadataDecodeError) as info:
                    decode_metadata_record(value[:cut])
                assert 0 <= info.value.position <= cut
        else:
            value = enc.encode_body(schema, version, data)
            with pytest.raises(MetadataDecodeError):
                decode_control_record(enc.control_key(schema), value[:-1])


def test_an_unknown_frame_version_is_an_error_at_byte_0(schemas) -> None:
    topic = schemas["TopicRecord"]
    value = enc.frame(topic, 0, {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    with pytest.raises(MetadataDecodeError) as info:
        decode_metadata_record(b"\x02" + value[1:])
    assert info.value.position == 0 and "frame version 2" in info.value.message


def test_an_array_longer_than_the_bytes_left_is_refused_before_allocating(schemas) -> None:
    value = b"\x01\x03\x00" + b"\x00" * 4 + b"\x00" * 16 + b"\xff\xff\xff\xff\x0f"
    with pytest.raises(MetadataDecodeError) as info:
        decode_metadata_record(value)
    assert info.value.position == 23


def test_a_control_record_written_at_an_older_version_decodes_at_that_version(schemas) -> None:
    lcm = schemas["LeaderChangeMessage"]
    data = {"version": 0, "leaderId": 3, "voters": [{"voterId": 3}], "grantingVoters": [{"voterId": 3}]}
    rec = decode_control_record(enc.control_key(lcm), enc.encode_body(lcm, 0, data))
    assert (rec.type_name, rec.version, rec.fields) == ("LeaderChangeMessage", 0, data)


def test_a_non_flexible_version_reads_classic_lengths_and_no_tagged_fields() -> None:
    """No KRaft schema has one yet (all are flexible from version 0), but the table allows it: int16
    string lengths, int32 array and bytes lengths, -1 for null, no tagged-field section."""
    from kafka_tools.format.kraft.decoder import compile_struct, decode_struct

    fields = (
        ("Name", "string", (0, -1), None, None, None, None, ()),
        ("Rack", "string", (0, -1), (0, -1), None, None, None, ()),
        ("Ids", "[]int32", (0, -1), None, None, None, None, ()),
        ("Blob", "bytes", (0, -1), None, None, None, None, ()),
        ("Extra", "int8", (0, -1), None, (0, -1), 0, "5", ()),
    )
    program = compile_struct(fields, 0, flexible=False)
    body = b"\x00\x02ab" + b"\xff\xff" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x07" * 2 + b"\x00\x00\x00\x01z"
    assert decode_struct(body, 0, len(body), program) == (
        {"name": "ab", "rack": None, "ids": [7, 7], "blob": b"z"},
        len(body),
    )


def test_the_kept_schemas_extend_the_shared_reference() -> None:
    """fixtures/kraft-schemas holds Kafka 4.4.0's schemas: every record of ../shared/kraft-schemas (the
    3.9 line) is kept at the same versions or more, its fields at those versions unchanged."""
    from kafka_tools.format.kraft import generate
    from tests.independent import REALWORLD

    shared = REALWORLD.parent / "kraft-schemas"
    if not shared.is_dir():
        pytest.skip("../shared/kraft-schemas is absent")
    ours = {s[0]: s for s in generate.load(enc.SCHEMA_DIR)}
    for name, kind, type_id, (low, high), flexible, fields in generate.load(shared):
        mine = ours[name]
        assert mine[1:3] == (kind, type_id) and mine[3][0] == low and mine[3][1] >= high, name
        assert mine[4] == flexible, name
        kept = {f[0]: f for f in mine[5]}
        assert all(kept[f[0]] == f for f in fields), name
