// What every list of findings shows the same way (Overview, Suggestions, the run's findings): the findings apart
// from the observations (a rule whose change the dependency graph cannot replay: no gain, never ranked among the
// findings, docs/rules.md), and each finding's simulated gain as its range over the steps with the edit that was
// replayed, in words (RuleHit.claim: gain_low_ns, gain_high_ns, edit). Formats; computes nothing.
import type { RuleHit } from "../api";
import { h } from "../dom";
import { known, ms } from "../format";

export const OBSERVATIONS_TITLE = "Observations: no simulated gain";
export const OBSERVATIONS_NOTE = "What the rules saw but cannot state as a change the trace's dependency graph can replay: no gain is claimed and they are not ranked among the findings.";

/** The findings (in their order) and the observations (in theirs). */
export function splitFindings(hits: RuleHit[]): { findings: RuleHit[]; observations: RuleHit[] } {
  return { findings: hits.filter((hit) => !hit.observation), observations: hits.filter((hit) => hit.observation) };
}

/** "12.345–15.678 ms per step" (or one figure where the steps agree); "" where nothing was simulated. */
export function gainRange(hit: RuleHit): string {
  const c = hit.claim;
  if (!c || hit.observation || !known(c.gain_low_ns) || !known(c.gain_high_ns)) return "";
  const span = c.gain_low_ns === c.gain_high_ns ? `${ms(c.gain_low_ns)} ms` : `${ms(c.gain_low_ns)}–${ms(c.gain_high_ns)} ms`;
  const steps = c.steps > 1 ? ` over ${c.steps} steps` : c.steps === 1 ? " (one step: noise not judged)" : "";
  return `${span} per step${steps}`;
}

/** The finding's simulated gain and the replayed edit, as lines of a list item (nothing for an observation). */
export function gainParts(hit: RuleHit): HTMLElement[] {
  const parts: HTMLElement[] = [];
  const range = gainRange(hit);
  if (range) parts.push(h("p", { class: "gain-range" }, h("strong", { text: "Simulated gain: " }), range));
  if (!hit.observation && hit.claim?.edit) parts.push(h("p", { class: "gain-edit muted" }, h("strong", { text: "Change replayed: " }), hit.claim.edit));
  return parts;
}

/** The short item the Overview lists: severity, title, what was seen, the gain and the edit replayed. */
export function briefItem(hit: RuleHit, seen = true): HTMLElement {
  return h(
    "li",
    { class: `sev-${hit.severity}${hit.observation ? " observation" : ""}`, "data-rule": hit.rule, "data-gain-low-ns": String(hit.claim?.gain_low_ns ?? -1), "data-gain-high-ns": String(hit.claim?.gain_high_ns ?? -1) },
    h("span", { class: "badge", text: hit.observation ? "observation" : hit.severity }),
    h("strong", { text: hit.title }),
    ...(seen ? [h("p", { text: hit.seen || hit.detail })] : []),
    ...(hit.observation ? [] : [h("p", { class: "muted", text: `Estimated gain: ${hit.gain}` }), ...gainParts(hit)]),
  );
}

/** The observations of a list, apart, under their own heading; null where there are none. */
export function observationsBlock(hits: RuleHit[], id: string, item: (hit: RuleHit, i: number) => HTMLElement = (hit) => briefItem(hit)): HTMLElement | null {
  if (!hits.length) return null;
  return h(
    "div",
    { class: "observations", id: `${id}-block` },
    h("h4", { class: "observations-title", text: OBSERVATIONS_TITLE, title: OBSERVATIONS_NOTE }),
    h("p", { class: "muted", text: OBSERVATIONS_NOTE }),
    h("ul", { class: "suggestions observations-list", id }, ...hits.map((hit, i) => item(hit, i))),
  );
}
