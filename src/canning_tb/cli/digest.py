"""canning-prof digest: digest every window of a logdir in parallel, ahead of the viewer.

  canning-prof digest --input=PATH_OR_URL [--dask=SCHEDULER_ADDRESS] [--workers=N] [--cache-dir=DIR] [--sql-events]

Locally in processes by default, or across an existing Dask cluster (dask.distributed): each job
reads its own window from the shared or object storage and writes the digest beside the manifest for
our handler's windows, into the user's cache folder for the other formats (store/cache.py). Windows
already digested by this analysis code are skipped; a handler's digest made by other code is made again. One line per window
that could not be read; the exit status is 1 when any could not. For a remote logdir it then writes
one object per run folder holding its manifests and digests (store/pack.py): a viewer with no local
copy yet fetches it in one request instead of two per window. With --sql-events it then reads each window's
events into the cache as Parquet (canning_tb/sql, here, not on the Dask workers), so that the first SQL query
over `events` does not parse the traces.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed

from canning_tb.queries.errors import scrub_paths
from canning_tb.store import Store
from canning_tb.store.batch import Job, Outcome, beside_of, run_job
from canning_tb.store.cache import write_atomic
from canning_tb.store.heap import tune_this_process
from canning_tb.util.remote_fs import RemoteError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="canning-prof digest",
                                description="Digest every window of a logdir in parallel, ahead of the viewer.")
    p.add_argument("--input", required=True, help="a logdir or run folder: a local path or a URL (s3://, gs://, ...)")
    p.add_argument("--dask", default=None, metavar="SCHEDULER_ADDRESS",
                   help="run the jobs on this Dask cluster (tcp://host:8786) instead of local processes")
    p.add_argument("--workers", type=int, default=None, help="local processes (default: the cores, at most 8)")
    p.add_argument("--cache-dir", default=None,
                   help="where the digests of other formats go (default: the user's cache folder)")
    p.add_argument("--follow-links", action="store_true",
                   help="also read files that symbolic links lead to outside --input")
    p.add_argument("--sql-events", action="store_true",
                   help="also write each window's events as Parquet into the cache, for `canning-prof sql` and "
                        "canning_tb.open (docs/sql.md); read here, after the digests")
    return p


def jobs_for(store: Store) -> list[Job]:
    """A job for every window of the store without a digest of this analysis code yet."""
    url = store.url
    out = []
    for run in store.runs():
        for worker in store.workers(run):
            for window in store.windows(run, worker.name):
                if window.status != "ready" or store.has_digest(run, worker.name, window.id, current=True):
                    continue
                out.append(Job((run, worker.name, window.id), window, beside_of(window, url, store.logdir),
                               url, store.logdir))
    return out


def _local(jobs: list[Job], workers: int):
    """Outcomes as they finish, from local processes."""
    if workers <= 1 or len(jobs) <= 1:
        yield from (run_job(job) for job in jobs)
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=mp.get_context("spawn"),
                             initializer=tune_this_process) as pool:  # children that exit: heap.py
        futures = {pool.submit(run_job, job): job for job in jobs}
        for future in as_completed(futures):
            yield _outcome(futures[future], future)


def _on_dask(jobs: list[Job], address: str):
    """Outcomes as they finish, from the workers of a running Dask cluster."""
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise SystemExit("canning-prof digest: --dask needs dask.distributed: pip install 'canning-tb[dask]'") from None
    with Client(address) as client:
        futures = client.map(run_job, jobs, pure=False)
        by_key = {future.key: job for future, job in zip(futures, jobs)}
        for future in dask_completed(futures):
            yield _outcome(by_key[future.key], future)


def _outcome(job: Job, future) -> Outcome:
    try:
        return future.result()
    except Exception as e:  # process / cluster boundary: one window's crash never stops the others
        return Outcome(job.ident, None, None, f"{job.window.path}: internal error ({type(e).__name__}: {e})")


def digest_command(argv: list[str]) -> int:
    from tqdm import tqdm
    args = parser().parse_args(argv)
    store = Store(args.input, cache_dir=args.cache_dir, follow_links=args.follow_links)
    jobs = jobs_for(store)
    total = sum(len(store.windows(run, w.name)) for run in store.runs() for w in store.workers(run))
    if not total:
        raise FileNotFoundError(f"{args.input}: no profiles found")
    outcomes = _on_dask(jobs, args.dask) if args.dask else _local(jobs, args.workers or store.max_workers)
    failed = []
    with tqdm(total=len(jobs), unit="window", desc="digest", file=sys.stderr, disable=not jobs) as bar:
        for outcome in outcomes:
            if outcome.error:
                failed.append(outcome)
            elif outcome.written is None:  # other formats, or read-only data: the user's cache
                write_atomic(store.digest_cache_path(*outcome.ident), outcome.digest)
            bar.update(1)
    for outcome in sorted(failed, key=lambda o: o.ident):
        run, worker, window = outcome.ident
        print(f"error: {run}/{worker}/{window}: {scrub_paths(outcome.error, store.logdir)}", file=sys.stderr)
    print(f"{len(jobs) - len(failed)} digested, {total - len(jobs)} already digested, {len(failed)} failed "
          f"({args.input})")
    _write_packs(store)
    if args.sql_events:
        failed += _sql_events(store)
    return 1 if failed else 0


def _sql_events(store: Store) -> list:
    """Every window's events as Parquet in the cache (sql/events.py), in this process; the windows left out."""
    from tqdm import tqdm

    from canning_tb.sql import Run
    store.refresh()
    run = Run(store)
    total = len(run.windows())
    with tqdm(total=total, unit="window", desc="sql events", file=sys.stderr, disable=not total) as bar:
        done = run.prepare_events(lambda i, n: bar.update(1))
    for problem in run.problems:
        print(f"error: {scrub_paths(problem, store.logdir)}", file=sys.stderr)
    print(f"{done} windows' events written as Parquet for SQL ({total - done} left out)")
    return [p for p in run.problems if "not ready" not in p]  # a window not analysed yet is no failure here


def _write_packs(store: Store) -> None:
    """A remote logdir: one object per run folder with its manifests and digests (store/pack.py), which
    a viewer with no local copy fetches in one request. Only a speed-up: a pack that cannot be written
    (read-only storage) is said, and the viewer reads the windows one by one."""
    if store.remote is None:
        return
    try:
        store.refresh()  # the digests just written beside the windows, as listed now
        for url in store.remote.write_packs():
            print(f"packed the manifests and digests of {url.rsplit('/', 1)[0]} into {url}")
    except RemoteError as e:
        print(f"warning: no pack of digests written ({e}); viewers read each window's files instead",
              file=sys.stderr)
