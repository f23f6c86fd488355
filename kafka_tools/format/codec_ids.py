"""The compression codecs as Kafka numbers them (the low bits of a message's or batch's attributes) and
names them, the error every decompressor raises, and the bound on what one payload may decompress to
(format/compression.py's decompressors, format/lz4_frames.py's reader)."""

from __future__ import annotations

from enum import IntEnum

MAX_DECOMPRESSED = 256 * 1024 * 1024


class Codec(IntEnum):
    """Compression codec ids as stored in the low bits of a message's or batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """The name modern Kafka prints (`compresscodec: gzip`)."""
        return self.name.lower()

    @property
    def legacy_label(self) -> str:
        """The name Kafka 0.8-0.10 printed (`compresscodec: GZIPCompressionCodec`)."""
        return _LEGACY_LABELS[self]


_LEGACY_LABELS = {
    Codec.NONE: "NoCompressionCodec",
    Codec.GZIP: "GZIPCompressionCodec",
    Codec.SNAPPY: "SnappyCompressionCodec",
    Codec.LZ4: "LZ4CompressionCodec",
    Codec.ZSTD: "ZStdCompressionCodec",
}


class DecompressionError(ValueError):
    """A payload that its codec cannot decode, or that would decode past the size cap."""


_LABELS = {int(c): c.label for c in Codec}  # a dict, not Codec(id).label: that is a microsecond a batch


def codec_label(codec_id: int) -> str:
    return _LABELS.get(codec_id) or f"unknown({codec_id})"


_cramjam_module: list = []


def cramjam_module():
    """The cramjam module, or None when it is not installed (python-snappy before 0.7 bundles its
    own snappy instead)."""
    if not _cramjam_module:
        try:
            import cramjam
        except ImportError:
            cramjam = None
        _cramjam_module.append(cramjam)
    return _cramjam_module[0]
