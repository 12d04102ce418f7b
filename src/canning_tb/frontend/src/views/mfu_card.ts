// The overview's MFU card: model FLOPs utilisation and HBM bandwidth used over the kept steps, and
// what they are judged against (the device's peaks), from /roofline; a link opens the Roofline view.
// Filled when its answer arrives; absent (removed) when the window has no modelled work and no peak.
import { getJSON, windowParams, type RooflineResponse } from "../api";
import { h } from "../dom";
import { tip } from "../glossary";
import { chipSelect, peakOrigin } from "./chip_select";
import { card, kvTable } from "./common";
import type { ViewHost } from "./view";
import { sharePct, sig } from "./work_columns";

function rows(data: RooflineResponse): [string, string, string][] {
  const r = data.roofline;
  const peak = r.peaks.find((p) => p.device === r.device);
  const out: [string, string, string][] = [
    ["MFU (%)", sharePct(r.mfu ?? -1), tip("mfu")],
    ["HBM bandwidth used (GB/s)", sig(r.hbm_gbps ?? -1), `${tip("hbm_bandwidth_used")}${r.hbm_source ? ` Here: ${r.hbm_source.replace("_", " ")}.` : ""}`],
    ["HBM bandwidth used (% of peak)", sharePct(r.hbm_share ?? -1), tip("hbm_bandwidth_used")],
    ["Modelled share of kernel time (%)", sharePct(r.modelled_share ?? -1), tip("modelled_share")],
  ];
  if (peak) out.push(["Judged against", `${peak.name}: ${peakOrigin(peak)}`, `${tip("peak_flops")} ${peak.source}`]);
  return out;
}

/** The card (filled asynchronously); host.signal drops a late answer. */
export function mfuCard(host: ViewHost): HTMLElement {
  const body = h("div", { id: "ov-mfu-body", "data-state": "loading" }, h("span", { class: "spinner" }), "Reading MFU…");
  const el = card("MFU and HBM bandwidth", body);
  el.id = "ov-mfu";
  getJSON<RooflineResponse>("roofline", windowParams(host.sel), host.signal).then(
    (data) => {
      if (host.signal.aborted) return;
      const r = data.roofline;
      if (!r.peaks.length && !r.points.length && (r.mfu ?? -1) < 0) {
        el.remove();
        return;
      }
      const open = h("button", { type: "button", class: "button", id: "ov-open-roofline" }, "Open the Roofline view");
      open.onclick = () => host.store.update({ view: "roofline" });
      body.replaceChildren(chipSelect(host, data, "ov-chip"), kvTable("ov-mfu-table", rows(data)), ...r.notes.map((n) => h("p", { class: "muted", text: n })), open);
      body.dataset.state = "loaded";
    },
    () => el.remove(),
  );
  return el;
}
