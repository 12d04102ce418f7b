"""Part of a digest (store/digest_part.py, Store.digest_part): what the views across many ranks read
of each rank's digest. Every kept field equals the whole digest's, field by field (the whole digest
read back by the generated protobuf class of digest.proto, as every other view reads it); a field
left out is an AttributeError, never a silent default; and the store hands out the whole digest
where it has it in memory or must compute it."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.store import Store
from canning_tb.store.digest_part import COUNTED, RANKS, part_class
from conftest import fixture_path


def wire(value):
    """A field's value comparable across message classes: messages as their bytes, element by element."""
    if hasattr(value, "SerializeToString"):
        return value.SerializeToString(deterministic=True)
    if isinstance(value, (int, float, str, bytes)):
        return value
    return [wire(x) for x in value]


def assert_part_equals_whole(part, whole: pb.Digest) -> None:
    for name, spec in RANKS:
        mine, theirs = getattr(part, name), getattr(whole, name)
        if spec == COUNTED:
            assert [pb.KernelStat.FromString(x) for x in mine] == list(theirs), name
        elif spec is None:
            assert wire(mine) == wire(theirs), name
        else:
            assert len(mine) == len(theirs), name
            for x, y in zip(mine, theirs):
                assert {f: getattr(x, f) for f in spec} == {f: getattr(y, f) for f in spec}, name


@pytest.mark.parametrize("where", [("ascend", "level1"), ("kineto", "resnet50_v100"), ("param", "dlrm_8ranks")])
def test_part_of_every_fixture_window_equals_the_whole(where, tmp_path):
    logdir = str(fixture_path(*where))
    whole_store = Store(logdir, cache_dir=str(tmp_path))
    windows = [(run, w.name, win.id) for run in whole_store.runs() for w in whole_store.workers(run)
               for win in whole_store.windows(run, w.name)]
    assert windows
    wholes = {key: whole_store.digest(*key) for key in windows}  # computed once, into the cache
    fresh = Store(logdir, cache_dir=str(tmp_path))  # nothing in memory: the parts come from the files
    for key in windows:
        part = fresh.digest_part(*key, RANKS)
        assert not isinstance(part, pb.Digest)
        assert_part_equals_whole(part, wholes[key])
        with pytest.raises(AttributeError):
            part.ops_by_shape  # noqa: B018  (left out: never an empty default)
    assert any(len(d.ops_by_name) and (len(d.memory) or len(d.communication.calls)) for d in wholes.values())


def test_the_store_gives_the_whole_digest_it_has_or_computes(tmp_path):
    logdir = str(fixture_path("kineto", "resnet50_v100"))
    store = Store(logdir, cache_dir=str(tmp_path))
    run = store.runs()[0]
    worker = store.workers(run)[0].name
    window = store.windows(run, worker)[0].id
    computed = store.digest_part(run, worker, window, RANKS)  # no digest anywhere yet: computed whole
    assert isinstance(computed, pb.Digest) and len(computed.ops_by_shape)
    assert store.digest_part(run, worker, window, RANKS) is store.digest(run, worker, window)  # in memory


def test_part_classes_are_built_once_and_keep_only_their_fields():
    assert part_class(RANKS) is part_class(RANKS)
    small = part_class((("schema_version", None), ("memory", ("device",))))
    whole = pb.Digest(schema_version=7)
    whole.memory.add(device="npu:0", peak_allocated_bytes=5)
    whole.ops_by_name.add(name="aten::mm")
    part = small.FromString(whole.SerializeToString())
    assert part.schema_version == 7 and part.memory[0].device == "npu:0"
    for missing in (lambda: part.memory[0].peak_allocated_bytes, lambda: part.ops_by_name):
        with pytest.raises(AttributeError):
            missing()
