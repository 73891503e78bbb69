/** The crash harness with a store its children cannot use: refused, or reported in the child's own words. */
import { describe, expect, it } from 'vitest';
import { childErrorLine, runCrashTest } from '../../src/harness/crash/run.js';

const UNCAUGHT = `file:///work/main/src/harness/crash/child.ts:36
const store = await openStore(values.store);
              ^

AgentStateError: unknown store URL "bogus:x": use memory:, sqlite:PATH
    at openStore (/work/main/src/store/open.ts:60:13)
    at async file:///work/main/src/harness/crash/child.ts:36:15 {
  code: 'invalid_request',
  status: 400
}

Node.js v20.20.2
`;

describe('crash harness store checks', { timeout: 120_000 }, () => {
  it("childErrorLine: an uncaught error's own line, not the tail of its stack", () => {
    expect(childErrorLine(UNCAUGHT)).toBe('unknown store URL "bogus:x": use memory:, sqlite:PATH');
    expect(childErrorLine('TypeError [ERR_X]: bad thing\n    at f (a.js:1:1)\n\nNode.js v20.1.0\n')).toBe(
      'bad thing',
    );
    expect(childErrorLine('usage: child --store URL\n')).toBe('usage: child --store URL');
    expect(childErrorLine('')).toBe('no error message');
  });

  it('refuses in-process stores before running anything', async () => {
    for (const storeUrl of ['memory:', 'sqlite::memory:', 'sqlite:file:x.db?mode=memory']) {
      await expect(runCrashTest({ storeUrl, kills: 1 })).rejects.toThrow(
        /needs a store that a new process can open again/,
      );
    }
  });

  it("a bad store URL ends the reference run with the child's one-line error", async () => {
    const error = await runCrashTest({ storeUrl: 'bogus:x', kills: 1 }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /^the reference run did not complete: exit code 1: unknown store URL "bogus:x": use memory:/,
    );
    expect(error?.message).not.toMatch(/Node\.js v|\|/);
  });
});
