// Links from the other views into the Timeline: at the longest call of a name, or at an instant (marked
// on the axis; with `lane`, the counter lanes to show with it, as "memory:<device>").
import { h } from "../dom";
import type { AppStore } from "../state";

/** Opens the Timeline at the longest event named exactly `name` (or the slowest collective of a kind). */
export function openTimelineAt(store: AppStore, name: string, focusBy: "name" | "collective" = "name"): void {
  store.update({ view: "timeline", timeline: { ...store.state.timeline, focus: name, focusBy, event: -1, range: null, mark: -1, lane: "" } });
}

/** A button that opens the Timeline at the longest event named exactly `name`. */
export function timelineLink(store: AppStore, name: string, id: string, text = "Show the longest call in the Timeline"): HTMLButtonElement {
  const button = h("button", { type: "button", class: "button timeline-link", id: id || undefined, "data-name": name, title: `Open the longest ${name} in the Timeline` }, text);
  button.onclick = (event) => {
    event.stopPropagation();
    openTimelineAt(store, name);
  };
  return button;
}

/** A button that opens the Timeline on `span_ns` around the instant `at_ns` (window-relative ns). */
export function timelineAt(store: AppStore, at_ns: number, span_ns: number, id: string, text: string, lane = ""): HTMLButtonElement {
  const button = h("button", { type: "button", class: "button timeline-link", id }, text);
  button.onclick = () => {
    const range: [number, number] = [Math.floor(at_ns - span_ns / 2), Math.ceil(at_ns + span_ns / 2)];
    const mark = Math.max(0, Math.round(at_ns));
    store.update({ view: "timeline", timeline: { ...store.state.timeline, focus: "", focusBy: "name", event: -1, range, mark, lane } });
  };
  return button;
}
