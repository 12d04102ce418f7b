"""A real trace torch 2.13 wrote with a quote it left unescaped inside an event's name (its Python tracer
named a frame of another thread `urllib3/util/retry.py(0): ", got "`): the file is not JSON, and before
the repair the whole window had no digest. Found by running examples/train_ddp.py 25 times: one rank's
window of one run in about ten. The fixture is that file cut to 1,903 of its 79,790 events, the bytes of
each kept event unchanged (tests/fixtures/SOURCES.md).

Expected figures come from a second reading: the fixture's text with that one name escaped by hand,
then json."""
import gzip
import json

import pytest

from canning_tb.ingest import _json
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import InputError

from conftest import fixture_path

BAD = b'"name": "urllib3/util/retry.py(0): ", got "",'
FIXED = b'"name": "urllib3/util/retry.py(0): \\", got \\"",'


@pytest.fixture(scope="module")
def raw() -> bytes:
    return gzip.decompress(fixture_path("kineto/torch213_unescaped_quote/rank1.pt.trace.json.gz").read_bytes())


def test_the_file_is_not_json_as_written(raw):
    assert raw.count(BAD) == 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


def test_every_event_is_read_and_the_name_keeps_its_quotes(raw, tmp_path):
    doc = json.loads(raw.replace(BAD, FIXED))
    want = sorted(e["name"] for e in doc["traceEvents"] if e.get("ph") == "X")
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(raw)
    table = read_kineto(str(path))
    got = sorted(table.name(i) for i in range(len(table)))
    assert got == want
    assert 'urllib3/util/retry.py(0): ", got "' in got
    (warning,) = [p for p in table.problems if "unescaped" in p.message]
    assert warning.message.startswith("1 string value(s)") and "keys: name" in warning.message
    assert path.read_bytes() == raw  # the user's file is never written to


def test_a_quote_on_a_line_of_several_keys_is_still_an_error_naming_the_file(tmp_path):
    # one line, two keys: the value's end cannot be told from the next key's start, so nothing is guessed
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(b'{"traceEvents": [\n  {"ph": "X", "name": "a"b", "ts": 1, "dur": 2, "pid": 1, "tid": 1}\n]}')
    with pytest.raises(InputError) as err:
        read_kineto(str(path))
    assert str(path) in str(err.value) and "not JSON" in str(err.value)


@pytest.mark.parametrize("value, want", [
    (b'a"b', b'a\\"b'),
    (b'a\\"b', b'a\\"b'),            # already escaped: left alone
    (b'a\\\\"b', b'a\\\\\\"b'),      # an escaped backslash, then a bare quote
    (b'"', b'\\"'),
    (b'', b''),
])
def test_escape_quotes(value, want):
    assert _json._escape_quotes(value) == want
    assert json.loads(b'"' + want + b'"') is not None
