"""Level-of-detail index over one window's EventTable, and what the timeline asks of it:
tiles (at most a few items per pixel column and track row), slice details, search, range
summaries, counter tracks. Knows nothing of HTTP; the plugin's timeline routes call it."""
