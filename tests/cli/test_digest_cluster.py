"""`canning-prof digest`: every window of a 64-rank logdir digested on a real Dask cluster
(dask.distributed.LocalCluster: scheduler and workers in their own processes), in local processes,
and from object storage, each result equal to the digest computed here, window by window."""
import gzip
import json
import os

import pytest

from _gloo_trace import one_rank_gloo_trace
from canning_tb.analysis import digest_pb2
from canning_tb.cli.main import main
from canning_tb.ingest.table import InputError
from canning_tb.util.manifest import FileEntry, Manifest, digest_path
from canning_tb.store import Store, digest_of

RANKS = 64
CANNING_RANKS = 48  # ranks 0..47 as our handler's windows, 48..63 as plain torch.profiler traces


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory):
    """One real window: a 1-rank gloo all_reduce under torch.profiler."""
    path = one_rank_gloo_trace(tmp_path_factory.mktemp("real"), lambda dist, x: dist.all_reduce(x))
    return json.loads(path.read_text())


def _copy_of(trace: dict, rank: int) -> dict:
    """The real window as rank `rank` of a 64-rank job, started `rank` ms later."""
    out = dict(trace)
    out["distributedInfo"] = {**trace.get("distributedInfo", {}), "rank": rank, "world_size": RANKS}
    out["traceEvents"] = [{**e, "ts": e["ts"] + rank * 1000} if isinstance(e.get("ts"), (int, float)) else e
                          for e in trace["traceEvents"]]
    return out


def make_logdir(root, trace: dict, broken: bool = False):
    run = root / "job"
    run.mkdir(parents=True)
    for rank in range(RANKS):
        data = json.dumps(_copy_of(trace, rank)).encode()
        if rank < CANNING_RANKS:
            stem = f"rank{rank}.17960000000000000"
            (run / f"{stem}.pt.trace.json.gz").write_bytes(gzip.compress(data))
            man = Manifest(kind="kineto", worker=f"rank{rank}", window=0, manifest=f"{stem}.canning.json", rank=rank,
                           world_size=RANKS, files=[FileEntry(f"{stem}.pt.trace.json.gz",
                                                              (run / f"{stem}.pt.trace.json.gz").stat().st_size)])
            (run / man.manifest).write_text(json.dumps(man.to_dict()))
        else:
            (run / f"worker{rank}.pt.trace.json").write_bytes(data)
    if broken:
        (run / "late.pt.trace.json").write_bytes(json.dumps(_copy_of(trace, RANKS))[:4000].encode())
    return run


def expected_digests(logdir, cache):
    """{(run, worker, window): digest} computed here, in this process, from the files."""
    store = Store(str(logdir), cache_dir=str(cache))
    out = {}
    for run in store.runs():
        for w in store.workers(run):
            for win in store.windows(run, w.name):
                try:
                    out[(run, w.name, win.id)] = digest_of(win, w.name)
                except InputError:
                    continue
    return out


def written_digests(logdir):
    """{(run, worker, window): digest} as `canning-prof digest` left them: beside the manifests, or in the
    run's cache (read back through the store's own cache path)."""
    store = Store(str(logdir))
    out = {}
    for run in store.runs():
        for w in store.workers(run):
            for win in store.windows(run, w.name):
                path = digest_path(win.path) if win.format == "canning" else store.digest_cache_path(run, w.name, win.id)
                if os.path.exists(path):
                    with open(path, "rb") as f:
                        out[(run, w.name, win.id)] = digest_pb2.Digest.FromString(f.read())
    return out


@pytest.mark.slow
def test_dask_cluster_digests_a_64_rank_logdir_like_the_local_digest(real_trace, tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    logdir = tmp_path / "logdir"
    make_logdir(logdir, real_trace, broken=True)
    want = expected_digests(logdir, tmp_path / "here")
    import dask
    with dask.config.set({"temporary-directory": str(tmp_path / "dask")}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        code = main(["digest", f"--input={logdir}", f"--dask={cluster.scheduler_address}"])
    out, err = capsys.readouterr()
    assert code == 1  # the one broken window, said on its own line; the others digested
    assert "64 digested, 0 already digested, 1 failed" in out
    bad = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(bad) == 1 and "late.pt.trace.json" in bad[0], err
    got = written_digests(logdir)
    assert len(got) == RANKS and sorted(d.window.rank for d in got.values()) == list(range(RANKS))
    for ident, digest in got.items():
        assert digest == want[ident], ident
    # our handler's windows got theirs beside the manifest (where the viewer looks first)
    assert len(list((logdir / "job").glob("*.digest.pb"))) == CANNING_RANKS
    # a second pass finds everything digested
    assert main(["digest", f"--input={logdir}", "--workers=2"]) == 1
    assert "0 digested, 64 already digested, 1 failed" in capsys.readouterr().out


@pytest.mark.slow
def test_local_processes_digest_like_the_local_digest(real_trace, tmp_path, capsys):
    logdir = tmp_path / "logdir"
    run = make_logdir(logdir, real_trace)
    for extra in run.iterdir():  # 8 ranks are enough here
        if extra.name.startswith(("rank", "worker")) and int(extra.name.split(".")[0].lstrip("rankworker")) >= 8:
            extra.unlink()
    want = expected_digests(logdir, tmp_path / "here")
    assert main(["digest", f"--input={logdir}", "--workers=2"]) == 0
    assert "8 digested" in capsys.readouterr().out
    got = written_digests(logdir)
    assert got.keys() == want.keys() and all(got[k] == want[k] for k in want)
