"""The configs a KRaft cluster keeps in its metadata log (set with kafka-configs or the Admin API), as the
replayed image holds them: each topic's overrides and the brokers' dynamic configs (the cluster-wide
default, resource name "", and each node's own). On KRaft no ZooKeeper holds them: an offline preview
that ignores them previews a broker that does not exist (`ktool retention` on a KRaft log dir)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import KtoolError
from kafka_tools.log.files.dirs import PartitionPlace
from kafka_tools.log.retention.config import SettingSources, broker_settings, layered_broker_settings
from kafka_tools.metadata.node_files import META_PROPERTIES, METADATA_PARTITION, read_meta_properties

TOPIC = 2  # ConfigResource.Type.TOPIC
BROKER = 4  # ConfigResource.Type.BROKER
TOPIC_SOURCE = "KRaft topic config"


@dataclass(slots=True)
class KraftConfigs:
    """The configs of the image at `offset` (the next offset of the metadata log in `metadata_dir`)."""

    metadata_dir: Path
    offset: int
    topics: dict[str, dict[str, str]] = field(default_factory=dict)  # topic name -> name -> value
    cluster_default: dict[str, str] = field(default_factory=dict)  # broker resource ""
    per_node: dict[int, dict[str, str]] = field(default_factory=dict)  # broker resource "<node id>"

    def broker_layers(self, node_id: int | None) -> list[tuple[str, dict[str, str]]]:
        """The dynamic broker configs a node applies, weakest first (DynamicBrokerConfig: the node's own
        beat the cluster's default), each with the source it is named by."""
        layers = [("KRaft cluster-default broker config", self.cluster_default)]
        if node_id is not None and node_id in self.per_node:
            layers.append((f"KRaft broker {node_id} config", self.per_node[node_id]))
        return [(source, values) for source, values in layers if values]


@dataclass(slots=True)
class KraftSettings:
    """What reading the KRaft configs for a preview found: lines to say, and whether a KRaft log dir's
    configs could not be read (the preview then rests on defaults: exit 3)."""

    notes: list[str] = field(default_factory=list)
    unread: bool = False
    configs: KraftConfigs | None = None


def read_kraft_configs(path: str | Path) -> KraftConfigs:
    """The configs of the metadata log of a log dir (or of its `__cluster_metadata-0` dir); what cannot
    be read, or records missing from its image, is a KtoolError (one line, exit 3) from load_whole_image."""
    # Imported here: the replay and the image's classes (some 30 M instructions) only for a KRaft log
    # dir; a ZooKeeper-mode preview (`ktool retention`) never loads them.
    from kafka_tools.metadata.load import load_whole_image, partition_dir_of

    image = load_whole_image(path).image
    known = {t.name for t in image.topics.values()}
    out = KraftConfigs(partition_dir_of(Path(path))[1], image.offset)
    for (rtype, rname), values in image.configs.items():
        if rtype == TOPIC and rname in known:
            out.topics[rname] = dict(values)
        elif rtype == BROKER and rname == "":
            out.cluster_default = dict(values)
        elif rtype == BROKER and rname.isdigit():
            out.per_node[int(rname)] = dict(values)
    return out


def kraft_settings(
    parts: Iterable[PartitionPlace],
    metadata_log_dir: str | None,
    sources: SettingSources,
    static: tuple[str, dict[str, str]] | None = None,
) -> KraftSettings | None:
    """Fill `sources` from the KRaft metadata log beside the partitions (or in `metadata_log_dir`): the
    topics' configs and the brokers' dynamic ones, laid over `static` (server.properties: its path and
    props). None when neither a metadata log nor a KRaft log dir (meta.properties version 1) is found:
    ZooKeeper may hold them."""
    log_dirs = list(dict.fromkeys(p.log_dir.absolute() for p in parts))
    metas = {
        d: read_meta_properties(d / META_PROPERTIES, []) for d in log_dirs if (d / META_PROPERTIES).is_file()
    }
    nodes = {m.node_id for m in metas.values() if m is not None and m.version == 1 and m.node_id is not None}
    if metadata_log_dir:
        candidates = [Path(metadata_log_dir)]
    else:
        candidates = [d for d in log_dirs if (d / METADATA_PARTITION).is_dir()]
    if not candidates:
        if not nodes:
            return None
        kraft = ", ".join(str(d) for d, m in metas.items() if m is not None and m.version == 1)
        return KraftSettings(
            [f"{kraft}: a KRaft log dir without the metadata log ({METADATA_PARTITION}) beside it: topic "
             "configs not read; give --metadata-log-dir"], unread=True)  # fmt: skip
    try:
        # Several nodes' log dirs (each keeps a copy of the log): the newest image.
        configs = max((read_kraft_configs(c) for c in candidates), key=lambda c: c.offset)
    except KtoolError as exc:
        return KraftSettings([f"{exc}; topic configs not read from the KRaft metadata log"], unread=True)
    out = KraftSettings(configs=configs)
    sources.topic_overrides = configs.topics
    sources.override_sources = {t: dict.fromkeys(v, TOPIC_SOURCE) for t, v in configs.topics.items()}
    node_id = next(iter(nodes)) if len(nodes) == 1 else None
    if len(nodes) > 1 and any(broker_settings(v, "") for v in configs.per_node.values()):
        out.notes.append("log dirs of several nodes: the nodes' own dynamic broker configs are not "
                         "applied, only the cluster-wide default")  # fmt: skip
    layers = configs.broker_layers(node_id)
    if layers:
        sources.broker = layered_broker_settings(([static] if static else []) + layers)
    return out
