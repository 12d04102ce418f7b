"""GET /cluster as `cluster_impl(store, prefetcher, run, position)`: the cross-rank analysis of the
windows at one position in every worker of a run (Store.windows_at), with the per-rank rows and the
run summary, all from `canning_tb.analysis`. Windows that cannot be read are left out and listed
in `problems`. While the windows are being digested (Prefetcher, in the background) the answer is
{"loading": True, "done", "total"}.

The answer is kept per (run, position) with the identity of its windows (Store.digest_key: the
files' size and mtime): asked again while no file changed (the run overview and the communication
view of 1,000 ranks ask the same), it is served without reading a digest again.
"""
from __future__ import annotations

from canning_tb.analysis.summary import rank_row, run_summary
from canning_tb.store.digest_part import RANKS
from canning_tb.util.digest_json import to_plain
from canning_tb.util.lru import LRU

from .errors import NotFound, QueryError, unknown_window, window_digest

ANSWERS_KEPT = 8
_answers = LRU(ANSWERS_KEPT)  # (store id, run, position) -> (windows' identity, answer)


def position_of(store, run: str, worker: str, window: str) -> int:
    """The position of a named window among its worker's windows."""
    try:
        return store.position(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None


def cluster_impl(store, prefetcher, run: str, position: int) -> dict:
    if run not in store.runs():
        raise NotFound(f"unknown run: {run!r}")
    chosen = store.windows_at(run, position)
    if not chosen:
        raise NotFound(f"no window at position {position} in run {run!r}")
    pending = prefetcher.progress((run, position), [(run, w.name, win.id) for w, win in chosen])
    if pending is not None:
        return {"run": run, "window_index": position, "loading": True, **pending}
    identity = tuple((worker.name, win.id, store.digest_key(run, win)) for worker, win in chosen)
    memo = (id(store), run, position)
    kept = _answers.get(memo)
    if kept and kept[0] == identity:
        return kept[1]
    answer = _answer(store, run, position, chosen)
    if not answer["problems"]:  # a failure may be passing (a window still being written): ask again
        _answers.put(memo, (identity, answer))
    return answer


def _answer(store, run: str, position: int, chosen: list) -> dict:
    members, digests, problems = [], [], []
    for worker, win in chosen:
        try:
            digest = window_digest(store, run, worker.name, win.id, RANKS)  # the fields the ranks' views read
        except QueryError as e:
            problems.append({"worker": worker.name, "window": win.id, "message": e.body["error"]})
            continue
        members.append({"worker": worker.name, "rank": worker.rank, "window": win.id,
                        "digest_rank": int(digest.window.rank)})
        digests.append(digest)
    if not digests:
        raise NotFound(f"no readable window at position {position} in run {run!r}", problems=problems)
    return {"run": run, "window_index": position, "loading": False, "workers": members, "problems": problems,
            **_ranks(members, digests)}


def _ranks(members: list[dict], digests: list) -> dict:
    """analyse_ranks, and the per-rank rows (by rank) with the run summary over them."""
    from canning_tb.analysis.cluster import analyse_ranks, rank_ids  # numpy: on the first request
    from canning_tb.analysis.rules import cluster_hits

    per_rank = []
    for member, rank, digest in zip(members, rank_ids(digests), digests):
        member["cluster_rank"] = rank
        per_rank.append({"rank": rank, "worker": member["worker"], "window": member["window"], **rank_row(digest)})
    per_rank.sort(key=lambda row: row["rank"])
    analysis = analyse_ranks(digests)
    return {"per_rank": per_rank, "run_summary": run_summary(per_rank), **analysis,
            "findings": [to_plain(hit) for hit in cluster_hits(analysis, digests)]}
