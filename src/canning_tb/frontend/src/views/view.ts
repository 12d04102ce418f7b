// The contract between the shell and a view. A view fills `el` for one selected window and
// reports its state; the shell mirrors it on the root's data-state. To add a view: write a
// `ViewDef` and list it in views/index.ts.
import type { RunInfo, Selection } from "../api";
import { clear, h } from "../dom";

export type ViewState = "loading" | "loaded" | "error" | "empty";

export interface ViewHost {
  el: HTMLElement;
  sel: Selection;
  /** the selected run as listed by /runs (its workers and windows) */
  run?: RunInfo;
  /** Aborted when the view is replaced (other window, other tab): drop late responses. */
  signal: AbortSignal;
  setState(state: ViewState): void;
}

export interface ViewDef {
  id: string;
  title: string;
  mount(host: ViewHost): void;
}

export function showLoading(host: ViewHost, text: string): void {
  clear(host.el);
  host.el.append(h("div", { class: "notice loading", id: "view-loading", role: "status" }, h("span", { class: "spinner" }), text));
  host.setState("loading");
}

export function showError(host: ViewHost, text: string): void {
  clear(host.el);
  host.el.append(
    h("div", { class: "notice error", id: "view-error", role: "alert" }, h("strong", { text: "Cannot show this window. " }), text),
  );
  host.setState("error");
}

export function showEmpty(host: ViewHost, title: string, ...lines: string[]): void {
  clear(host.el);
  host.el.append(
    h("div", { class: "notice empty", id: "view-empty" }, h("h2", { text: title }), ...lines.map((l) => h("p", { text: l }))),
  );
  host.setState("empty");
}
