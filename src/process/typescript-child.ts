/**
 * The `node` arguments that let a child process run a TypeScript entry, for code that itself runs from source
 * (tests, `npm run` scripts through tsx). The loader is resolved from this package, not from the child's
 * working folder: `--import tsx` alone fails in a folder outside the project.
 */
export function typeScriptLoaderArgs(): string[] {
  return ['--import', import.meta.resolve('tsx')];
}
