// Links from the other views into the Timeline: at the longest call of a name, or at an instant.
import { h } from "../dom";
import type { AppStore } from "../state";

/** Opens the Timeline at the longest event named exactly `name` (or the slowest collective of a kind). */
export function openTimelineAt(store: AppStore, name: string, focusBy: "name" | "collective" = "name"): void {
  store.update({ view: "timeline", timeline: { ...store.state.timeline, focus: name, focusBy, event: -1, range: null } });
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
export function timelineAt(store: AppStore, at_ns: number, span_ns: number, id: string, text: string): HTMLButtonElement {
  const button = h("button", { type: "button", class: "button timeline-link", id }, text);
  button.onclick = () => {
    const range: [number, number] = [Math.floor(at_ns - span_ns / 2), Math.ceil(at_ns + span_ns / 2)];
    store.update({ view: "timeline", timeline: { ...store.state.timeline, focus: "", focusBy: "name", event: -1, range } });
  };
  return button;
}
