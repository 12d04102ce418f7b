"""A many-rank run opened cold from object storage (no local copy yet), against a real S3 API server on
localhost (moto in server mode, tests/_s3.py): the run generated from the 8 real DLRM ranks
(tests/_many_ranks.py) is uploaded as the handler writes it (each window, then its digest), and the
store's /cluster answer is compared with the same run read from the local folder. The requests are
counted in moto's own request log: two per window with the digests each rank wrote, one per run once
`canning-prof digest` has written its pack (store/pack.py), and never a trace. Correctness, not timing
(benchmarks/bench_ranks.py --s3 times it)."""
import glob
import json
import os
import re
import time

import pytest

from _many_ranks import write_many_ranks
from _s3 import s3  # noqa: F401  (the fixture)
from canning_tb.analysis import digest_pb2
from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.queries.ranks import cluster_impl
from canning_tb.store import Store
from canning_tb.store.prefetcher import Prefetcher
from conftest import fixture_path

RANKS = 64
RUN = f"ranks{RANKS}"
PACK = "canning-digests.zip"  # the name store/pack.py gives it, written here on purpose


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The generated run in a local folder: (logdir, run folder)."""
    traces = sorted(glob.glob(str(fixture_path("param", "dlrm_8ranks") / "*.pt.trace.json.gz")))
    logdir = tmp_path_factory.mktemp("local") / "logs"
    write_many_ranks(str(logdir / RUN), [build_digest(read_kineto(t)) for t in traces], RANKS,
                     slow={3: 1.3, RANKS - 5: 1.3}, traces=traces)
    return logdir, logdir / RUN


def upload(fs, run_folder, bucket):
    """The run into s3://bucket/logs/RUN as the handler writes it: the windows' files, then the digests."""
    fs.mkdir(bucket)
    names = sorted(os.listdir(run_folder))
    digests = [n for n in names if n.endswith(".digest.pb")]
    for batch in ([n for n in names if n not in digests], digests):
        fs.put([str(run_folder / n) for n in batch], [f"{bucket}/logs/{RUN}/{n}" for n in batch])
    return f"s3://{bucket}/logs"


def log_size(server):
    return os.path.getsize(server.log.name)


def requests_since(server, mark):
    """(method, path) of each request moto logged after `mark`, once its log has stopped growing
    (a request's line is written just after its answer)."""
    size = -1
    while size != log_size(server):
        size = log_size(server)
        time.sleep(0.3)
    with open(server.log.name, "rb") as f:
        f.seek(mark)
        text = f.read().decode("utf-8", "replace")
    return re.findall(r'"(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/', text)


def object_gets(requests, bucket):
    """The keys read whole (GET of one object, not a listing) from the bucket."""
    keys = []
    for method, path in requests:
        target, _, query = path.partition("?")
        key = target[len(f"/{bucket}/"):] if target.startswith(f"/{bucket}/") else ""
        if method == "GET" and key and "list-type" not in query and "prefix=" not in query:
            keys.append(key)
    return keys


def answer(store):
    """/cluster of the run's first window position, once its digests are read."""
    prefetcher = Prefetcher(store)
    deadline = time.monotonic() + 300
    while (body := cluster_impl(store, prefetcher, RUN, 0)).get("loading"):
        assert time.monotonic() < deadline, body
        time.sleep(0.05)
    return body


def cold_store(url, cache, monkeypatch):
    """A store on url with an empty local cache (its mirror lands in cache)."""
    monkeypatch.setenv("CANNING_CACHE_DIR", str(cache))
    return Store(url)


@pytest.fixture(scope="module")
def local_answer(local_run, tmp_path_factory):
    logdir, _ = local_run
    return answer(Store(str(logdir), cache_dir=str(tmp_path_factory.mktemp("local-cache"))))


def test_cold_start_reads_each_manifest_and_digest_once_and_no_trace(s3, local_run, local_answer,  # noqa: F811
                                                                       tmp_path, monkeypatch):
    logdir, run_folder = local_run
    url = upload(s3.fs(), run_folder, "cold")
    mark = log_size(s3)
    store = cold_store(url, tmp_path / "cache", monkeypatch)
    got = answer(store)
    requests = requests_since(s3, mark)
    assert len(got["ranks"]) == RANKS and not got["problems"]
    assert got == local_answer
    fetched = object_gets(requests, "cold")
    small = sorted(f"logs/{RUN}/{n}" for n in os.listdir(run_folder) if not n.endswith(".pt.trace.json.gz"))
    assert len(small) == 2 * RANKS
    assert sorted(fetched) == small  # each manifest and digest once, no trace
    assert len(requests) - len(fetched) <= 4  # the rest: one listing of the prefix (and a check it exists)


def test_the_pack_of_canning_prof_digest_is_one_request_and_never_stale(s3, local_run, local_answer,  # noqa: F811
                                                                        tmp_path, monkeypatch, capsys):
    from canning_tb.cli.main import main
    logdir, run_folder = local_run
    fs = s3.fs()
    url = upload(fs, run_folder, "packed")
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "digest-cache"))
    assert main(["digest", f"--input={url}"]) == 0
    out = capsys.readouterr().out
    assert f"0 digested, {RANKS} already digested" in out and f"into {url}/{RUN}/{PACK}" in out
    assert fs.exists(f"packed/logs/{RUN}/{PACK}")

    mark = log_size(s3)
    store = cold_store(url, tmp_path / "cold-cache", monkeypatch)
    got = answer(store)
    requests = requests_since(s3, mark)
    assert got == local_answer
    assert object_gets(requests, "packed") == [f"logs/{RUN}/{PACK}"]
    assert len(requests) <= 5

    # a window written since the pack: it alone is fetched, the pack (same version) is not again
    worker = f"rank{RANKS}"
    manifest = {**json.loads((run_folder / "rank0.0.canning.json").read_text()), "worker": worker, "rank": RANKS,
                "files": [], "manifest": f"{worker}.0.canning.json"}
    fs.pipe(f"packed/logs/{RUN}/{worker}.0.canning.json", json.dumps(manifest).encode())
    fs.pipe(f"packed/logs/{RUN}/{worker}.0.digest.pb", (run_folder / "rank0.0.digest.pb").read_bytes())
    mark = log_size(s3)
    store.remote.full_every = 0
    store.refresh()
    assert worker in [w.name for w in store.workers(RUN)]
    assert sorted(object_gets(requests_since(s3, mark), "packed")) == [
        f"logs/{RUN}/{worker}.0.canning.json", f"logs/{RUN}/{worker}.0.digest.pb"]


def test_a_rewritten_digest_or_removed_manifest_is_never_taken_from_the_pack(s3, local_run, tmp_path,  # noqa: F811
                                                                             monkeypatch):
    from canning_tb.cli.main import main
    _, run_folder = local_run
    fs = s3.fs()
    url = upload(fs, run_folder, "stale")
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "digest-cache"))
    assert main(["digest", f"--input={url}"]) == 0
    # after the pack: rank 5's digest rewritten (its steps 1 us longer), rank 7's window removed (its digest left)
    digest = digest_pb2.Digest.FromString((run_folder / "rank5.0.digest.pb").read_bytes())
    digest.average.total_ns += 1000
    rewritten = digest.SerializeToString()
    fs.pipe(f"stale/logs/{RUN}/rank5.0.digest.pb", rewritten)
    fs.rm([f"stale/logs/{RUN}/rank7.0.canning.json", f"stale/logs/{RUN}/rank7.0.pt.trace.json.gz"])

    mark = log_size(s3)
    store = cold_store(url, tmp_path / "cold-cache", monkeypatch)
    requests = requests_since(s3, mark)
    assert sorted(object_gets(requests, "stale")) == [f"logs/{RUN}/{PACK}", f"logs/{RUN}/rank5.0.digest.pb"]
    assert "rank7" not in [w.name for w in store.workers(RUN)] and len(store.workers(RUN)) == RANKS - 1
    assert store.digest(RUN, "rank5", "0").average.total_ns == digest.average.total_ns
    copied = os.path.join(store.remote.local, RUN, "rank5.0.digest.pb")
    assert open(copied, "rb").read() == rewritten


def test_a_pack_that_cannot_be_read_costs_one_request_and_is_said(s3, local_run, local_answer,  # noqa: F811
                                                                  tmp_path, monkeypatch, caplog):
    _, run_folder = local_run
    fs = s3.fs()
    url = upload(fs, run_folder, "badpack")
    fs.pipe(f"badpack/logs/{RUN}/{PACK}", b"not a zip archive")
    mark = log_size(s3)
    with caplog.at_level("WARNING", logger="canning_tb.store"):
        store = cold_store(url, tmp_path / "cold-cache", monkeypatch)
    got = answer(store)
    assert got == local_answer
    fetched = object_gets(requests_since(s3, mark), "badpack")
    assert len(fetched) == 2 * RANKS + 1 and f"logs/{RUN}/{PACK}" in fetched
    said = [r.getMessage() for r in caplog.records]
    assert any(f"{url}/{RUN}/{PACK}: not a readable pack of digests" in m for m in said), said
