/**
 * `import 'agentstate'` as a user does it: the built package, found by its name from another directory, in a
 * plain node process. A module hook records every module the process resolves; the main export must load no
 * database driver the user did not ask for, and none of the harnesses, the demo services or the CLI. Opening
 * a `sqlite:` URL must then load better-sqlite3, which shows the hook sees a driver when one is loaded.
 * The conformance suite, `agentstate/testing`, is tested as a user imports it in testing-export.test.ts.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILT_INDEX = join(ROOT, 'dist/src/index.js');
const DRIVERS = ['pg', 'ioredis', 'better-sqlite3'] as const;
const run = promisify(execFile);

/** Runs in the loader thread: appends `specifier<TAB>url` of each resolution to the log file it was given. */
const HOOKS = `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const out = await next(specifier, context);
  appendFileSync(log, specifier + '\\t' + out.url + '\\n');
  return out;
}
`;

const REGISTER = `import { register } from 'node:module';
register('./hooks.mjs', import.meta.url, { data: { log: process.env.LEAN_LOG } });
`;

/**
 * The user's program: imports the package by name, opens the store it is given (a URL with `openStore`, or a
 * path with `openSqliteStore`), closes it and lists the package's exports.
 */
const USER = `import * as agentstate from 'agentstate';
const [how, url] = process.argv.slice(2);
const store =
  how === 'openSqliteStore' ? await agentstate.openSqliteStore(url) : await agentstate.openStore(url);
await store.close();
console.log(JSON.stringify(Object.keys(agentstate)));
`;

let dir = '';

interface Loaded {
  readonly specifiers: readonly string[];
  readonly urls: readonly string[];
  readonly exports: readonly string[];
}

async function importAndOpen(
  how: 'openStore' | 'openSqliteStore',
  url: string,
  name: string,
): Promise<Loaded> {
  const log = join(dir, `${name}.log`);
  writeFileSync(log, '');
  const env: NodeJS.ProcessEnv = { ...process.env, LEAN_LOG: log };
  for (const key of Object.keys(env))
    if (key.startsWith('AGENTSTATE_') || key === 'NODE_OPTIONS') delete env[key];
  const { stdout } = await run(process.execPath, ['--import', './register.mjs', 'user.mjs', how, url], {
    cwd: dir,
    env,
    timeout: 20_000,
  });
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return {
    specifiers: lines.map((line) => line.split('\t')[0] ?? ''),
    urls: lines.map((line) => line.split('\t')[1] ?? ''),
    exports: JSON.parse(stdout.trim().split('\n').at(-1) ?? '[]') as string[],
  };
}

function driversIn(loaded: Loaded): string[] {
  return DRIVERS.filter(
    (driver) =>
      loaded.specifiers.includes(driver) ||
      loaded.urls.some((url) => url.includes(`/node_modules/${driver}/`)),
  );
}

beforeAll(() => {
  if (!existsSync(BUILT_INDEX))
    throw new Error(`${BUILT_INDEX} is missing: run npm run build (npm test does)`);
  dir = mkdtempSync(join(tmpdir(), 'agentstate-lean-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules/agentstate'), 'dir');
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  writeFileSync(join(dir, 'register.mjs'), REGISTER);
  writeFileSync(join(dir, 'user.mjs'), USER);
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe("import 'agentstate'", () => {
  it('loads no database driver, harness, demo service, CLI or testing module, and opens memory:', async () => {
    const loaded = await importAndOpen('openStore', 'memory:', 'memory');
    expect(loaded.specifiers).toContain('agentstate');
    expect(loaded.urls).toContain(new URL(`file://${BUILT_INDEX}`).href);
    expect(driversIn(loaded)).toEqual([]);
    expect(loaded.urls.filter((url) => /\/dist\/src\/(harness|demo|cli|testing)\//.test(url))).toEqual([]);
    // The conformance suite is `agentstate/testing`: the main export loads neither it nor vitest.
    expect(loaded.urls.filter((url) => url.includes('/node_modules/vitest/'))).toEqual([]);
    expect(loaded.exports).toEqual(
      expect.arrayContaining(['openStore', 'createMemoryStore', 'createServer', 'createAgentRuntime']),
    );
    // The adapters' own openers stay, and load their driver only when called (below).
    expect(loaded.exports).toEqual(
      expect.arrayContaining(['openSqliteStore', 'openPostgresStore', 'DEFAULT_POSTGRES_SCHEMA']),
    );
    for (const gone of ['runCrashTest', 'runLoadTest', 'registerLoadCommands', 'findLeaks', 'leaksIn']) {
      expect(loaded.exports).not.toContain(gone);
    }
    for (const gone of ['createDemoTools', 'startAirlineService', 'createAirlineClient', 'tallyEffects']) {
      expect(loaded.exports).not.toContain(gone);
    }
  });

  it('loads better-sqlite3 once a sqlite: URL is opened, and only it', async () => {
    const loaded = await importAndOpen('openStore', `sqlite:${join(dir, 'lean.db')}`, 'sqlite');
    expect(driversIn(loaded)).toEqual(['better-sqlite3']);
  });

  it('loads better-sqlite3 when openSqliteStore is called, and only it', async () => {
    const loaded = await importAndOpen('openSqliteStore', join(dir, 'direct.db'), 'direct');
    expect(driversIn(loaded)).toEqual(['better-sqlite3']);
  });
});
