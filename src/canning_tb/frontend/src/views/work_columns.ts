// The work columns of the Operators and Kernels tables and of the Roofline view's table: modelled
// FLOPs, achieved TFLOP/s and GB/s, intensity, share of roof and the bound, as analysis computed them
// (the digest's WorkRates); "–" where a model or a peak is unknown (model "" = no model at all).
import type { WorkRates } from "../api";
import { tip } from "../glossary";
import type { Col } from "./common";

const ABSENT = "–";
const SIG = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 });
const ONE = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });

/** A figure of a WorkRates, -1 (or no model) as unknown. */
export function workValue(w: WorkRates | undefined, key: keyof WorkRates): number {
  const value = w && w.model ? (w[key] as number | null) : -1;
  return value === null || value === undefined || !Number.isFinite(value) ? -1 : value;
}

/** 3 significant digits ("13.7", "0.241", "1.2e-5" as "0.000012"), "–" unknown. */
export function sig(value: number): string {
  return value < 0 ? ABSENT : SIG.format(value);
}

/** FLOPs in GFLOP. */
export function gflop(flops: number): string {
  return flops < 0 ? ABSENT : SIG.format(flops / 1e9);
}

export function sharePct(share: number): string {
  return share < 0 ? ABSENT : ONE.format(100 * share);
}

/** The work columns for rows of type T (its WorkRates from `work`); `prefix` makes the keys the
 * server sorts on ("work.tflops"). `compact` (the Operators and Kernels tables, which must fit a
 * 1,280 px window beside their time columns): achieved TFLOP/s and GB/s and the share of roof with
 * the bound in one cell; the modelled GFLOP and the intensity are in the Roofline view's table. */
export function workColumns<T>(work: (r: T) => WorkRates | undefined, prefix = "work.", compact = false): Col<T>[] {
  const num = (key: keyof WorkRates, label: string, help: string, fmt: (v: number) => string): Col<T> => ({
    key: `${prefix}${key}`,
    label,
    num: true,
    tip: help,
    value: (r) => workValue(work(r), key),
    fmt: (r) => fmt(workValue(work(r), key)),
  });
  const bound = (r: T): string => (work(r)?.model ? work(r)?.bound || "" : "");
  if (compact) {
    return [
      num("tflops", "TFLOP/s", tip("achieved_tflops"), sig),
      num("gbps", "GB/s", tip("achieved_gbps"), sig),
      {
        key: `${prefix}roof_share`,
        label: "Roof (%)",
        num: true,
        tip: `${tip("roof_share")} ${tip("bound")}`,
        value: (r) => workValue(work(r), "roof_share"),
        fmt: (r) => {
          const share = sharePct(workValue(work(r), "roof_share"));
          return bound(r) ? `${share} ${bound(r)}` : share;
        },
      },
    ];
  }
  return [
    num("flops", "GFLOP", tip("model_flops"), gflop),
    num("tflops", "TFLOP/s", tip("achieved_tflops"), sig),
    num("gbps", "GB/s", tip("achieved_gbps"), sig),
    num("intensity", "FLOP/byte", tip("arithmetic_intensity"), sig),
    num("roof_share", "Share of Roof (%)", tip("roof_share"), sharePct),
    {
      key: `${prefix}bound`,
      label: "Bound",
      tip: tip("bound"),
      value: (r) => bound(r),
      fmt: (r) => bound(r) || ABSENT,
    },
  ];
}

/** Whether any row has a model: the columns are shown only then. */
export function anyWork<T>(rows: T[], work: (r: T) => WorkRates | undefined): boolean {
  return rows.some((r) => !!work(r)?.model);
}
