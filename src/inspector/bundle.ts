/**
 * The inspector's client bundle (`app.js`, `app.css`). A built package serves the files that
 * `node src/inspector/build.mjs` wrote next to this module (`dist/src/inspector/public/`); from sources
 * (tests, `tsx`), they are bundled once in memory with esbuild (a dev dependency) on first use, in ~100 ms.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface InspectorAssets {
  readonly js: string;
  readonly css: string;
  /** Where they came from: `built` files or an in-memory `bundle` of the sources. */
  readonly origin: 'built' | 'bundle';
}

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));
const CLIENT_ENTRY = fileURLToPath(new URL('./client/main.jsx', import.meta.url));

/** The esbuild options `build.mjs` uses too (kept equal by hand: that script runs without TypeScript). */
export const BUNDLE_OPTIONS = {
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
} as const;

function readBuilt(): InspectorAssets | null {
  const js = `${PUBLIC_DIR}app.js`;
  const css = `${PUBLIC_DIR}app.css`;
  if (!existsSync(js) || !existsSync(css)) return null;
  return { js: readFileSync(js, 'utf8'), css: readFileSync(css, 'utf8'), origin: 'built' };
}

async function bundleSources(): Promise<InspectorAssets> {
  if (!existsSync(CLIENT_ENTRY)) {
    throw new Error(
      `inspector: no built assets in ${PUBLIC_DIR} and no sources at ${CLIENT_ENTRY}; run node src/inspector/build.mjs`,
    );
  }
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    ...BUNDLE_OPTIONS,
    entryPoints: [CLIENT_ENTRY],
    outdir: 'out',
    write: false,
    logLevel: 'silent',
  });
  const text = (ext: string) => result.outputFiles.find((file) => file.path.endsWith(ext))?.text ?? '';
  return { js: text('.js'), css: text('.css'), origin: 'bundle' };
}

let cached: Promise<InspectorAssets> | null = null;

/** The assets, loaded or bundled once per process. */
export function loadAssets(): Promise<InspectorAssets> {
  if (cached === null) {
    const built = readBuilt();
    cached = built !== null ? Promise.resolve(built) : bundleSources();
    cached.catch(() => {
      cached = null;
    });
  }
  return cached;
}
