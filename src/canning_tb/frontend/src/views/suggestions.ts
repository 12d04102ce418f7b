// Suggestions: the findings of the rules (analysis/rules, docs/rules.md) for the selected window,
// ranked by simulated gain as the route sends them, each with what was seen, why, what to change
// (torch and torch_npu), the gain (its range over the steps and the change replayed), and links to its
// evidence; the observations (no simulated gain) apart below them; then the cross-rank findings of the
// same window position (from /cluster) when the run has several ranks. Computes nothing.
import { getJSON, windowParams, type ClusterResponse, type Evidence, type RuleHit, type SuggestionsResponse } from "../api";
import { h } from "../dom";
import { ms } from "../format";
import glossaryTable from "../../../analysis/glossary.json";
import { label, tip, type GlossaryKey } from "../glossary";
import type { AppStore, ViewId } from "../state";
import { card, fetchOr, problemsList } from "./common";
import { gainParts, observationsBlock, OBSERVATIONS_NOTE, OBSERVATIONS_TITLE, splitFindings } from "./finding_gain";
import { openTimelineAt, timelineAt } from "./timeline_link";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

const TABLE_VIEWS: Record<string, ViewId> = { overview: "overview", operators: "operators", kernels: "kernels", memory: "memory", communication: "communication" };

/** A button per piece of evidence: the table row (its view, searched for the row) or the Timeline. */
function evidenceLinks(store: AppStore, items: Evidence[], id: string): HTMLElement | null {
  const links: HTMLElement[] = [];
  items.forEach((e, i) => {
    const view = TABLE_VIEWS[e.view];
    if (view) {
      const button = h("button", { type: "button", class: "button evidence-row", id: `${id}-row-${i}`, "data-view": view, title: e.label }, `${view}: ${e.row || e.label}`);
      button.onclick = () => {
        if (view === "operators") store.update({ view, operators: { ...store.state.operators, search: e.row } });
        else if (view === "kernels") store.update({ view, kernels: { ...store.state.kernels, search: e.row } });
        else store.update({ view });
      };
      links.push(button);
    }
    if (e.timeline_name) {
      const button = h("button", { type: "button", class: "button timeline-link", id: `${id}-tl-${i}`, "data-name": e.timeline_name }, `Timeline: ${e.timeline_name}`);
      button.onclick = () => openTimelineAt(store, e.timeline_name);
      links.push(button);
    } else if (e.ts_ns >= 0) {
      links.push(timelineAt(store, e.ts_ns, Math.max(e.dur_ns, 1_000_000), `${id}-at-${i}`, `Timeline: ${e.label || "here"}`));
    }
  });
  return links.length ? h("div", { class: "evidence" }, ...links) : null;
}

function part(label: string, text: string, cls: string): HTMLElement | null {
  return text ? h("p", { class: cls }, h("strong", { text: `${label}: ` }), text) : null;
}

/** What the finding rests on (its claim): the figure under its glossary name and the view that shows
 * it, and the floors it passed. Formats the claim; computes nothing. */
function claimPart(hit: RuleHit): HTMLElement | null {
  const c = hit.claim;
  if (!c || !c.figure || !(c.figure in glossaryTable)) return null;
  const key = c.figure as GlossaryKey;
  const floors = [c.floor_ns > 0 ? `gain floor ${ms(c.floor_ns)} ms (5 % of the step)` : "", c.noise_ns >= 0 ? `noise floor ${ms(c.noise_ns)} ms` : ""].filter(Boolean).join(", ");
  const text = `${label(key)}${c.view ? ` (${c.view === "trace" ? "the trace's events" : `${c.view} view`})` : ""}${floors ? `; ${floors}` : ""}`;
  return h("p", { class: "claim muted", title: tip(key) }, h("strong", { text: "Rests on: " }), text);
}

function finding(store: AppStore, hit: RuleHit, id: string): HTMLElement {
  const parts = [
    part("Seen", hit.seen || hit.detail, "seen"),
    claimPart(hit),
    part("Why", hit.why, "why"),
    part("Change (torch)", hit.change_torch, "change-torch"),
    part("Change (torch_npu)", hit.change_npu, "change-npu"),
    hit.needs ? part("To enable this check", hit.needs, "needs") : hit.observation ? null : part("Estimated gain", hit.gain, "gain"),
    ...(hit.needs ? [] : gainParts(hit)),
    evidenceLinks(store, hit.evidence, id),
  ].filter((x): x is HTMLElement => x !== null);
  return h(
    "li",
    { class: `finding sev-${hit.severity}${hit.observation ? " observation" : ""}`, id, "data-rule": hit.rule, "data-gain-ns": String(hit.gain_ns), "data-gain-low-ns": String(hit.claim?.gain_low_ns ?? -1), "data-gain-high-ns": String(hit.claim?.gain_high_ns ?? -1) },
    h("span", { class: "badge", text: hit.observation ? "observation" : hit.severity }),
    h("strong", { class: "finding-title", text: hit.title }),
    h("span", { class: "muted", text: ` ${hit.category}${hit.device ? ` · judged for ${hit.device}` : ""}` }),
    ...parts,
  );
}

function findingsList(store: AppStore, hits: RuleHit[], id: string): HTMLElement {
  return h("ol", { class: "suggestions findings", id }, ...hits.map((hit, i) => finding(store, hit, `${id}-${i}`)));
}

const CLUSTER_POLL_MS = 1000;

/** The cross-rank findings of this window position, asked again while the ranks are being digested (202). */
async function crossRank(host: ViewHost, into: HTMLElement): Promise<void> {
  if ((host.run?.workers.length ?? 0) < 2) return;
  const section = card("Across ranks (this window position)", h("p", { class: "muted", id: "sg-ranks-loading", text: "Digesting the other ranks…" }));
  into.append(section);
  try {
    for (;;) {
      const data = await getJSON<ClusterResponse & { loading?: boolean }>("cluster", windowParams(host.sel), host.signal);
      if (host.signal.aborted) return;
      if (!data.loading) {
        const split = splitFindings(data.findings);
        const list = split.findings.length ? findingsList(host.store, split.findings, "sg-ranks") : h("p", { class: "muted", id: "sg-ranks-none", text: "No cross-rank problem found." });
        section.lastElementChild?.replaceWith(h("div", {}, list, observationsBlock(split.observations, "sg-ranks-obs", (hit, i) => finding(host.store, hit, `sg-ranks-obs-${i}`))));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, CLUSTER_POLL_MS));
    }
  } catch (err) {
    if (!host.signal.aborted) section.lastElementChild?.replaceWith(h("p", { class: "muted", text: `Across ranks: ${(err as Error).message}` }));
  }
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Running the rules on this window…");
  const data = await fetchOr<SuggestionsResponse>(host, "suggestions", windowParams(host.sel));
  if (!data) return;
  const { findings: judged, observations } = splitFindings(data.findings.filter((f) => !f.needs));
  const unjudged = data.findings.filter((f) => f.needs);
  if (!data.findings.length) {
    showEmpty(host, "No suggestion", "No rule found a problem in this window.");
    return;
  }
  host.el.replaceChildren();
  const root = h("div", { id: "suggestions-root" });
  root.append(
    card(
      "Optimization suggestions",
      problemsList(data.problems, "sg-problems"),
      h("p", { class: "muted", text: "Ranked by simulated gain per step: each change replayed on this window's dependency graph, its gain given over the steps (docs/rules.md)." }),
      judged.length ? findingsList(host.store, judged, "sg") : h("p", { class: "muted", id: "sg-none", text: "No change the trace's dependency graph can replay was found worth making." }),
    ),
  );
  if (observations.length) root.append(card(OBSERVATIONS_TITLE, h("p", { class: "muted", text: OBSERVATIONS_NOTE }), h("ul", { class: "suggestions findings observations-list", id: "sg-obs" }, ...observations.map((hit, i) => finding(host.store, hit, `sg-obs-${i}`)))));
  if (unjudged.length) root.append(card("What this profile cannot tell", findingsList(host.store, unjudged, "sg-needs")));
  host.el.append(root);
  host.setState("loaded");
  await crossRank(host, root);
}

export const suggestionsView: ViewDef = {
  id: "suggestions",
  title: "Suggestions",
  mount(host) {
    void load(host);
  },
};
