"""The selections every front door serves (the plugin's routes, the MCP server's tools, the CLI): one
window's sections, the ranks of a run, trends, compare, the roofline and the timeline, from the Store's
digests and events. Results are plain dicts; errors are typed (errors.py) and carry no HTTP status."""
