// Number formatting: durations arrive in integer ns; tables show µs with thousands separators.

const US = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export const ABSENT = "–";

/** ns -> "12,345.6" (µs); negative values mean "absent" in the digest. */
export function us(ns: number): string {
  return ns < 0 ? ABSENT : US.format(ns / 1000);
}

export function int(n: number): string {
  return n < 0 ? ABSENT : INT.format(n);
}

export function bytes(n: number): string {
  if (n < 0) return ABSENT;
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toLocaleString("en-US", { maximumFractionDigits: i ? 2 : 0 })} ${units[i]}`;
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
export function mb(n: number): string {
  return n < 0 ? ABSENT : ONE.format(n / 1048576);
}

export function fixed2(x: number): string {
  return x < 0 || !Number.isFinite(x) ? ABSENT : TWO.format(x);
}
