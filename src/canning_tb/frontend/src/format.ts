// Number formatting: durations arrive in integer ns; tables show µs with thousands separators.

const US = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

const ABSENT = "–";

/** ns -> "12,345.6" (µs); negative values mean "absent" in the digest. */
export function us(ns: number): string {
  return ns < 0 ? ABSENT : US.format(ns / 1000);
}

export function int(count: number): string {
  return count < 0 ? ABSENT : INT.format(count);
}

export function bytes(size: number): string {
  if (size < 0) return ABSENT;
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toLocaleString("en-US", { maximumFractionDigits: unit ? 2 : 0 })} ${units[unit]}`;
}

const MS = new Intl.NumberFormat("en-US", { minimumFractionDigits: 3, maximumFractionDigits: 3 });
const ONE = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const TWO = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** ns -> "12.345" (ms); negative = absent. */
export function ms(ns: number): string {
  return ns < 0 ? ABSENT : MS.format(ns / 1e6);
}

/** a share 0..1 -> "12.3" (%); negative or not finite = absent. */
export function pct(share: number): string {
  return share < 0 || !Number.isFinite(share) ? ABSENT : ONE.format(100 * share);
}

/** bytes -> "12.3" (MB, 1 MB = 1024 × 1024 bytes, as PyTorch's memory tools count). */
export function mb(size: number): string {
  return size < 0 ? ABSENT : ONE.format(size / 1048576);
}

export function fixed2(x: number): string {
  return x < 0 || !Number.isFinite(x) ? ABSENT : TWO.format(x);
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
