"""How far each operator and kernel is from the hardware: FLOPs / bytes models per operator
(models_*.py), device peaks with their sources (peaks.py, peak_table.py), achieved rates and the
bound (rates.py), roofline points, MFU and HBM bandwidth per step and module (totals.py); the
digest section is `section.roofline_section`. Formulas and sources: docs/efficiency.md.

Not the "device efficiency" figures of gpu_metrics.py / npu_metrics.py (utilisation, SM efficiency,
occupancy: how busy the device was); these say how well the busy time was used.
"""
