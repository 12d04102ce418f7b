// The Timeline's help: the mouse and keyboard bindings (timeline_input.ts), as users know them from
// Perfetto and chrome://tracing, and what the lanes are.
import { h } from "../dom";

export const BINDINGS: [string, string][] = [
  ["W / S", "zoom in / out at the pointer (Shift: faster)"],
  ["A / D", "pan left / right (Shift: faster)"],
  ["Ctrl (⌘, Alt) + wheel", "zoom at the pointer"],
  ["Wheel", "scroll the tracks up and down"],
  ["Shift + wheel, sideways swipe", "pan"],
  ["Drag", "pan"],
  ["Shift + drag, drag on the ruler", "measure a time range (its length is drawn; its summary per name opens beside; kept in the link)"],
  ["Click", "select a slice (a track's or rank's label: fold / unfold it)"],
  ["F", "fit the selected slice and its linked events, else the selected range, else the window"],
  ["0 / Z", "the whole window"],
  ["[ / ]", "follow the selected slice's earlier / later linked event (flow)"],
  ["/", "search: every match in sight is highlighted and listed as you type; Enter: next match, Shift + Enter: previous"],
  ["M", "a marker at the pointer (kept in the link); Shift + M removes them all"],
  ["Esc", "clear the selection"],
  ["?", "show / hide this help"],
];

const LANES =
  "Device streams come first, then the host threads, then the Python call stacks (folded to their top row; click the label to open them). " +
  "The ruler counts from the window's start; deep in a long window the first tick gives the whole time and the others the offset from it. " +
  "Counter tracks show their scale at the top left; hover one for its value at the pointer.";

export function helpPanel(): HTMLElement {
  const rows = BINDINGS.map(([keys, what]) => h("tr", {}, h("th", { scope: "row", text: keys }), h("td", { text: what })));
  return h(
    "section",
    { id: "timeline-help", class: "card timeline-help", hidden: true },
    h("h3", { class: "section-title", text: "Timeline: mouse and keys" }),
    h("table", { class: "data-table kv" }, h("tbody", {}, ...rows)),
    h("p", { class: "muted", text: LANES }),
  );
}
