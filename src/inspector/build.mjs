#!/usr/bin/env node
/**
 * Builds the inspector's client for the package: `node src/inspector/build.mjs` writes
 * `dist/src/inspector/public/app.js` and `app.css` (next to the compiled `index.js`, which serves them).
 * Run it after `tsc -p tsconfig.build.json`. Options equal `BUNDLE_OPTIONS` in `bundle.ts`.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const outdir = join(root, 'dist', 'src', 'inspector', 'public');
mkdirSync(outdir, { recursive: true });
const started = performance.now();
const result = await build({
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
  entryPoints: [join(here, 'client', 'main.jsx')],
  entryNames: 'app',
  outdir,
  metafile: true,
  logLevel: 'warning',
});
const sizes = Object.entries(result.metafile.outputs)
  .map(([file, { bytes }]) => `${file.split('/').pop()} ${(bytes / 1024).toFixed(1)} KiB`)
  .join(', ');
process.stdout.write(
  `inspector: built ${sizes} into ${outdir} in ${Math.round(performance.now() - started)} ms\n`,
);
