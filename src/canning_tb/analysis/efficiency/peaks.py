"""Each device's dense peaks: what the trace says of it (name, SM / CU count, memory, compute capability;
torch_npu: the SoC name, AI Core count and clock), matched against peak_table.ROWS; the Ascend cube's
peak from its core count and clock where the files give both; a device no row matches gets none
("–" in the views) and a note naming the setting that gives them:

    CANNING_DEVICE_PEAKS='{"<part of the device name, or *>": {"bf16": 353.9, "fp32": ..., "vector": ...,
                                                               "hbm": 1600}}'   (TFLOP/s, GB/s)

read when the digest is computed (in the training job for digests made at the source, else where
TensorBoard or canning-prof runs); its numbers replace or add to the table's, and the source says so.

A chip can also be named (`--chip 910B3`, `?chip=` from the UI, `ps.Profile(chip=...)` into the
manifest): its row is then the device's, whatever the files say. One source per device, the first
of: the chip chosen for the view (URL / CLI), the manifest's chip, CANNING_DEVICE_PEAKS, the files
(docs/efficiency.md#peaks); `Peak.origin` says which.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ...ingest.op_args import json_object
from .peak_table import CUBE_FLOPS_PER_CYCLE, ROWS, PeakRow

SETTING = "CANNING_DEVICE_PEAKS"
_GIB = float(1 << 30)
_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclass
class Peak:
    device: int
    kind: str
    name: str
    matched: str = ""
    matrix: dict = field(default_factory=dict)  # dtype class -> TFLOP/s
    vector: float | None = None
    hbm: float | None = None
    source: str = ""
    note: str = ""
    origin: str = ""  # "chosen" | "manifest" | "setting" | "files" | "" (none)

    def compute_roof(self, dtype: str, matrix: bool) -> float | None:
        """TFLOP/s of the units the work runs on: the matrix peak of its dtype, or the vector FP32 peak."""
        return self.matrix.get(dtype) if matrix else self.vector


class UnknownChip(ValueError):
    """A chip name no row of the table has; the message lists the known ones."""


ORIGINS = {"chosen": "chosen for this view", "manifest": "from the run's manifest (Profile(chip=...))",
           "setting": SETTING, "files": "from the files"}
_VENDOR = re.compile(r"^(NVIDIA|AMD Instinct|Huawei Ascend) ")


def chip_name(row: PeakRow) -> str:
    """The short name a row is chosen by: its own, else its key without the vendor ("H100 SXM5")."""
    return row.chip or _VENDOR.sub("", row.key)


def _folded(name: str) -> str:
    return re.sub(r"[^0-9a-z_]", "", re.sub(r"^(nvidia|amd|instinct|huawei|ascend|\s)+", "", name.lower()))


def chip_names(kind: str = "") -> list[str]:
    """The names a user can choose, those of one device kind ("npu", "cuda", "rocm") when given."""
    return [chip_name(r) for r in ROWS if not kind or kind in r.kinds]


def chip_row(name: str) -> PeakRow:
    """The row of a chip name, any case, with or without the vendor ("Ascend910B3", "910b3");
    UnknownChip (listing the known names) for any other."""
    folded = _folded(name)
    for row in ROWS:
        if folded and folded in (_folded(chip_name(row)), _folded(row.key)):
            return row
    raise UnknownChip(f"unknown chip {name!r}; known: {', '.join(chip_names())}")


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _fits(row: PeakRow, dev: dict) -> bool:
    if str(dev.get("kind", "")).lower() not in row.kinds or not re.search(row.names, str(dev.get("name", "")), re.I):
        return False
    units = _int(dev.get("sm_count") if dev.get("sm_count") is not None else dev.get("ai_core_num"))
    if row.units is not None and units != row.units:
        return False
    if row.arch and str(dev.get("compute_capability", "")) != row.arch:
        return False
    memory = _int(dev.get("memory"))
    if row.memory_gib is not None and (memory is None or not row.memory_gib[0] <= memory / _GIB <= row.memory_gib[1]):
        return False
    return True


def _ascend_formula(dev: dict) -> dict:
    """The cube's peaks from AI Core count x clock (MHz), where the files give both."""
    cores, mhz = _int(dev.get("ai_core_num")), dev.get("aic_frequency_mhz")
    try:
        mhz = float(mhz)
    except (TypeError, ValueError):
        return {}
    if not cores or cores <= 0 or mhz <= 0:
        return {}
    return {dtype: round(cores * mhz * 1e6 * per / 1e12, 2) for dtype, per in CUBE_FLOPS_PER_CYCLE.items()}


def _overrides() -> dict:
    return json_object(os.environ.get(SETTING, "").strip())


def _apply_override(peak: Peak, overrides: dict) -> None:
    for pattern, values in overrides.items():
        if not isinstance(values, dict) or not (pattern == "*" or pattern.lower() in peak.name.lower()):
            continue
        for key, v in values.items():
            if not isinstance(v, (int, float)) or v <= 0:
                continue
            if key in _DTYPES:
                peak.matrix[key] = float(v)
            elif key == "vector":
                peak.vector = float(v)
            elif key == "hbm":
                peak.hbm = float(v)
        peak.source = f"{SETTING} ({pattern})" + (f"; {peak.source}" if peak.source else "")
        peak.origin = "setting"
        return


def _note(peak: Peak) -> str:
    missing = [what for what, absent in (("peak FLOP/s", not peak.matrix), ("HBM bandwidth", peak.hbm is None))
               if absent]
    if not missing:
        return ""
    return (f"{' and '.join(missing)} of '{peak.name}' unknown: not in canning-tb's table"
            f"{' (the files name the family, not the SoC)' if peak.kind == 'npu' and not peak.matched else ''}; "
            f"{'' if peak.matrix else 'name the chip (the Chip selector, canning-prof --chip, ps.Profile(chip=...)) or '}"
            f"give them with {SETTING}='{{\"{peak.name or '*'}\": {{\"bf16\": <TFLOP/s>, \"hbm\": <GB/s>}}}}' "
            f"(docs/efficiency.md#peaks)")


def _chosen(peak: Peak, chips: tuple) -> bool:
    """Give the device the row of the first named chip that fits it (chips: (name, origin) pairs, in
    precedence order); False when none does (a chip of another kind of device: a note says so)."""
    return any(_one_chip(peak, chip) for chip in chips if chip[0])


def _one_chip(peak: Peak, chip: tuple) -> bool:
    try:
        row = chip_row(chip[0])
    except UnknownChip as e:  # a chosen one was checked at the door; a manifest's may be of a newer table
        peak.note = "; ".join(n for n in (peak.note, f"{e} ({ORIGINS[chip[1]]}): not used") if n)
        return False
    if peak.kind.lower() not in row.kinds:
        note = f"chip {chip[0]} ({ORIGINS[chip[1]]}) is not for {peak.kind} devices: not used"
        peak.note = "; ".join(n for n in (peak.note, note) if n)
        return False
    peak.matched, peak.matrix, peak.vector, peak.hbm = row.key, dict(row.matrix), row.vector, row.hbm
    peak.source, peak.origin = f"{chip_name(row)}, {ORIGINS[chip[1]]}: {row.source}", chip[1]
    return True


def device_peak(dev: dict, overrides: dict | None = None, chips: tuple = ()) -> Peak:
    """The peaks of one device of Meta.devices; chips: (name, "chosen" | "manifest") pairs, the first
    that fits the device over the setting and the files."""
    peak = Peak(device=_int(dev.get("index")) or 0, kind=str(dev.get("kind", "")), name=str(dev.get("name", "")))
    if _chosen(peak, chips):  # a chip that did not fit before it keeps its note
        return peak
    row = next((r for r in ROWS if _fits(r, dev)), None)
    if row is not None:
        peak.matched, peak.matrix, peak.vector, peak.hbm, peak.source = (row.key, dict(row.matrix), row.vector,
                                                                         row.hbm, row.source)
    elif peak.kind == "npu" and _ascend_formula(dev):
        peak.matrix = _ascend_formula(dev)
        peak.matched = "Ascend cube formula"
        peak.source = (f"{dev.get('ai_core_num')} AI Cores x {dev.get('aic_frequency_mhz')} MHz x 16 x 16 x 16 MACs "
                       f"x 2 (the files' device info)")
    peak.origin = "files" if peak.source else ""
    _apply_override(peak, _overrides() if overrides is None else overrides)
    peak.note = "; ".join(n for n in (peak.note, _note(peak)) if n)
    return peak


def window_peaks(devices: list[dict], chosen: str | None = None, manifest_chip: str | None = None) -> list[Peak]:
    """One Peak per accelerator of the window (CPUs have no entry: no CPU peak is modelled); `chosen`
    (URL / CLI) before `manifest_chip` (Profile(chip=...)) before CANNING_DEVICE_PEAKS before the files."""
    overrides = _overrides()
    chips = ((chosen, "chosen"), (manifest_chip, "manifest"))
    return [device_peak(d, overrides, chips) for d in devices
            if str(d.get("kind", "")).lower() in ("cuda", "rocm", "npu")]
