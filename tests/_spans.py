"""Interval sets in plain Python for the tests' independent readings of traces (sorted [lo, hi] lists, no
code of canning_tb): union, difference, intersection, and the time a set spends inside a range."""


def union(spans):
    out = []
    for lo, hi in sorted(p for p in spans if p[1] > p[0]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def minus(spans, holes):
    """spans less holes (both unions), by walking the holes over each span."""
    out = []
    for lo, hi in spans:
        cur = lo
        for a, b in holes:
            if b <= cur or a >= hi:
                continue
            if a > cur:
                out.append([cur, a])
            cur = max(cur, b)
        if cur < hi:
            out.append([cur, hi])
    return out


def inter(x, y):
    return minus(x, minus(x, y))


def length_in(spans, lo, hi):
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in spans)
