"""Memory you can explain: pure functions over one allocator snapshot (ingest/snapshot: `Snapshot` columns).

- `replay.py`: the trace entries of one device replayed: live (allocated) and reserved bytes after each entry,
  each allocation paired with its free, the blocks alive before the history began;
- `frames.py`: a stack's top user frame and its text;
- `peak.py`: the peak and the blocks alive at it, grouped by top user frame and by stack;
- `state.py`: the allocator's state at an entry (reserved, allocated, fragmentation, largest free block);
- `events.py`: empty_cache() calls and the segments they released; OOM entries;
- `steps.py`: the steps (joined by time to the window's steps, else found in the trace's own repeating pattern),
  growth per step and leaks (growth that repeats);
- `join.py`: the trace's clock tied to the window's (or "not joined", never a guess), operators at allocations;
- `summary.py`: all of it as one bounded plain dict, what every front door serves.
"""
