// Number formatting: the one path every view's figures take. Durations arrive in integer ns (tables
// show µs or ms with thousands separators), sizes in bytes.
//
// Unknown: the API marks a figure it does not know as -1 (integers: "Absent numbers are -1",
// digest.proto) or null (doubles: NaN and infinities travel as null; optional figures). Every
// formatter here takes either, and any negative, NaN or missing value, and writes UNKNOWN ("–");
// dom.ts gives each such cell the glossary's tooltip. So a figure that analysis turns into unknown
// shows as unknown in every view without code of its own. Signed values (deltas) are formatted by
// their views from the magnitude.
import { UNKNOWN_TIP } from "./glossary";

/** A figure as the API gives it: a number, -1 / negative or null where it is not known. */
export type Figure = number | null | undefined;

export const UNKNOWN = "–";
/** Why a figure shows "–" (the glossary's definition of unknown). */
export const UNKNOWN_WHY = UNKNOWN_TIP;

/** Whether the API knows the figure (not null, not negative, finite). */
export function known(x: Figure): x is number {
  return typeof x === "number" && Number.isFinite(x) && x >= 0;
}

const US = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const MS = new Intl.NumberFormat("en-US", { minimumFractionDigits: 3, maximumFractionDigits: 3 });
const ONE = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const TWO = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** `format(x)` for a known figure, UNKNOWN otherwise: every formatter below goes through it. */
export function figure(x: Figure, format: (x: number) => string): string {
  return known(x) ? format(x) : UNKNOWN;
}

/** ns -> "12,345.6" (µs). */
export function us(ns: Figure): string {
  return figure(ns, (v) => US.format(v / 1000));
}

export function int(count: Figure): string {
  return figure(count, (v) => INT.format(v));
}

const PER_STEP = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });

/** A count per step: whole as an integer ("1", never "1.0"), a mean of uneven steps with one decimal
 * ("2.5"). */
export function calls(count: Figure): string {
  return figure(count, (v) => PER_STEP.format(v));
}

export function bytes(size: Figure): string {
  return figure(size, (v) => {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let value = v;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit++;
    }
    return `${value.toLocaleString("en-US", { maximumFractionDigits: unit ? 2 : 0 })} ${units[unit]}`;
  });
}

/** ns -> "12.345" (ms). */
export function ms(ns: Figure): string {
  return figure(ns, (v) => MS.format(v / 1e6));
}

/** a share 0..1 -> "12.3" (%). */
export function pct(share: Figure): string {
  return figure(share, (v) => ONE.format(100 * v));
}

/** bytes -> "12.3" (MB, 1 MB = 1024 × 1024 bytes, as PyTorch's memory tools count). */
export function mb(size: Figure): string {
  return figure(size, (v) => ONE.format(v / 1048576));
}

export function fixed2(x: Figure): string {
  return figure(x, (v) => TWO.format(v));
}

// Python frames name files by absolute path ("/home/u/.local/lib/python3.9/site-packages/torch/
// nn/modules/linear.py(125): forward"); the part that says which module it is starts after the
// installation folder.
const INSTALL_DIRS = /^.*[\\/](?:site-packages|dist-packages)[\\/]|^.*[\\/]lib[\\/]python\d+(?:\.\d+)?[\\/]/;

/** A frame's path shortened to the package-relative one (torch/nn/modules/linear.py(125): forward);
 * a path outside any installation folder (the user's own code) is kept whole. */
export function shortFrame(frame: string): string {
  return frame.trim().replace(INSTALL_DIRS, "");
}

/** A call stack ("frame;frame;…") with every frame shortened. */
export function shortStack(stack: string): string {
  return stack
    .split(";")
    .filter((frame) => frame.trim() !== "")
    .map(shortFrame)
    .join(";");
}
