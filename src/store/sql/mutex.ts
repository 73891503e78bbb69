/** Runs async sections one after another: one SQLite connection must never interleave two transactions. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T> | T): Promise<T> {
    const result = this.tail.then(section, section);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
