// Counter lanes (memory allocated / reserved, the NPU's sampled counters): their scale and the value
// at an instant, as text. The values are the server's (timeline_counters); this only reads them.
import { bytes, fixed2, int } from "../format";
import type { Lane, RankView } from "./timeline_model";

/** A counter's value as text in its unit (MHz, bytes, bytes/s, the file's own). */
export function counterText(value: number, unit: string): string {
  if (unit === "bytes") return bytes(value);
  if (unit === "bytes/s") return `${bytes(value)}/s`;
  if (unit === "MHz") return `${int(value)} MHz`;
  return `${fixed2(value)}${unit ? ` ${unit}` : ""}`;
}

/** The series a counter lane draws: times (window-relative ns), values, the unit and the scale's top. */
export function laneSeries(rank: RankView, lane: Lane): { ts: number[]; values: number[]; unit: string; top: number } | null {
  if (lane.kind === "counter") {
    const counter = rank.counters?.memory[lane.counter];
    return counter ? { ts: counter.ts_ns, values: counter.bytes, unit: "bytes", top: Math.max(...counter.bytes, 1) } : null;
  }
  if (lane.kind === "npu") {
    const counter = rank.counters?.npu.find((one) => one.id === lane.counter);
    const info = rank.tracks.counters[lane.counter];
    return counter && info ? { ts: counter.ts_ns, values: counter.values, unit: info.unit, top: info.max } : null;
  }
  return null;
}

/** The value in force at `t` (window-relative ns): the last sample at or before it; null before the
 * first sample. */
export function valueAt(ts: number[], values: number[], t: number): number | null {
  let lo = 0;
  let hi = ts.length - 1;
  if (hi < 0 || t < ts[0]) return null;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ts[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return values[lo];
}
