/**
 * node --import tsx test/store/child/open.ts <url> <tenant> <user>
 * Waits for "go", then opens the store (so several processes migrate a new database at once) and creates
 * one session. Prints {id}.
 */
import { openStore } from '../../../src/store/open.js';
import { readyThenWait } from './run.js';

const [url, tenant_id, user_id] = process.argv.slice(2) as [string, string, string];
await readyThenWait();
const store = await openStore(url);
const session = await store.createSession({ tenant_id, user_id }, {});
await store.close();
process.stdout.write(`${JSON.stringify({ id: session.id })}\n`);
