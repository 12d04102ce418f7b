// The Timeline's side panels: the selected slice's details (fields, call stack, linked events,
// collective peers) and the summary of a selected range. They show the routes' answers as they are.
import type { TimelineBrief, TimelinePeersResponse, TimelineSearchResponse, TimelineSliceResponse, TimelineSummaryResponse, TimelineTracksResponse } from "../api";
import { h } from "../dom";
import { bytes, int, pct, shortFrame, us } from "../format";
import { kvTable } from "./common";
import { spanText, timeText } from "./timeline_ruler";

export interface SideActions {
  /** select an event of the rank the details are about */
  goTo(slice: TimelineBrief): void;
  /** select a peer on another rank */
  goToPeer(rank: number, event: number): void;
  zoomTo(lo: number, hi: number): void;
}

function argText(key: string, value: string | number): string {
  return key === "bytes" && typeof value === "number" ? bytes(value) : String(value);
}

function linksList(slice: TimelineSliceResponse, actions: SideActions): HTMLElement {
  const list = h("ul", { id: "timeline-links", class: "timeline-links" });
  for (const link of slice.links) {
    const button = h("button", { type: "button", class: "link-button", "data-event": String(link.event) }, `${link.kind}: ${link.name}`);
    button.onclick = () => actions.goTo(link);
    list.append(h("li", {}, button, h("span", { class: "muted", text: ` ${timeText(link.start_ns)}, ${us(link.dur_ns)} µs` })));
  }
  return list;
}

function peersList(peers: TimelinePeersResponse, rankIndex: (worker: string, window: string) => number, actions: SideActions): HTMLElement {
  const list = h("ul", { id: "timeline-peers", class: "timeline-links" });
  for (const peer of peers.peers) {
    const label = `rank ${peer.rank}: starts at ${timeText(peer.clock_ns)} (clock), ${peer.last ? "arrived last" : `waits ${us(peer.wait_ns)} µs`}`;
    const button = h("button", { type: "button", class: `link-button${peer.last ? " last" : ""}`, "data-rank": String(peer.rank) }, label);
    const index = rankIndex(peer.worker, peer.window);
    button.disabled = index < 0;
    button.onclick = () => actions.goToPeer(index, peer.event);
    list.append(h("li", {}, button));
  }
  return list;
}

export function detailsPanel(slice: TimelineSliceResponse, peers: TimelinePeersResponse | null,
  rankIndex: (worker: string, window: string) => number, actions: SideActions): HTMLElement {
  const rows: [string, string][] = [
    ["Name", slice.name],
    ["Category", slice.category],
    ["Kind", slice.kind],
    ["Start", timeText(slice.start_ns)],
    ["Duration (µs)", us(slice.dur_ns)],
    ["Self time (µs)", us(slice.self_ns)],
  ];
  if (slice.input_shapes) rows.push(["Input shapes", slice.input_shapes]);
  for (const [key, value] of Object.entries(slice.args)) if (key !== "shapes" && key !== "stack") rows.push([key, argText(key, value)]);
  const panel = h("section", { id: "timeline-details", class: "card timeline-side", "data-event": String(slice.event) },
    h("h3", { class: "section-title", text: "Slice" }), kvTable("timeline-slice-table", rows, ["Field", "Value"]));
  if (slice.raw_args && Object.keys(slice.raw_args).length) {
    const raw = Object.entries(slice.raw_args).map(([key, value]): [string, string] => [key, typeof value === "string" ? value : JSON.stringify(value)]);
    panel.append(h("h4", { text: "Args (as in the file)" }), kvTable("timeline-raw-args", raw, ["Arg", "Value"]));
  } else if (slice.raw_args_state === "pending") {
    panel.append(h("p", { id: "timeline-raw-args-pending", class: "muted", text: "Reading every arg of the trace file…" }));
  }
  if (slice.call_stack.length) {
    panel.append(h("h4", { text: "Call stack" }), h("ol", { id: "timeline-stack", class: "stack" }, ...slice.call_stack.map((frame) => h("li", { text: shortFrame(frame), title: frame }))));
  }
  if (slice.links.length) panel.append(h("h4", { text: `Linked events (${int(slice.links.length)})` }), linksList(slice, actions));
  if (peers?.collective && peers.peers.length) panel.append(h("h4", { text: "Peers on every rank" }), peersList(peers, rankIndex, actions));
  return panel;
}

export function summaryPanel(summary: TimelineSummaryResponse, actions: SideActions): HTMLElement {
  const zoom = h("button", { type: "button", class: "button", id: "timeline-zoom-range" }, "Zoom to range");
  zoom.onclick = () => actions.zoomTo(summary.start_ns, summary.end_ns);
  const head = (text: string, title: string, num = true) => h("th", { class: num ? "num" : "", text, title });
  const table = h("table", { id: "timeline-summary-table", class: "data-table" },
    h("thead", {}, h("tr", {}, head("Name", "", false),
      head("Count", "events of this name that overlap the range"),
      head("Total (µs)", "time its events spend inside the range (clipped to it)"),
      head("Self (µs)", "that time less the time of their children on the same track"),
      head("Share (%)", "share of the range: total over the range's length (above 100 % where calls overlap on several tracks)"))));
  const body = h("tbody");
  for (const row of summary.rows) {
    body.append(h("tr", {}, h("td", { class: "name", text: row.name, title: row.name }), h("td", { class: "num", text: int(row.count) }),
      h("td", { class: "num", text: us(row.total_ns) }), h("td", { class: "num", text: us(row.self_ns) }), h("td", { class: "num", text: pct(row.share) })));
  }
  table.append(body);
  const section = h("section", { id: "timeline-summary", class: "card timeline-side" },
    h("h3", { class: "section-title", text: `Range ${timeText(summary.start_ns)} – ${timeText(summary.end_ns)} (${spanText(summary.end_ns - summary.start_ns)}): ${int(summary.events)} events, ${int(summary.names)} names` }),
    zoom);
  if (summary.critical_path_share !== null && summary.critical_path_share !== undefined) {
    section.append(h("p", { id: "timeline-critical-share", text: `Critical path share of the range: ${pct(summary.critical_path_share)} %` }));
  }
  section.append(h("div", { class: "table-wrap short" }, table));
  return section;
}

/** The search's matches in sight, by start: a button each jumps to (selects) it. */
export function hitsPanel(text: string, found: TimelineSearchResponse, tracks: TimelineTracksResponse, jump: (event: number) => void): HTMLElement {
  const names = new Map(tracks.tracks.map((track) => [track.id, track.name]));
  const hits = found.hits ?? [];
  const list = h("ol", { id: "timeline-hit-list", class: "timeline-links" });
  for (const [event, track, , start, dur] of hits) {
    const button = h("button", { type: "button", class: "link-button", "data-event": String(event) }, `${timeText(start)}, ${us(dur)} µs`);
    button.onclick = () => jump(event);
    list.append(h("li", {}, button, h("span", { class: "muted", text: ` ${names.get(track) ?? ""}` })));
  }
  const inRange = found.in_range ?? 0;
  const more = inRange > hits.length ? ` (the first ${int(hits.length)} listed)` : "";
  return h("section", { id: "timeline-hits", class: "card timeline-hits" },
    h("h3", { class: "section-title", text: `“${text}”: ${int(inRange)} of ${int(found.count)} matches in sight${more}` }),
    h("div", { class: "table-wrap short" }, list));
}
