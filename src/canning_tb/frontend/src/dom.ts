// Tiny DOM helpers. Text from traces and file names only ever goes through textContent /
// attributes: never innerHTML. An element whose whole text is the unknown mark ("–", format.ts)
// says why on hover, unless its view gave a reason of its own.
import { UNKNOWN, UNKNOWN_WHY } from "./format";

type Attrs = Record<string, string | number | boolean | undefined>;
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === "class") el.className = String(v);
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  if (attrs.text === UNKNOWN) {
    el.dataset.unknown = "";
    if (attrs.title === undefined) el.title = UNKNOWN_WHY;
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return el;
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function option(value: string, label: string, selected = false): HTMLOptionElement {
  const opt = document.createElement("option");
  opt.value = value;
  opt.textContent = label;
  opt.selected = selected;
  return opt;
}

/** Text that may be cut short by its box (CSS class "elide"): the whole text stays on hover. */
export function elided<K extends keyof HTMLElementTagNameMap>(tag: K, text: string, shown = text, cls = ""): HTMLElementTagNameMap[K] {
  return h(tag, { class: `elide ${cls}`.trim(), text: shown, title: text });
}
