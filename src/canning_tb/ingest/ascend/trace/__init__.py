"""trace_view.json of a torch_npu window: read.py (the entry), decode / scan / parse (a piece at a time),
merge (two processes), flows and kinds (the columns joined)."""
