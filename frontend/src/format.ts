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
