// The figures' one-line definitions: analysis/glossary.json, the table docs/glossary.md is written
// from, so a tooltip and the glossary cannot drift apart.
import table from "../../analysis/glossary.json";

export type GlossaryKey = keyof typeof table;

/** The definition of a figure, for its tooltip. */
export function tip(key: GlossaryKey): string {
  return table[key].tip;
}

/** The figure's name as the glossary gives it. */
export function label(key: GlossaryKey): string {
  return table[key].label;
}

/** The tooltip of a value the file does not record. */
export const UNKNOWN_TIP = table.unknown.tip;
