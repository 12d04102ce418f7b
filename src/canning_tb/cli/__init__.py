"""canning-prof: profile a script, print a report, compare two runs."""
