/**
 * `npm run client:generate`: writes src/client/openapi.ts, the types of agentstate/client, from the OpenAPI
 * document the server builds (a server started in this process on a memory store, never listening), with
 * openapi-typescript, formatted by Biome as the repository's other files are.
 *
 * `node --import tsx src/client/generate.ts --check` writes nothing and fails when the file is not what the
 * server's document makes now. test/client/generate.test.ts does the same from a started server's
 * `/openapi.json`. Only the generator and its tests import this module; the client never does.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(here, '..', '..');
export const TYPES_FILE = join(ROOT, 'src', 'client', 'openapi.ts');

/** The server's JSON value schemas, recursive, which TypeScript cannot follow through `components[...]`. */
const JSON_VALUE_SCHEMAS = new Set(['#/components/schemas/JsonValue', '#/components/schemas/JsonValueInput']);
const JSON_VALUE_TYPE =
  'export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };';

/** The OpenAPI document of a server built in this process (memory store, default limits, no agents). */
export async function buildOpenApiDocument(): Promise<OpenAPI3> {
  const [{ createServer }, { openStore }, { withEventStreams }] = await Promise.all([
    import('../http/server.js'),
    import('../store/open.js'),
    import('../http/openapi-streams.js'),
  ]);
  const store = await openStore('memory:');
  const app = await createServer({ store, config: {}, logger: false, inspector: false });
  try {
    await app.ready();
    return withEventStreams(app.swagger()) as unknown as OpenAPI3;
  } finally {
    await app.close();
    await store.close();
  }
}

/** Formats TypeScript text as `biome format` does for a file at `path`. */
function biomeFormat(text: string, path: string): string {
  const biome = join(ROOT, 'node_modules', '.bin', 'biome');
  return execFileSync(biome, ['format', `--stdin-file-path=${path}`], {
    cwd: ROOT,
    input: text,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** The text of src/client/openapi.ts for `document`. */
export async function generateTypes(document: OpenAPI3 | string): Promise<string> {
  const source = typeof document === 'string' ? (JSON.parse(document) as OpenAPI3) : document;
  const jsonValue = ts.factory.createTypeReferenceNode('JsonValue');
  const ast = await openapiTS(source, {
    silent: true,
    inject: JSON_VALUE_TYPE,
    transform: (_schema, options) => (JSON_VALUE_SCHEMAS.has(options.path ?? '') ? jsonValue : undefined),
  });
  return biomeFormat(COMMENT_HEADER + astToString(ast), TYPES_FILE);
}

async function main(argv: readonly string[]): Promise<void> {
  const text = await generateTypes(await buildOpenApiDocument());
  if (argv.includes('--check')) {
    if (readFileSync(TYPES_FILE, 'utf8') !== text) {
      process.stderr.write('src/client/openapi.ts is out of date: run npm run client:generate\n');
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(TYPES_FILE, text);
  process.stdout.write(`wrote ${TYPES_FILE}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
