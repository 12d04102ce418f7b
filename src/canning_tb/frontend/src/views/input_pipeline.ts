// The Overview's input pipeline card: the host side of data loading from the digest (analysis/
// input_pipeline.py): how long the loop waits for each next batch against the step, the loader's
// workers the trace names, host-to-device copies and pin memory, per step. Figures as the digest
// has them; unknown is "–" with the reason.
import type { InputPipeline } from "../api";
import { h } from "../dom";
import { bytes, int, ms, pct, UNKNOWN } from "../format";
import { card, kvTable } from "./common";

const NEXT_TIP = "Time inside the DataLoader's next() ranges the profiler records (enumerate(DataLoader)#…__next__), the union per step: the training loop waits there for the next batch.";
const WORKERS_TIP = "Threads or processes the trace names as loader workers (DataLoader, pin_memory). torch.profiler records the main process only: a multiprocessing DataLoader's worker processes are not in the trace.";
const H2D_TIP = "Host-to-device copies on the device (Memcpy HtoD), the union per step, and the bytes they moved where the file gives sizes.";
const PIN_TIP = "Pin-memory operators on the host (aten::pin_memory, aten::_pin_memory), the union per step.";

function workersText(ip: InputPipeline): [string, string] {
  if (ip.workers > 0) return [`${int(ip.workers)} (${ip.worker_names.join(", ")})`, WORKERS_TIP];
  if (ip.workers === 0) return ["0 (the main process loads)", WORKERS_TIP];
  const why = ip.loader === "multiprocessing" ? "worker processes, not in the trace" : "none named in the trace";
  return [`${UNKNOWN} (${why})`, WORKERS_TIP];
}

function stepsTable(ip: InputPipeline): HTMLTableElement {
  const heads: [string, string][] = [["Step", ""], ["Step (ms)", ""], ["Next batch (ms)", NEXT_TIP], ["Next batch (%)", "Next batch over the step"],
    ["H2D copies (ms)", H2D_TIP], ["H2D copied", H2D_TIP], ["Pin memory (ms)", PIN_TIP]];
  const table = h("table", { id: "ov-input-steps", class: "data-table" },
    h("thead", {}, h("tr", {}, ...heads.map(([text, title], i) => h("th", { class: i ? "num" : "", text, title })))));
  const body = h("tbody");
  for (const step of ip.steps) {
    const share = ip.next_calls > 0 && step.step_ns > 0 ? step.next_ns / step.step_ns : -1;
    body.append(h("tr", { "data-step": String(step.step) },
      h("td", { text: step.step > 0 ? `#${step.step}` : "window" }),
      h("td", { class: "num", text: ms(step.step_ns) }),
      h("td", { class: "num", text: ip.next_calls > 0 ? ms(step.next_ns) : UNKNOWN }),
      h("td", { class: "num", text: pct(share) }),
      h("td", { class: "num", text: ms(step.h2d_ns) }),
      h("td", { class: "num", text: bytes(step.h2d_bytes) }),
      h("td", { class: "num", text: ms(step.pin_ns) })));
  }
  table.append(body);
  return table;
}

export function inputPipelineCard(ip: InputPipeline | null): HTMLElement {
  const title = "Input pipeline (host side of data loading)";
  if (!ip) return card(title, h("p", { id: "ov-input-none", class: "muted", text: "This window's digest was made by older canning-tb code, without this section: digest it again (canning-prof digest) to see it." }));
  const [workers, workersTip] = workersText(ip);
  const known = ip.next_calls > 0;
  const rows: [string, string, string?][] = [
    ["DataLoader", ip.loader || "no DataLoader call in this trace", "From the DataLoader iterator's name in the trace"],
    ["Workers seen", workers, workersTip],
    ["Waiting for the next batch (ms per step)", known ? ms(ip.next_ns) : UNKNOWN, NEXT_TIP],
    ["Waiting for the next batch (% of step)", known ? pct(ip.next_share) : UNKNOWN, NEXT_TIP],
    ["DataLoader next() calls", int(ip.next_calls), NEXT_TIP],
    ["Host-to-device copies (ms per step)", ms(ip.h2d_ns), H2D_TIP],
    ["Host-to-device copied per step", bytes(ip.h2d_bytes), H2D_TIP],
    ["Pin memory (ms per step)", ms(ip.pin_ns), PIN_TIP],
  ];
  return card(title, h("div", { class: "grid2" }, kvTable("ov-input", rows), h("div", { class: "table-wrap short" }, stepsTable(ip))));
}
