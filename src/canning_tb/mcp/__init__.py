"""The agent surface: a Model Context Protocol server (`canning-prof mcp --logdir DIR`), a second front
door beside `plugin/`. It reads the same Store and digests and calls the same selections as the plugin's
routes (queries/: sections.py, ranks.py, compare.py, timeline.py): it computes no figure of its own.
It only bounds the answers (row limits, paging cursors, a size cap) and says where a window stands.
Tools and their answers: docs/agents.md.
"""
