// Bundles src/index.ts (+ ECharts, + CSS as text) into one ES module that TensorBoard loads in
// the plugin iframe: ../plugin/static/index.js (canning_tb/plugin/static/, package data). No CDN, no network at run time.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const watch = process.argv.includes("--watch");
const options = {
  entryPoints: [path.join(here, "src/index.ts")],
  outfile: path.join(here, "../plugin/static/index.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2020"],
  minify: !process.argv.includes("--dev"),
  sourcemap: false,
  legalComments: "eof",
  loader: { ".css": "text" },
  logLevel: "info",
};
if (watch) {
  const { context } = await import("esbuild");
  const ctx = await context(options);
  await ctx.watch();
} else {
  await build(options);
}
