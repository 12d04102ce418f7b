// The Timeline's tracks panel: every rank's tracks with a box to show or hide each and a button to pin
// it to the top of its rank. What it changes goes into the app state (the link keeps it).
import { h } from "../dom";
import type { TimelineOptions } from "../state";
import { trackKey, trackOrder, type RankView, type TrackChoice } from "./timeline_model";

export function tracksPanel(ranks: RankView[], choice: TrackChoice, change: (patch: Partial<TimelineOptions>) => void): HTMLElement[] {
  const hidden = new Set(choice.hidden);
  const list = h("ul", { id: "timeline-track-list", class: "timeline-links" });
  for (const rank of ranks) {
    for (const track of trackOrder(rank.tracks)) {
      const key = trackKey(rank, track);
      const box = h("input", { type: "checkbox", "data-track": key });
      box.checked = !hidden.has(key);
      box.onchange = () => change({ hidden: box.checked ? choice.hidden.filter((k) => k !== key) : [...choice.hidden, key] });
      const pinned = choice.pinned.includes(key);
      const pin = h("button", { type: "button", class: "link-button", "data-pin": key, "aria-pressed": String(pinned) }, pinned ? "unpin" : "pin");
      pin.onclick = () => change({ pinned: pinned ? choice.pinned.filter((k) => k !== key) : [...choice.pinned, key] });
      const label = ranks.length > 1 ? `rank ${rank.tracks.rank} / ${track.name}` : track.name;
      list.append(h("li", {}, h("label", {}, box, ` ${label} `), h("span", { class: "muted", text: `${track.events.toLocaleString("en-US")} events ` }), pin));
    }
  }
  const all = h("button", { type: "button", class: "button", id: "timeline-tracks-all" }, "Show all");
  all.onclick = () => change({ hidden: [], pinned: [], filter: "" });
  return [h("h3", { class: "section-title", text: "Tracks: show, hide, pin to the top" }), all, list];
}
