"""Known pre-release layouts of KRaft metadata records: data, written by hand, NOT generated.

Kafka's trunk changed some record versions between releases, and clusters run from a trunk build
left records that the released schemas (`schemas_table.py`) cannot decode at the version they
carry. The decoder tries a layout of this table only when a record fails to decode under the
released schema of its type and version, and keeps the result only when the layout decodes it
exactly (every byte used, nothing left over); the record is then marked with the layout's label
(`MetadataRecord.layout`), so a reader always sees that it was not decoded as the release defines it.

Fields use the format of `schemas_table.SCHEMAS` (name, type, versions, nullableVersions,
taggedVersions, tag, default, fields), the versions being those of the layout's record version.
Field names are the released ones, so the image applies them as it applies released records.

Known layouts:

* PartitionRecord v1 of Kafka trunk builds of late 2023, after KIP-966 added EligibleLeaderReplicas
  and LastKnownElr to PartitionRecord v1 as nullable tagged int32 arrays (tags 1 and 2) and before
  the 3.7 release made v1 KIP-858's `Directories` (a non-tagged `[]uuid`) and moved the ELR fields
  to v2 (same tags). Seen in a real log dir at metadata.version 16 written on 2023-11-22.

  Not listed: PartitionChangeRecord v1 of the same builds. All its optional fields are tagged,
  and the ELR ones kept their tags (6 and 7) in 3.7 while `Directories` (tag 8) is new, so such a
  record always decodes under the released v1 schema; tags 6 and 7, unknown at released v1, are
  skipped as Kafka skips unknown tags (ELR changes carried that way are not applied).
"""

from __future__ import annotations

_V1_PLUS = (1, -1)

# (type id, record version, label, fields)
PRE_RELEASE_LAYOUTS = (
    (
        3,
        1,
        "pre-3.7 trunk: PartitionRecord v1 with KIP-966 ELR as tags 1-2",
        (
            ("PartitionId", "int32", _V1_PLUS, None, None, None, "-1", ()),
            ("TopicId", "uuid", _V1_PLUS, None, None, None, None, ()),
            ("Replicas", "[]int32", _V1_PLUS, None, None, None, None, ()),
            ("Isr", "[]int32", _V1_PLUS, None, None, None, None, ()),
            ("RemovingReplicas", "[]int32", _V1_PLUS, None, None, None, None, ()),
            ("AddingReplicas", "[]int32", _V1_PLUS, None, None, None, None, ()),
            ("Leader", "int32", _V1_PLUS, None, None, None, "-1", ()),
            ("LeaderRecoveryState", "int8", _V1_PLUS, None, _V1_PLUS, 0, "0", ()),
            ("LeaderEpoch", "int32", _V1_PLUS, None, None, None, "-1", ()),
            ("PartitionEpoch", "int32", _V1_PLUS, None, None, None, "-1", ()),
            ("EligibleLeaderReplicas", "[]int32", _V1_PLUS, _V1_PLUS, _V1_PLUS, 1, "null", ()),
            ("LastKnownElr", "[]int32", _V1_PLUS, _V1_PLUS, _V1_PLUS, 2, "null", ()),
        ),
    ),
)
