"""The package's dependencies point one way: cli -> services (log, consumers, metadata, pipeline) ->
format / zk / broker, with render beside cli. Read from the source with `ast`, so an import inside a
function counts."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kafka_tools"

# shared by every layer (secret_files: credentials files, read in one place; keep/: ktool's own state
# directory and its crash-safe documents)
FOUNDATIONS = {"errors", "keep", "bounded_json", "compact_json", "secret_files", "__version__"}
# What each part of the package may import of ktool (besides itself and the foundations).
ALLOWED: dict[str, set[str]] = {
    "format": set(),  # pure decoding: nothing of ktool's, not even its errors
    "zk": set(),
    "broker": set(),
    "log": {"format"},
    "consumers": {"zk", "broker", "format", "log"},  # log: reset-offsets answers a time from log dirs
    "metadata": {"log", "format"},  # the KRaft image; nothing below it imports it
    "pipeline": {"log", "format"},
    "tiered": {"log", "format"},  # __remote_log_metadata replayed, checked against the partitions' logs
    "transactions": {"log", "format", "metadata"},  # the coordinator's and partitions' transaction state
    "cluster": {"zk", "broker", "metadata"},  # topics and brokers, one view of three sources
    # ZooKeeper's state against the KRaft image; check asks the live brokers and controllers too
    "migration": {"zk", "metadata", "log", "format", "broker", "cluster"},
    "render": {
        "format",
        "log",
        "consumers",
        "metadata",
        "pipeline",
        "zk",
        "broker",
        "tiered",
        "transactions",
        "cluster",
        "migration",
    },
    "cli": {
        "format",
        "log",
        "consumers",
        "metadata",
        "pipeline",
        "zk",
        "broker",
        "render",
        "tiered",
        "transactions",
        "cluster",
        "migration",
    },
    "__main__": {"cli"},
}
THIRD_PARTY_KEPT_OUT = {
    "format": {"click", "rich", "kazoo", "pyspark", "confluent_kafka"},
    "log": {"click", "rich", "pyspark"},
    "consumers": {"click", "rich", "pyspark"},
    "metadata": {"click", "rich", "pyspark"},
    "cluster": {"click", "rich", "pyspark"},
    "transactions": {"click", "rich", "pyspark"},
    "zk": {"click", "rich", "pyspark"},
    "broker": {"click", "rich", "pyspark"},
    "pipeline": {"click", "rich"},
    "tiered": {"click", "rich", "pyspark"},
    "migration": {"click", "rich", "pyspark"},
}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


# A string naming a module of ktool ("kafka_tools.cli.read:read"): what `import_module` is handed.
_NAMED_MODULE = re.compile(r"kafka_tools(\.[a-z_0-9]+)+(:[A-Za-z_0-9]+)?\Z")


def _is_script_entry(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":`, which runs only as `python -m`, never on import: its imports close
    no circle (docgen's hands cli.main's tree to the generator, as `ktool man` hands its own)."""
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


@functools.cache
def _parse(source: str, filename: str) -> ast.Module:
    """A file's syntax tree, parsed once a session whichever rule reads it (shared: never changed)."""
    return ast.parse(source, filename)


def _tree(path: Path) -> ast.Module:
    return _parse(path.read_text(), str(path))


def _imports(path: Path, modules: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, inside functions too, and every string naming one of
    ktool's modules (what `import_module` imports later); `from kafka_tools import x` names
    kafka_tools.x, and so does `from P import x` where P.x is one of `modules`."""
    found = []
    for line, module, names in _import_statements(path.read_text(), str(path)):
        if names is None:
            found.append((line, module))
        elif module == "kafka_tools":
            found += [(line, f"kafka_tools.{name}") for name in names]
        elif modules:
            dotted = [f"{module}.{name}" for name in names]
            found += [(line, n if n in modules else module) for n in dotted]
        else:
            found.append((line, module))
    return found


@functools.cache
def _import_statements(source: str, filename: str) -> tuple[tuple[int, str, tuple[str, ...] | None], ...]:
    """(line, module, None) for an `import` or a string naming a module, (line, module, names) for a
    `from module import names`: the file walked once, whichever rule asks."""
    found: list[tuple[int, str, tuple[str, ...] | None]] = []
    body = [node for node in _parse(source, filename).body if not _is_script_entry(node)]
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMED_MODULE.match(node.value):
            found.append((node.lineno, node.value.partition(":")[0], None))  # import_module's (LAZY_COMMANDS)
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, tuple(a.name for a in node.names)))
    return tuple(found)


def _modules(package: Path = PACKAGE) -> list[tuple[str, Path]]:
    """(dotted name, path) of every module; a package is named by its __init__.py's dotted path."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


def test_every_part_of_the_package_is_covered_by_a_rule() -> None:
    parts = {_part(m) for m, _ in _modules()} - {"__init__"} - FOUNDATIONS
    assert parts <= set(ALLOWED), f"a new part of the package needs a rule here: {parts - set(ALLOWED)}"


@pytest.mark.parametrize("module, path", _modules(), ids=[m for m, _ in _modules()])
def test_imports_point_one_way(module: str, path: Path) -> None:
    part = _part(module)
    allowed = ALLOWED.get(part, set()) | FOUNDATIONS | {part}
    if part in FOUNDATIONS:
        allowed = {"errors", "bounded_json", "__version__"}
    if part == "format":
        # the decoder stands alone: it can be lifted out with nothing else but the stdlib-only JSON reader
        allowed = {"format", "bounded_json"}
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        for line, target in _imports(path)
        if target.startswith("kafka_tools.") and _part(target) not in allowed
    ]
    banned = THIRD_PARTY_KEPT_OUT.get(part, set())
    wrong += [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        for line, target in _imports(path)
        if target.split(".")[0] in banned
    ]
    assert not wrong, "\n".join(wrong)


def test_the_rule_catches_a_wrong_import(tmp_path: Path) -> None:
    """The checker itself: a decoder module importing the CLI is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from kafka_tools.cli.main import cli\n    import rich\n")
    assert [t for _, t in _imports(bad)] == ["kafka_tools.cli.main", "rich"]
    assert _part("kafka_tools.cli.main") not in ALLOWED["format"] | FOUNDATIONS | {"format"}


# -- no circles: between modules (imports inside functions count), and between log/'s rooms -----------


def _graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """Each module's imports of the package's own modules: {module: {imported module: line}}. A
    package stands for its __init__.py (`kafka_tools.log.__init__`)."""
    paths = dict(_modules(package))
    names = frozenset(m.removesuffix(".__init__") for m in paths)
    graph: dict[str, dict[str, int]] = {}
    for module, path in paths.items():
        edges: dict[str, int] = {}
        for line, target in _imports(path, names):
            node = target if target in paths else f"{target}.__init__"
            if node in paths and node != module:
                edges.setdefault(node, line)
        graph[module] = edges
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, without recursion), each
    sorted: every module in one can reach every other, i.e. they import each other in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((e for e in edges if e in graph and (e not in index or e in on_stack)), None)
            if nxt is not None:
                if nxt in index:
                    low[node] = min(low[node], index[nxt])
                else:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _say_circle(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    inside = set(circle)
    arrows = [f"{m} -> {t} (line {line})" for m in circle for t, line in graph[m].items() if t in inside]
    return "a circle: " + "; ".join(arrows)


def test_no_import_circles() -> None:
    graph = _graph()
    circles = _circles(graph)
    assert not circles, "\n".join(_say_circle(graph, c) for c in circles)


def test_the_circle_rule_catches_a_circle_behind_an_import_in_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "kafka_tools"
    (pkg / "log").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "log" / "__init__.py").write_text("")
    (pkg / "log" / "a.py").write_text("from kafka_tools.log.b import f\n")
    (pkg / "log" / "b.py").write_text("def f():\n    from kafka_tools.log import c\n")
    (pkg / "log" / "c.py").write_text("import kafka_tools.log.a\n")
    (pkg / "log" / "d.py").write_text("from kafka_tools.log import a\n")  # into the circle, not in it
    graph = _graph(pkg)
    assert _circles(graph) == [["kafka_tools.log.a", "kafka_tools.log.b", "kafka_tools.log.c"]]
    assert "kafka_tools.log.b -> kafka_tools.log.c (line 2)" in _say_circle(graph, _circles(graph)[0])


# log/'s rooms, lowest first: what each may import of log/ besides itself. A service left beside them
# (log/validate.py) is a room of one module; the rooms of log/ import one another in no circle (test
# below), and none imports upward.
LOG_ROOMS: dict[str, set[str]] = {
    "files": set(),  # the partition model: the floor
    "reads": {"files"},  # dump-log's events, read, locate, offsets-at
    "retention": {"files"},  # the cleaners' previews and a segment's facts read cheaply
    "checks": {"files", "reads"},  # KRaft snapshots and side files checked as dump-log reads them
    "workers": {"files", "checks"},
    "replicas": {"files", "reads", "checks"},  # a copy's entries located, its recovery point
    "repair": {"files", "checks"},  # the recovery plan carried out
}


def _log_room(module: str) -> str | None:
    """The room of a module of log/: its sub-package, or the module itself for a service at log/'s root."""
    parts = module.split(".")
    if parts[:2] != ["kafka_tools", "log"] or len(parts) < 3 or parts[2] == "__init__":
        return None
    return parts[2]


def _room_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    rooms: dict[str, dict[str, int]] = {}
    for module, edges in graph.items():
        room = _log_room(module)
        if room is None:
            continue
        targets = rooms.setdefault(room, {})
        for target, line in edges.items():
            other = _log_room(target)
            if other is not None and other != room:
                targets.setdefault(other, line)
    return rooms


def test_log_rooms_import_no_room_above_them() -> None:
    graph = _graph()
    wrong = []
    for module, edges in graph.items():
        room = _log_room(module)
        if room not in LOG_ROOMS:
            continue
        for target, line in edges.items():
            if _log_room(target) not in (None, room, *LOG_ROOMS[room]):
                wrong.append(
                    f"{module} imports {target} (line {line}): log/{room}/ may import only "
                    f"{sorted(LOG_ROOMS[room])} of log/"
                )
    assert not wrong, "\n".join(wrong)
    rooms = _room_graph(graph)
    assert set(LOG_ROOMS) <= set(rooms), "a room of log/ named here is gone"
    circles = _circles(rooms)
    assert not circles, "\n".join(_say_circle(rooms, c) for c in circles)


def test_the_room_rule_sees_a_room_importing_upward() -> None:
    graph = {
        "kafka_tools.log.files.dirs": {"kafka_tools.log.checks.findings": 3},
        "kafka_tools.log.checks.findings": {"kafka_tools.log.files.dirs": 5},
    }
    assert _room_graph(graph) == {"files": {"checks": 3}, "checks": {"files": 5}}
    assert _circles(_room_graph(graph)) == [["checks", "files"]]
    assert "checks" not in LOG_ROOMS["files"]


# Byte parsing outside format/ that reads no segment, index or checkpoint: the Kafka wire protocol's
# ApiVersions probe, the Java String.hashCode of the range assignor, dump-log's spools of its
# workers' stderr lines, the worker pool's framing of calls and answers on its pipes, and the
# kernel's `struct flock` asked of the group lock for its holder's pid.
BYTES_ELSEWHERE = {
    "kafka_tools/broker/probe.py",
    "kafka_tools/broker/offset_delete.py",  # the wire protocol of one request confluent-kafka lacks
    "kafka_tools/broker/wire.py",  # the Kafka protocol's encodings, for the requests confluent-kafka lacks
    "kafka_tools/broker/group_requests.py",  # ListGroups, DescribeGroups, ConsumerGroupDescribe
    "kafka_tools/broker/cluster_wire.py",  # DescribeTopicPartitions, reassignments, log dirs, quorum
    "kafka_tools/broker/own_reads.py",  # Metadata, OffsetFetch, ListOffsets where librdkafka has no GSSAPI
    "kafka_tools/consumers/assignors.py",
    "kafka_tools/consumers/group_lock.py",
    "kafka_tools/cli/dump_parallel.py",
    "kafka_tools/log/workers/pool.py",
    "kafka_tools/log/workers/pool_worker.py",
}
_BYTE_READERS = {"struct", "array"}  # modules whose import means fixed-layout bytes are read here
_BYTE_CALLS = {"from_bytes", "unpack", "unpack_from", "iter_unpack", "read_varint", "read_uvarint"}


def _byte_parsing(path: Path) -> list[str]:
    """Where a module reads binary layouts itself: imports of struct/array, varint readers, int.from_bytes."""
    tree = _tree(path)
    found = [f"{line}: imports {t}" for line, t in _imports(path) if t.split(".")[0] in _BYTE_READERS]
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        if name in _BYTE_CALLS or (name and "varint" in name.lower()):
            found.append(f"{node.lineno}: uses {name}")
    return found


@pytest.mark.parametrize("module, path", _modules(), ids=[m for m, _ in _modules()])
def test_only_format_reads_bytes(module: str, path: Path) -> None:
    """Segment, index and checkpoint bytes are read in format/ alone (`iter_headers`, format.index, …):
    a header walk or a varint reader anywhere else is a second copy of the decoder's checks."""
    rel = path.relative_to(PACKAGE.parent).as_posix()
    if _part(module) == "format" or rel in BYTES_ELSEWHERE:
        return
    found = _byte_parsing(path)
    assert not found, f"{rel} parses bytes (move it to format/):\n" + "\n".join(found)


def test_the_byte_rule_catches_a_header_walk(tmp_path: Path) -> None:
    bad = tmp_path / "walk.py"
    bad.write_text(
        "import struct\n"
        "def f(buf):\n"
        "    head = struct.unpack_from('>qi', buf, 0)\n"
        "    return head, int.from_bytes(buf[16:17], 'big'), read_varint(buf, 0)\n"
    )
    found = _byte_parsing(bad)
    assert "1: imports struct" in found
    assert {"3: uses unpack_from", "4: uses from_bytes", "4: uses read_varint"} <= set(found)


# What a renderer may not touch of format/: the C switch and the decoders. It is handed decoded
# records, or lines made from the bytes, by log/reads/record_writer.py (a service), and only shows them.
DECODE_NAMES = {
    "accel",
    "decode_records",
    "decode_records_py",
    "parse_batch_header",
    "parse_message",
    "iter_messages",
    "control_record",
    "decompress",
    "records",
    "inner_messages",
    "inner_from",
    "format_payload",
    "format_records",
    "format_messages",
    "iter_log_entries",
    "iter_headers",
}


def _decoding(path: Path) -> list[str]:
    """Imports of format/'s decoders and calls of a decoding method in a module."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kafka_tools.format"):
            found += [f"{node.lineno}: imports {a.name}" for a in node.names if a.name in DECODE_NAMES]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in DECODE_NAMES and not _is_writer(node.func.value):
                found.append(f"{node.lineno}: calls .{node.func.attr}()")
    return found


def _is_writer(node: ast.expr) -> bool:
    """`self.writer.records(b)`, `writer.control(r)`: the record writer's own methods are the way."""
    return (isinstance(node, ast.Attribute) and node.attr == "writer") or (
        isinstance(node, ast.Name) and node.id == "writer"
    )


@pytest.mark.parametrize("path", sorted((PACKAGE / "render").glob("*.py")), ids=lambda p: p.name)
def test_renderers_never_decode(path: Path) -> None:
    found = _decoding(path)
    assert not found, f"{path.name} decodes (hand it decoded records or a record writer):\n" + "\n".join(
        found
    )


def test_the_render_rule_catches_a_decoding_renderer(tmp_path: Path) -> None:
    bad = tmp_path / "r.py"
    bad.write_text(
        "from kafka_tools.format import accel\n"
        "from kafka_tools.format.record_batch import RecordBatch\n"
        "def f(b, self):\n"
        "    return b.records(), self.writer.records(b), accel.C.format_payload(b)\n"
    )
    assert _decoding(bad) == ["1: imports accel", "4: calls .records()", "4: calls .format_payload()"]


# -- docs/architecture.md shows every package, and names nothing that is not there ------------------

ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def _packages(package: Path = PACKAGE) -> set[str]:
    return {
        (init.parent.relative_to(package.parent).as_posix() + "/") for init in package.rglob("__init__.py")
    }


def _named_in_doc(text: str) -> tuple[set[str], set[str]]:
    """(packages, module files) the page names as `kafka_tools/...` paths."""
    paths = set(re.findall(r"`(kafka_tools/(?:[\w/]*/)?|kafka_tools/[\w/]+\.py)`", text))
    return {p for p in paths if p.endswith("/")}, {p for p in paths if p.endswith(".py")}


def test_the_architecture_page_lists_every_package_and_only_real_ones() -> None:
    text = ARCHITECTURE.read_text()
    packages, files = _named_in_doc(text.split("## Old → new module paths")[0])
    assert _packages() <= packages, f"docs/architecture.md does not show {sorted(_packages() - packages)}"
    gone = packages - _packages()
    assert not gone, f"docs/architecture.md shows packages that are gone: {gone}"
    missing = sorted(f for f in files if not (PACKAGE.parent / f).is_file())
    assert not missing, f"docs/architecture.md names modules that are not there: {missing}"
    for room in LOG_ROOMS:
        assert f"`kafka_tools/log/{room}/`" in text
    # the old -> new table: every new path exists, every old one is gone (no shims left behind)
    table = text.split("## Old → new module paths")[1]
    rows = re.findall(r"^\| (`kafka_tools/[^|]*) \| ([^|]*) \|$", table, re.M)
    assert len(rows) >= 15
    for before, now in rows:
        new = re.findall(r"`(kafka_tools/[\w/]+\.py)`", now)
        assert new and all((PACKAGE.parent / n).is_file() for n in new), now
        old = re.fullmatch(r"`(kafka_tools/[\w/]+\.py)`", before)  # a whole module moved
        if old and old.group(1) not in new:
            assert not (PACKAGE.parent / old.group(1)).exists(), f"{old.group(1)} is still there"


def test_the_doc_rule_sees_an_unlisted_package(tmp_path: Path) -> None:
    (tmp_path / "kafka_tools" / "log" / "rooms").mkdir(parents=True)
    for d in ("kafka_tools", "kafka_tools/log", "kafka_tools/log/rooms"):
        (tmp_path / d / "__init__.py").write_text("")
    packages, files = _named_in_doc(
        "`kafka_tools/` and `kafka_tools/log/`, see `kafka_tools/log/reads/dump.py`"
    )
    assert _packages(tmp_path / "kafka_tools") - packages == {"kafka_tools/log/rooms/"}
    assert files == {"kafka_tools/log/reads/dump.py"}


# -- a module over LONG lines says at its top why it is one module ----------------------------------

LONG = 500
WHY = "Why one module"


def _long_without_reason(modules: list[tuple[str, Path]]) -> list[str]:
    out = []
    for module, path in modules:
        text = path.read_text()
        lines = text.count("\n") + 1
        if lines > LONG and WHY not in (ast.get_docstring(_parse(text, str(path))) or ""):
            out.append(f"{module}: {lines} lines")
    return out


def test_a_long_module_says_why_it_is_one() -> None:
    found = _long_without_reason(_modules())
    assert not found, f"split by job, or say '{WHY} ...' in the docstring:\n" + "\n".join(found)


def test_the_size_rule_sees_a_long_module_without_its_reason(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    long.write_text('"""A module."""\n' + "x = 1\n" * LONG)
    said = tmp_path / "said.py"
    said.write_text(f'"""A module.\n\n{WHY} of this size: a table."""\n' + "x = 1\n" * LONG)
    assert _long_without_reason([("long", long), ("said", said)]) == [f"long: {LONG + 2} lines"]


# -- the C extension's files: includes and calls point one way --------------------------------------

CSRC = PACKAGE / "format" / "csrc"
_C_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_C_DEFINITION = re.compile(
    r"^(?!__attribute__)(\w+)\s*\([^;{]*\)\s*\{", re.M
)  # the house style: name at col 0
_C_EXTERN = re.compile(r"^extern\b[^;(]*?\b(\w+)\s*;", re.M)
_C_INCLUDE = re.compile(r'^#\s*include\s+"([\w.]+)"', re.M)


def _c_code(text: str) -> str:
    """The text without comments, and with every string and character literal emptied."""
    return _C_NOISE.sub(lambda m: " " if m.group(0)[0] == "/" else '""', text)


def _c_bodies(code: str) -> tuple[str, str]:
    """(what stands outside every brace: declarations, prototypes; what stands inside: function bodies,
    initialisers such as a method table). A name inside braces is a use; outside, a declaration."""
    outside, inside, depth = [], [], 0
    for line in code.splitlines(keepends=True):
        if line.lstrip().startswith("#"):
            outside.append(line)
            continue
        for ch in line:
            depth += ch == "{"
            (outside if depth == 0 else inside).append(ch)
            depth -= ch == "}"
    return "".join(outside), "".join(inside)


def _c_graph(csrc: Path = CSRC) -> dict[str, dict[str, str]]:
    """The C files as units (`x.h` and `x.c` are one: a header is the interface of the file of its name)
    and what each needs of the others: {unit: {unit: why}}, an edge for an `#include "..."` and for a use
    (a call, or a function named in a method table) of a function or an extern variable another unit's
    .c defines. A header's inline function calling its .c's out-of-line part is no circle; a header
    calling into a .c that includes it, or two .c files calling each other, is."""
    files = sorted(p for p in csrc.iterdir() if p.suffix in (".c", ".h"))
    raw = {p: p.read_text() for p in files}
    code = {p: _c_code(t) for p, t in raw.items()}
    externs = {name for c in code.values() for name in _C_EXTERN.findall(c)}
    defined: dict[str, str] = {}
    for p, c in code.items():
        if p.suffix != ".c":
            continue
        lines = c.splitlines()
        for m in _C_DEFINITION.finditer(c):
            at = c.count("\n", 0, m.start())
            if "static" not in lines[at] and (at == 0 or "static" not in lines[at - 1]):
                defined[m.group(1)] = p.stem
        outside, _ = _c_bodies(c)
        for name in externs:
            if re.search(rf"^(?!extern)[\w ]+\b{name}\s*[=;]", outside, re.M):
                defined[name] = p.stem
    graph: dict[str, dict[str, str]] = {}
    for p, c in code.items():
        edges = graph.setdefault(p.stem, {})
        for header in _C_INCLUDE.findall(raw[p]):
            edges.setdefault(Path(header).stem, f"{p.name} includes {header}")
        for name in sorted(set(re.findall(r"\b\w+\b", _c_bodies(c)[1]))):
            unit = defined.get(name)
            if unit is not None:
                edges.setdefault(unit, f"{p.name} uses {name} ({unit}.c)")
        edges.pop(p.stem, None)
    return graph


def test_no_circles_between_the_c_files() -> None:
    graph = _c_graph()
    assert {"module", "kraft", "arrow_buffers", "arrow_columns"} <= set(graph)
    assert "kraft" in graph["module"] and "kraft_programs" in graph["kraft"]  # it sees calls and includes
    circles = _circles(graph)  # type: ignore[arg-type]
    said = [" ; ".join(f"{graph[a][b]}" for a in c for b in graph[a] if b in c) for c in circles]
    assert not circles, "C files in a circle:\n" + "\n".join(said)


def test_the_c_rule_sees_a_header_calling_into_a_file_that_includes_it(tmp_path: Path) -> None:
    (tmp_path / "cols.h").write_text(
        '#include "base.h"\nint grow(int n);\nstatic inline int put(int n)\n{\n    return grow(n); // n\n}\n'
    )
    (tmp_path / "bufs.c").write_text('#include "cols.h"\nint\ngrow(int n)\n{\n    return n;\n}\n')
    (tmp_path / "mod.c").write_text('#include "base.h"\nstatic int x[] = {use_it};\n')
    (tmp_path / "user.c").write_text(
        '#include "base.h"\nextern int count;\nint\nuse_it(void)\n{\n    return count + tell("grow");\n}\n'
    )
    (tmp_path / "base.c").write_text(
        '#include "base.h"\nint count;\nint\ntell(const char *s)\n{\n    return 0;\n}\n'
    )
    (tmp_path / "base.h").write_text("int tell(const char *s);\n")
    graph = _c_graph(tmp_path)
    assert graph["cols"] == {"base": "cols.h includes base.h", "bufs": "cols.h uses grow (bufs.c)"}
    assert graph["mod"] == {"base": "mod.c includes base.h", "user": "mod.c uses use_it (user.c)"}
    assert graph["user"] == {
        "base": "user.c includes base.h"
    }  # `count` and `tell` are base.c's, "grow" a string
    assert _circles(graph) == [["bufs", "cols"]]  # type: ignore[arg-type]
