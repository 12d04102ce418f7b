"""canning-tb: profiling for PyTorch on Ascend NPUs, GPUs and CPUs (see DESIGN in README)."""
__version__ = "0.1.0"


def open(logdir_or_run, run=None, cache_dir=None):  # noqa: A001 - canning_tb.open, as the docs name it
    """Every window of every rank of a run (or of every run of a logdir) as tables and SQL (docs/sql.md):
    `canning_tb.open("./log").df("steps")`, `.sql("SELECT ...")`. `run`: only this run of the logdir."""
    from canning_tb.sql import open_run  # pyarrow and the store: only when asked
    return open_run(logdir_or_run, run=run, cache_dir=cache_dir)
