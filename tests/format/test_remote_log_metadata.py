"""`__remote_log_metadata` values (tiered storage): ktool's table against Kafka 4.4.0's schemas, every
apiKey decoded from bytes an independent encoder wrote from those JSON files (tagged `TxnIndexEmpty`
set and absent, nullable `CustomMetadata` null and not), RemoteLogMetadataSerdeTest's records, and
bad bytes reported with their position, never raised past the decoder's own error."""

from __future__ import annotations

import base64
import uuid

import pytest

from kafka_tools.format.kraft.decoder import MetadataDecodeError
from kafka_tools.format.kraft.generate import load
from kafka_tools.format.remote_log_metadata import SCHEMAS, decode_remote_log_metadata
from tests.format.kraft_encoder import _uvarint, frame, load_schemas, sample
from tests.independent import FIXTURES

SCHEMA_DIR = FIXTURES / "remote-log-metadata-schemas"
REMOTE = load_schemas(SCHEMA_DIR)


def kafka_uuid() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def test_table_equals_kafka_4_4_schemas():
    assert SCHEMAS == tuple(load(SCHEMA_DIR))
    assert sorted(s.type_id for s in REMOTE.values()) == [0, 1, 2, 3]


@pytest.mark.parametrize("name", sorted(REMOTE))
@pytest.mark.parametrize("seed", range(6))
def test_every_record_type_decodes_what_was_encoded(name, seed):
    schema = REMOTE[name]
    data = sample(schema, 0, seed, nulls=seed % 2 == 1)
    record = decode_remote_log_metadata(frame(schema, 0, data))
    assert record.known and record.type_name == name and record.api_key == schema.type_id
    assert record.fields == data


def test_absent_tagged_txn_index_empty_is_false():
    schema = REMOTE["RemoteLogSegmentMetadataRecord"]
    data = sample(schema, 0, 3)
    data.pop("txnIndexEmpty")  # a 3.x broker never writes the tag
    record = decode_remote_log_metadata(frame(schema, 0, data))
    assert record.fields["txnIndexEmpty"] is False
    data["txnIndexEmpty"] = True
    assert decode_remote_log_metadata(frame(schema, 0, data)).fields["txnIndexEmpty"] is True


def _serde_test_segment(state: int) -> dict:
    # RemoteLogMetadataSerdeTest.createRemoteLogSegmentMetadata: foo-0, offsets 0-100, broker 1,
    # size 1024, custom metadata {0,1,2,3}, epochs {0:0, 1:20, 2:80}
    return {
        "remoteLogSegmentId": {
            "topicIdPartition": {"name": "foo", "id": kafka_uuid(), "partition": 0},
            "id": kafka_uuid(),
        },
        "startOffset": 0,
        "endOffset": 100,
        "brokerId": 1,
        "maxTimestampMs": -1,
        "eventTimestampMs": 1_700_000_000_123,
        "segmentLeaderEpochs": [
            {"leaderEpoch": 0, "offset": 0},
            {"leaderEpoch": 1, "offset": 20},
            {"leaderEpoch": 2, "offset": 80},
        ],
        "segmentSizeInBytes": 1024,
        "customMetadata": bytes([0, 1, 2, 3]),
        "remoteLogSegmentState": state,
    }


def test_remote_log_metadata_serde_test_records():
    seg = _serde_test_segment(0)
    record = decode_remote_log_metadata(frame(REMOTE["RemoteLogSegmentMetadataRecord"], 0, seg))
    assert record.state_name == "COPY_SEGMENT_STARTED"
    assert record.fields["segmentLeaderEpochs"][2] == {"leaderEpoch": 2, "offset": 80}
    assert record.fields["customMetadata"] == b"\x00\x01\x02\x03"
    update = {
        "remoteLogSegmentId": seg["remoteLogSegmentId"],
        "brokerId": 2,
        "eventTimestampMs": 1_700_000_000_456,
        "customMetadata": bytes([0, 1, 2, 3]),
        "remoteLogSegmentState": 1,
    }
    record = decode_remote_log_metadata(frame(REMOTE["RemoteLogSegmentMetadataUpdateRecord"], 0, update))
    assert (record.state_name, record.fields["brokerId"]) == ("COPY_SEGMENT_FINISHED", 2)
    delete = {
        "topicIdPartition": seg["remoteLogSegmentId"]["topicIdPartition"],
        "brokerId": 0,
        "eventTimestampMs": 1,
        "remotePartitionDeleteState": 0,
    }
    record = decode_remote_log_metadata(frame(REMOTE["RemotePartitionDeleteMetadataRecord"], 0, delete))
    assert record.state_name == "DELETE_PARTITION_MARKED"
    assert record.fields["topicIdPartition"]["name"] == "foo"


def test_unknown_api_key_or_version_is_kept_raw():
    value = _uvarint(1) + _uvarint(9) + _uvarint(0) + b"\x00"
    record = decode_remote_log_metadata(value)
    assert (record.known, record.api_key, record.raw) == (False, 9, value)
    value = _uvarint(1) + _uvarint(0) + _uvarint(5) + b"\x00"
    record = decode_remote_log_metadata(value)
    assert (record.known, record.type_name, record.version) == (False, "RemoteLogSegmentMetadataRecord", 5)


def test_bad_bytes_name_their_position():
    good = frame(REMOTE["RemoteLogSegmentMetadataRecord"], 0, _serde_test_segment(1))
    with pytest.raises(MetadataDecodeError, match="garbage") as exc:
        decode_remote_log_metadata(good + b"\x00")
    assert exc.value.position == len(good)
    with pytest.raises(MetadataDecodeError) as exc:
        decode_remote_log_metadata(good[:40])
    assert exc.value.position <= 40
    with pytest.raises(MetadataDecodeError, match="frame version 0"):
        decode_remote_log_metadata(b"\x00" + good[1:])
    with pytest.raises(MetadataDecodeError, match="null value"):
        decode_remote_log_metadata(None)


# -- dump-log --------------------------------------------------------------------------------------


def _metadata_segment(tmp_path, values: list[bytes]):
    from tests.format.kraft_encoder import batch

    part = tmp_path / "__remote_log_metadata-7"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(batch(0, [(None, v) for v in values]))
    return log


def test_dump_log_decodes_remote_log_metadata_records(tmp_path):
    import json

    from tests.support.cli import run_ktool

    seg = _serde_test_segment(0)
    finished = {
        "remoteLogSegmentId": seg["remoteLogSegmentId"],
        "brokerId": 1,
        "eventTimestampMs": 5,
        "customMetadata": None,
        "remoteLogSegmentState": 1,
    }
    log = _metadata_segment(
        tmp_path,
        [
            frame(REMOTE["RemoteLogSegmentMetadataRecord"], 0, seg),
            frame(REMOTE["RemoteLogSegmentMetadataUpdateRecord"], 0, finished),
        ],
    )
    text = run_ktool("dump-log", "--deep-iteration", str(log))
    assert text.exit_code == 0, text.output
    assert '"type":"REMOTE_LOG_SEGMENT_METADATA_RECORD"' in text.output.replace(" ", "")
    assert '"state":"COPY_SEGMENT_FINISHED"' in text.output.replace(" ", "")
    out = run_ktool("dump-log", "--deep-iteration", "--json", str(log))
    assert out.exit_code == 0, out.output
    payloads = [o["value"] for o in map(json.loads, out.stdout.splitlines()) if o.get("type") == "record"]
    assert [p["state"] for p in payloads] == ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"]
    assert payloads[0]["data"]["segmentLeaderEpochs"][1] == {"leaderEpoch": 1, "offset": 20}
    assert payloads[0]["data"]["customMetadata"] == "00010203"
    assert payloads[1]["data"]["remoteLogSegmentId"]["id"] == seg["remoteLogSegmentId"]["id"]


def test_dump_log_reports_an_undecodable_remote_record(tmp_path):
    from tests.support.cli import run_ktool

    good = frame(REMOTE["RemoteLogSegmentMetadataRecord"], 0, _serde_test_segment(0))
    log = _metadata_segment(tmp_path, [good, good + b"\x07"])
    result = run_ktool("dump-log", "--deep-iteration", str(log))
    assert result.exit_code == 1
    assert "remote log metadata record at offset 1" in result.stderr
    assert "garbage" in result.stderr
    assert "Traceback" not in result.output
