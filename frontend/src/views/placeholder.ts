// Views not built yet say what they will show, instead of a blank page.
import { showEmpty, type ViewDef } from "./view";

export function placeholder(id: string, title: string, ...what: string[]): ViewDef {
  return {
    id,
    title,
    mount(host) {
      showEmpty(
        host,
        `${title}: coming soon`,
        ...what,
        "This view is not built yet in this version of canning-tb. The Operators view already shows where the time of this window goes.",
      );
      host.el.querySelector("#view-empty")?.setAttribute("data-placeholder", id);
    },
  };
}
