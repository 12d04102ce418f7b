// The chip selector: which chip's peaks MFU, % of peak and the roofline are judged against, when the
// files do not name the exact chip (torch_npu names the family, "Ascend910B"). The choice is kept in the
// URL (state option "chip") and sent to the routes as `chip=`; "as the files say" removes it.
// What the figures were judged against, and where that came from, is written beside it.
import type { DevicePeak, RooflineResponse } from "../api";
import { h } from "../dom";
import { CHIP_OPTION } from "../state";
import type { ViewHost } from "./view";

const ORIGIN: Record<string, string> = {
  chosen: "chosen in the UI",
  manifest: "from the run's manifest (Profile(chip=...))",
  setting: "from CANNING_DEVICE_PEAKS",
  files: "from the files",
};

/** "910B3, chosen in the UI" / "NVIDIA A100 40GB, from the files" / "no peak known". */
export function peakOrigin(peak: DevicePeak | undefined): string {
  if (!peak || !peak.matched && !Object.keys(peak.tflops).length) return "no peak known";
  const what = peak.matched || peak.name;
  const where = ORIGIN[peak.origin ?? ""];
  return where ? `${what}, ${where}` : what;
}

/** The selector, offering the chips of the window's kinds of device; empty when there are none. */
export function chipSelect(host: ViewHost, data: RooflineResponse, id: string): HTMLElement {
  const chips = data.chips ?? [];
  if (!chips.length) return h("span", {});
  const chosen = host.store.state.options[CHIP_OPTION] ?? "";
  const select = h("select", { id, "aria-label": "Chip", title: "The chip whose peaks the figures are judged against" },
    h("option", { value: "", text: "as the files say" }),
    ...chips.map((c) => h("option", { value: c, text: c }))) as HTMLSelectElement;
  select.value = chips.includes(chosen) ? chosen : "";
  select.onchange = () => {
    const { [CHIP_OPTION]: _old, ...options } = host.store.state.options;
    host.store.update({ options: select.value ? { ...options, [CHIP_OPTION]: select.value } : options });
  };
  return h("label", { class: "chip-select" }, "Chip: ", select);
}
