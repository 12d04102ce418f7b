// The pager under a table whose rows the server pages (GET /operators, /kernels: total, offset,
// limit): "Rows a–b of N" with previous / next buttons; hidden while everything fits one page.
import { h } from "../dom";
import { int } from "../format";

export class Pager {
  readonly el: HTMLElement;
  private text = h("span", { class: "pager-text muted" });
  private prev = h("button", { type: "button", class: "button pager-prev", text: "‹ Previous" });
  private next = h("button", { type: "button", class: "button pager-next", text: "Next ›" });
  private at = { offset: 0, limit: 1, total: 0 };

  constructor(id: string, onPage: (offset: number) => void) {
    this.el = h("div", { id, class: "pager", hidden: true }, this.prev, this.text, this.next);
    this.prev.onclick = () => onPage(Math.max(0, this.at.offset - this.at.limit));
    this.next.onclick = () => onPage(this.at.offset + this.at.limit);
  }

  show(offset: number, limit: number, total: number, shown: number): void {
    this.at = { offset, limit, total };
    this.el.hidden = total <= limit && offset === 0;
    this.text.textContent = shown ? `Rows ${int(offset + 1)}–${int(offset + shown)} of ${int(total)}` : `No rows (of ${int(total)})`;
    this.prev.disabled = offset <= 0;
    this.next.disabled = offset + limit >= total;
  }
}
