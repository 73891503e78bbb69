/** Drives a real terminal: a detached tmux session running one command, read back with capture-pane. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export class TmuxPane {
  readonly name = `agentstate-test-${randomBytes(4).toString('hex')}`;

  constructor(command: string, cwd: string, columns = 120) {
    // `sleep` keeps the pane readable after the command exits.
    execFileSync('tmux', [
      'new-session',
      '-d',
      '-s',
      this.name,
      '-x',
      String(columns),
      '-y',
      '50',
      '-c',
      cwd,
      `${command}; sleep 120`,
    ]);
  }

  type(text: string): void {
    execFileSync('tmux', ['send-keys', '-t', this.name, '-l', text]);
    execFileSync('tmux', ['send-keys', '-t', this.name, 'Enter']);
  }

  screen(): string {
    return execFileSync('tmux', ['capture-pane', '-p', '-J', '-S', '-200', '-t', this.name]).toString();
  }

  /** Waits until the screen matches; returns the match. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.screen().match(pattern);
      if (match) return match;
      if (Date.now() > deadline) throw new Error(`screen never matched ${pattern}:\n${this.screen()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  kill(): void {
    try {
      execFileSync('tmux', ['kill-session', '-t', this.name]);
    } catch {
      // already gone
    }
  }
}
