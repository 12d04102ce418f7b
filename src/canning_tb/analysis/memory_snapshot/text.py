"""The snapshot explained in text (canning-prof --mode=view), from summary.summarize()'s dict: the same figures."""
from __future__ import annotations


def size(nbytes: int) -> str:
    if nbytes is None or nbytes < 0:
        return "-"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes} B"


def share(x: float) -> str:
    return "-" if x is None or x < 0 else f"{100 * x:.1f} %"


def snapshot_text(summary: dict, top: int = 5) -> str:
    lines = [f"memory snapshot {summary['file']} ({summary['flavour']}): {summary['segments']} segments, "
             f"{summary['blocks']} blocks, {summary['entries']} history entries"]
    for w in summary.get("warnings", []):
        lines.append(f"  warning: {w}")
    for dev in summary["devices"]:
        snap, pk = dev["at_snapshot"], dev["peak"]
        lines.append(f"device {dev['device']}: at the snapshot reserved {size(snap['reserved'])}, allocated "
                     f"{size(snap['allocated'])}, requested {size(snap['requested'])}, fragmentation "
                     f"{share(snap['fragmentation'])}, largest free block {size(snap['largest_free_block'])}, "
                     f"{snap['segments']} segments ({snap['expandable_segments']} expandable)")
        if pk["entry"] >= 0:
            lines.append(f"  peak {size(pk['requested'])} requested ({size(pk['reserved'])} reserved) at entry "
                         f"{pk['entry']}; {size(pk['before_history'])} from before the history")
            for g in pk["by_frame"][:top]:
                lines.append(f"    {size(g['bytes']):>10}  {g['blocks']:>6} blocks  {g['frame']}")
        ec = dev["empty_cache"]
        if ec["empty_cache_calls"]:
            lines.append(f"  empty_cache(): {ec['empty_cache_calls']} calls released {size(ec['empty_cache_bytes'])}. "
                         f"{ec['warning']}")
        for oom in dev["ooms"][:top]:
            lines.append(f"  OOM at entry {oom['entry']}: asked {size(oom['requested'])}, the device had "
                         f"{size(oom['device_free'])} free; {oom['frame']}")
        if dev["growth"]:
            lines.append(f"  growth per step ({dev['steps_source']}): " + ", ".join(
                f"step {g['step']} +{size(g['grown'])}" for g in dev["growth"][:12]))
        for leak in dev["leaks"][:top]:
            lines.append(f"  LEAK: {leak['frame']} keeps " + ", ".join(size(b) for b in leak["bytes_per_step"])
                         + f" more in steps {', '.join(map(str, leak['steps']))}")
        for f in dev.get("findings", []):
            lines.append(f"  finding [{f['severity']}] {f['title']} (gain: {f['gain']})")
        lines.append(f"  {dev['join']}")
    return "\n".join(lines)
