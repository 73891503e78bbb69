/**
 * The conformance suite against a real 3-node Redis Cluster that this file starts on free ports (no
 * persistence, in a temp dir) and stops afterwards: every script's keys share one slot, so every operation
 * works when users live on different nodes.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { openRedisStore } from '../../src/store/redis/index.js';
import { describeStoreConformance } from '../../src/testing/index.js';
import { randomPrefix } from './redis-env.js';

const run = promisify(execFile);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function startNode(dir: string, port: number): Promise<ChildProcess> {
  const bus = await freePort();
  const args = ['--port', port, '--cluster-port', bus, '--cluster-enabled', 'yes', '--bind', '127.0.0.1'];
  const files = ['--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir];
  const node = spawn('redis-server', [...args.map(String), ...files, '--save', '', '--appendonly', 'no']);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
    node.on('error', reject);
    node.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return node;
}

/** Three masters, all 16384 slots assigned; resolves once every node says cluster_state:ok. */
async function startCluster(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-cluster-'));
  const ports = [await freePort(), await freePort(), await freePort()];
  const nodes = await Promise.all(ports.map((port) => startNode(dir, port)));
  const stop = async () => {
    // The folder goes once every node has exited: a node still alive may write its config file into it.
    await Promise.all(
      nodes.map(
        (node) =>
          new Promise<void>((resolve) => {
            if (node.exitCode !== null || node.signalCode !== null) return resolve();
            node.once('exit', () => resolve());
            node.kill('SIGKILL');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) {
      const client = new Redis(port, '127.0.0.1');
      try {
        for (let i = 0; !(await client.cluster('INFO')).includes('cluster_state:ok'); i++) {
          if (i > 100) throw new Error(`cluster node ${port} is not ready`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        client.disconnect();
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `redis://127.0.0.1:${ports[0]}?cluster=true`, stop };
}

const cluster = await startCluster();
const prefix = randomPrefix();

describeStoreConformance('redis cluster', {
  open: (clock) => openRedisStore(cluster.url, { clock, prefix }),
  url: `${cluster.url}&prefix=${prefix}`,
  cleanup: async () => cluster.stop(),
});
