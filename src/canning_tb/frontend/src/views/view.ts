// The contract between the shell and a view. A view fills `el` for one selected window, reads its
// options from the app state (host.store.state) and changes them only through host.store, and
// reports its state; the shell mirrors that on the root's data-state. To add a view: write a
// `ViewDef` and list it in views/index.ts (and its id in state.ts).
import type { RunEntry, Selection } from "../api";
import { clear, h } from "../dom";
import type { AppStore, ViewId } from "../state";

export type ViewState = "loading" | "loaded" | "error" | "empty";

export interface ViewHost {
  el: HTMLElement;
  sel: Selection;
  /** the selected run as listed by /runs (its workers and windows) */
  run?: RunEntry;
  store: AppStore;
  /** Aborted when the view is replaced (other window, other tab): drop late responses. */
  signal: AbortSignal;
  setState(state: ViewState): void;
}

export interface ViewDef {
  id: ViewId;
  title: string;
  mount(host: ViewHost): void;
}

export function showLoading(host: Pick<ViewHost, "el" | "setState">, text: string): void {
  clear(host.el);
  host.el.append(h("div", { class: "notice loading", id: "view-loading", role: "status" }, h("span", { class: "spinner" }), text));
  host.setState("loading");
}

export function showError(host: Pick<ViewHost, "el" | "setState">, text: string): void {
  clear(host.el);
  host.el.append(
    h("div", { class: "notice error", id: "view-error", role: "alert" }, h("strong", { text: "Cannot show this window. " }), text),
  );
  host.setState("error");
}

export function showEmpty(host: Pick<ViewHost, "el" | "setState">, title: string, ...lines: string[]): void {
  clear(host.el);
  host.el.append(
    h("div", { class: "notice empty", id: "view-empty" }, h("h2", { text: title }), ...lines.map((line) => h("p", { text: line }))),
  );
  host.setState("empty");
}
