"""The frontend's response types (src/canning_tb/frontend/src/api.ts) against the two things they
describe: the digest schema and the routes' real answers.

Why a test and not TypeScript generated from digest.proto: the routes do not send bare digests
(they add fields, make times relative, drop some), so the response types would still be written
by hand around generated ones; a generator would be one more build step and parser to keep. This
test reads the schema the way protoc does (grpc_tools compiles digest.proto to a descriptor set),
so a field renamed, retyped, added or dropped in digest.proto fails here until api.ts follows.
The figures the routes serve beside the digest's messages are declared once, as msgspec Structs
(analysis/figures.py): api.ts's interface of each is checked against it field for field, and the
live answers are checked to carry no field the Struct does not declare. And it asks the live routes (werkzeug's test client, real fixtures) whether every field api.ts
declares is really in their answers, so a view cannot read a field no route sends.
"""
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import msgspec.inspect as mi
import pytest
from google.protobuf import descriptor_pb2

from tensorboard.backend import application
from werkzeug.test import Client

from canning_tb.analysis import figures
from test_plugin_routes import RESNET_WINDOW, build_logdir, get, get_cluster, get_hta, make_plugin

REPO = Path(__file__).resolve().parents[2]
API_TS = REPO / "src" / "canning_tb" / "frontend" / "src" / "api.ts"
PROTO = REPO / "src" / "canning_tb" / "analysis" / "digest.proto"
FD = descriptor_pb2.FieldDescriptorProto
NUMBER = {FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_SINT32, FD.TYPE_SINT64,
          FD.TYPE_FIXED32, FD.TYPE_FIXED64, FD.TYPE_SFIXED32, FD.TYPE_SFIXED64}
FLOATING = {FD.TYPE_DOUBLE, FD.TYPE_FLOAT}  # NaN / infinities travel as null (digest_json.to_plain)


# -- reading the two files ------------------------------------------------------------------------------


def proto_messages(tmp_path) -> dict:
    """{message name: DescriptorProto} of digest.proto, compiled by protoc (grpc_tools)."""
    out = tmp_path / "digest.desc"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO.parent}", f"--descriptor_set_out={out}",
                    PROTO.name], check=True)
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    (proto,) = files.file
    return {m.name: m for m in proto.message_type}


def ts_interfaces(text: str) -> dict:
    """{interface name: (the names it extends, {field: (optional, type text)})} of api.ts."""
    found = {}
    for match in re.finditer(r"^export interface (\w+)(?: extends ([^{]+))? \{\n(.*?)^\}", text, re.M | re.S):
        fields = {}
        for line in match.group(3).splitlines():
            field = re.match(r"\s+(\w+)(\?)?: (.+?);\s*(//.*)?$", line)
            if field:
                fields[field.group(1)] = (bool(field.group(2)), field.group(3).replace(" ", ""))
        parents = [p.strip() for p in (match.group(2) or "").split(",") if p.strip()]
        found[match.group(1)] = (parents, fields)
    return found


def expected_ts_type(field, messages) -> str:
    """The TypeScript type api.ts must give a proto field (how digest_json.to_plain sends it)."""
    if field.type == FD.TYPE_MESSAGE:
        name = field.type_name.rsplit(".", 1)[-1]
        entry = next((nested for m in messages.values() for nested in m.nested_type if nested.name == name), None)
        if entry is not None and entry.options.map_entry:
            key, value = entry.field
            return f"Record<{scalar_ts_type(key)},{expected_ts_type(value, messages)}>"
        base = name
    else:
        base = scalar_ts_type(field)
    return f"{base}[]" if field.label == FD.LABEL_REPEATED and "Record<" not in base else base


def scalar_ts_type(field) -> str:
    if field.type in NUMBER:
        return "number"
    if field.type in FLOATING:
        return "number|null"
    return {FD.TYPE_STRING: "string", FD.TYPE_BOOL: "boolean"}[field.type]


def schema_mismatches(messages: dict, interfaces: dict) -> list[str]:
    """Every way api.ts's mirrors of the digest messages differ from the schema."""
    problems = []
    for name, message in messages.items():
        if name == "Digest":  # no route sends the whole digest
            continue
        if name not in interfaces:
            problems.append(f"api.ts has no interface {name} (digest.proto message {name})")
            continue
        declared = interfaces[name][1]
        for field in message.field:
            want = expected_ts_type(field, messages)
            if field.name not in declared:
                problems.append(f"{name}.{field.name}: in digest.proto, missing in api.ts (want {want})")
            elif declared[field.name][1] != want:
                problems.append(f"{name}.{field.name}: api.ts says {declared[field.name][1]}, digest.proto means {want}")
        for extra in sorted(set(declared) - {f.name for f in message.field}):
            problems.append(f"{name}.{extra}: in api.ts, not a field of digest.proto's {name}")
    return problems


# -- the schema ------------------------------------------------------------------------------------------


def test_api_ts_mirrors_every_digest_message(tmp_path):
    messages = proto_messages(tmp_path)
    interfaces = ts_interfaces(API_TS.read_text())
    assert {"Breakdown", "OpStat", "DeviceMemory", "Communication"} <= set(interfaces)  # the parser reads the file
    assert schema_mismatches(messages, interfaces) == []


def test_the_schema_check_notices_a_renamed_or_retyped_field(tmp_path):
    messages = proto_messages(tmp_path)
    text = API_TS.read_text()
    renamed = text.replace("  device_self_ns: number;\n", "  device_self: number;\n", 1)
    retyped = text.replace("  bandwidth_gbps: number | null;\n", "  bandwidth_gbps: number;\n", 1)
    dropped = text.replace("  events_truncated: boolean;\n  ops: OpMemoryStat[];\n", "  ops: OpMemoryStat[];\n", 1)
    for changed in (renamed, retyped, dropped):
        assert changed != text
    assert any("OpStat.device_self_ns: in digest.proto, missing" in p for p in schema_mismatches(messages, ts_interfaces(renamed)))
    assert any("OpStat.device_self: in api.ts, not a field" in p for p in schema_mismatches(messages, ts_interfaces(renamed)))
    assert any("bandwidth_gbps: api.ts says number," in p for p in schema_mismatches(messages, ts_interfaces(retyped)))
    assert any("DeviceMemory.events_truncated: in digest.proto, missing" in p
               for p in schema_mismatches(messages, ts_interfaces(dropped)))


# -- the served figures (analysis/figures.py) -----------------------------------------------------------

STRUCTS = {name: cls for name, cls in vars(figures).items()
           if isinstance(cls, type) and issubclass(cls, msgspec.Struct) and cls.__module__ == figures.__name__}


def struct_ts_type(t) -> str:
    """The TypeScript type api.ts must give a field of msgspec type `t` (msgspec.inspect), as sent as JSON."""
    if isinstance(t, (mi.IntType, mi.FloatType)):
        return "number"
    if isinstance(t, mi.UnionType):
        return "|".join(struct_ts_type(x) for x in t.types)
    if isinstance(t, mi.ListType):
        return f"{struct_ts_type(t.item_type)}[]"
    if isinstance(t, mi.DictType):
        return f"Record<{struct_ts_type(t.key_type)},{struct_ts_type(t.value_type)}>"
    if isinstance(t, mi.StructType):
        return t.cls.__name__
    if isinstance(t, mi.LiteralType):
        return "|".join(f'"{v}"' for v in t.values)
    return {mi.StrType: "string", mi.BoolType: "boolean", mi.NoneType: "null"}[type(t)]


def struct_mismatches(structs: dict, interfaces: dict) -> list[str]:
    """Every way api.ts's interfaces of the served figures differ from their Structs."""
    problems = []
    for name, cls in structs.items():
        if name not in interfaces:
            problems.append(f"api.ts has no interface {name} (analysis/figures.py {name})")
            continue
        declared = declared_fields(name, interfaces)
        fields = {f.name: struct_ts_type(f.type) for f in mi.type_info(cls).fields}
        for field, want in fields.items():
            if field not in declared:
                problems.append(f"{name}.{field}: in figures.py, missing in api.ts (want {want})")
            elif declared[field][1] != want:
                problems.append(f"{name}.{field}: api.ts says {declared[field][1]}, figures.py means {want}")
        for extra in sorted(set(declared) - set(fields)):
            problems.append(f"{name}.{extra}: in api.ts, not a field of figures.py's {name}")
    return problems


def test_api_ts_mirrors_every_served_figure():
    interfaces = ts_interfaces(API_TS.read_text())
    assert {"WindowFigures", "CategoryShares", "CommFigures", "RankFigures", "RunSummary", "TrendPoint"} <= set(STRUCTS)
    assert struct_mismatches(STRUCTS, interfaces) == []


def test_the_figures_check_notices_a_renamed_or_retyped_field():
    text = API_TS.read_text()
    renamed = text.replace("  average_step_ns: number;\n", "  average_step: number;\n", 1)
    retyped = text.replace("  compute_share: number | null;\n", "  compute_share: number;\n", 1)
    for changed in (renamed, retyped):
        assert changed != text
    assert "WindowFigures.average_step_ns: in figures.py, missing in api.ts (want number)" in \
        struct_mismatches(STRUCTS, ts_interfaces(renamed))
    assert "StepShares.compute_share: api.ts says number, figures.py means number|null" in \
        struct_mismatches(STRUCTS, ts_interfaces(retyped))


def undeclared_fields(value, cls, path: str) -> list[str]:
    """Fields of a JSON answer that the Struct `cls` does not declare, followed into nested Structs."""
    out = []
    fields = {f.name: f.type for f in mi.type_info(cls).fields}
    for key, nested in value.items():
        if key not in fields:
            out.append(f"{path}.{key}")
            continue
        inner = fields[key]
        inner = next((t for t in getattr(inner, "types", (inner,)) if not isinstance(t, mi.NoneType)), inner)
        if isinstance(inner, mi.ListType) and isinstance(nested, list):
            inner, nested = inner.item_type, (nested[0] if nested else None)
        if isinstance(inner, mi.StructType) and isinstance(nested, dict):
            out += undeclared_fields(nested, inner.cls, f"{path}.{key}")
    return out


# -- the routes --------------------------------------------------------------------------------------------


def declared_fields(name: str, interfaces: dict) -> dict:
    """An interface's fields with those it extends (only the parents declared in api.ts)."""
    parents, fields = interfaces[name]
    merged = {}
    for parent in parents:
        if parent in interfaces:
            merged.update(declared_fields(parent, interfaces))
    merged.update(fields)
    return merged


def element_interface(ts_type: str, interfaces: dict) -> str | None:
    """The api.ts interface a field's value (or its list's items) is, if it is one."""
    base = ts_type.replace("|null", "").removesuffix("[]")
    return base if base in interfaces else None


def missing_fields(value, name: str, interfaces: dict, path: str) -> list[str]:
    """Fields api.ts declares (not optional) that the JSON answer lacks, followed into nested
    interfaces (the first item of a list)."""
    out = []
    for field, (optional, ts_type) in declared_fields(name, interfaces).items():
        if field not in value:
            if not optional:
                out.append(f"{path}.{field}")
            continue
        inner, nested = element_interface(ts_type, interfaces), value[field]
        if inner and isinstance(nested, list):
            nested = nested[0] if nested else None
        if inner and isinstance(nested, dict):
            out += missing_fields(nested, inner, interfaces, f"{path}.{field}")
    return out


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    plugin = make_plugin(build_logdir(tmp_path_factory.mktemp("types_logdir")))
    return Client(application.TensorBoardWSGI([plugin]))


def test_every_field_api_ts_declares_is_in_the_routes_answers(client):
    interfaces = ts_interfaces(API_TS.read_text())
    window = {"run": "resnet", "worker": "worker0", "window": RESNET_WINDOW}
    answers = {
        "RunsResponse": get(client, "runs"),
        "OverviewResponse": get(client, "overview", **window),
        "OperatorsResponse": get(client, "operators", **window, group_by="name"),
        "OperatorDetailResponse": get(client, "operators", **window, detail="aten::conv2d"),
        "KernelsResponse": get(client, "kernels", **window),
        "MemoryResponse": get(client, "memory", **window),
        "MemoryRangeResponse": get(client, "memory_range", **get_hta(), device="CPU", start_ns="0", end_ns="1000000000000"),
        "CommunicationResponse": get(client, "communication", **window),
        "SuggestionsResponse": get(client, "suggestions", **window),
        "ModulesResponse": get(client, "modules", **window),
        "CriticalPathResponse": get(client, "critical_path", **window),
        "ClusterResponse": get_cluster(client, **window)[:2],
        "TrendsResponse": get_trends(client, "resnet", "worker0"),
    }
    missing = []
    for name, (code, body) in answers.items():
        assert code == 200, (name, body)
        missing += missing_fields(body, name, interfaces, name)
    assert missing == []
    # and they send nothing of the served figures that analysis/figures.py does not declare
    ov, comm, cl = (answers[name][1] for name in ("OverviewResponse", "CommunicationResponse", "ClusterResponse"))
    served = [(ov["figures"], figures.WindowFigures, "overview.figures"),
              (comm["figures"], figures.CommFigures, "communication.figures"),
              (cl["per_rank"][0], figures.RankFigures, "cluster.per_rank"),
              (cl["run_summary"], figures.RunSummary, "cluster.run_summary"),
              (answers["TrendsResponse"][1]["windows"][0], figures.TrendPoint, "trends.windows")]
    assert [extra for value, cls, path in served for extra in undeclared_fields(value, cls, path)] == []
    assert undeclared_fields({**ov["figures"], "ratio": 1}, figures.WindowFigures, "x") == ["x.ratio"]
    # the check follows nested interfaces and can fail
    overview = answers["OverviewResponse"][1]
    assert overview["figures"]["slowest_op"] and answers["MemoryRangeResponse"][1]["ops"]
    broken = {**overview, "figures": {k: v for k, v in overview["figures"].items() if k != "average_step_ns"}}
    assert missing_fields(broken, "OverviewResponse", interfaces, "overview") == ["overview.figures.average_step_ns"]


def get_trends(client, run, worker, timeout=120):
    """GET /trends until it stops answering 202."""
    import time
    deadline = time.monotonic() + timeout
    while True:
        code, body = get(client, "trends", run=run, worker=worker)
        if code != 202 or time.monotonic() > deadline:
            return code, body
        time.sleep(0.2)
