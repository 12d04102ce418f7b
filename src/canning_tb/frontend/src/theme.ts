// Light or dark, as TensorBoard shows itself. TensorBoard toggles the class "dark-mode" on its
// <body> (its setting: browser default, light or dark); the plugin runs in a same-origin iframe, so
// it reads that class and watches it. Outside TensorBoard (a bare page) the browser's
// prefers-color-scheme decides. The theme is set as data-theme on <html>: style.css and the charts
// (chart.ts) take their colours from it.

export type Theme = "light" | "dark";

const DARK_QUERY = "(prefers-color-scheme: dark)";

/** TensorBoard's <body>, when the plugin is in its iframe; null elsewhere. */
function hostBody(): HTMLElement | null {
  try {
    if (window.parent !== window) return window.parent.document.body;
  } catch {
    // a cross-origin parent: its theme cannot be read
  }
  return null;
}

function detect(): Theme {
  const body = hostBody();
  if (body) return body.classList.contains("dark-mode") ? "dark" : "light";
  return window.matchMedia?.(DARK_QUERY).matches ? "dark" : "light";
}

export function currentTheme(): Theme {
  return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

/** Sets the theme now and whenever TensorBoard (or the browser) changes it; onChange gets each change. */
export function followTheme(onChange: (theme: Theme) => void): void {
  const apply = () => {
    const theme = detect();
    if (document.documentElement.dataset.theme === theme) return;
    document.documentElement.dataset.theme = theme;
    onChange(theme);
  };
  document.documentElement.dataset.theme = detect();
  const body = hostBody();
  if (body) new MutationObserver(apply).observe(body, { attributes: true, attributeFilter: ["class"] });
  else window.matchMedia?.(DARK_QUERY).addEventListener("change", apply);
}
