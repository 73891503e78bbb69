/** Small Preact hooks: polling the API, a ticking clock, the hash route. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** The polling interval, from the page's configuration (the server's `pollMs`, 2000 ms by default). */
export const POLL_MS = readConfig().pollMs ?? 2000;

export function readConfig() {
  const element = document.getElementById('inspector-config');
  try {
    return JSON.parse(element?.textContent ?? '{}');
  } catch {
    return {};
  }
}

/**
 * Runs `load` now, whenever `key` changes, and every POLL_MS while the tab is visible.
 * @returns {{data: any, error: any, refresh: () => void, loaded: boolean}}
 */
export function usePoll(load, key, ms = POLL_MS) {
  const [state, setState] = useState({ data: null, error: null, loaded: false, key });
  const latest = useRef(load);
  latest.current = load;
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    latest.current().then(
      (data) => mine === generation.current && setState({ data, error: null, loaded: true, key }),
      (error) => mine === generation.current && setState((s) => ({ ...s, error, loaded: true, key })),
    );
  }, [key]);
  useEffect(() => {
    run();
    const timer = setInterval(() => {
      if (!document.hidden) run();
    }, ms);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, [run, ms]);
  const fresh = state.key === key;
  return {
    data: fresh ? state.data : null,
    error: fresh ? state.error : null,
    loaded: fresh && state.loaded,
    refresh: run,
  };
}

/** The current time, updated every `ms`. */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** The route in the URL's hash: `#/`, `#/sessions/<id>`, `#/tasks/<id>`, `#/attention`. */
export function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return { view: parts[0] || 'sessions', id: parts[1] ?? null };
}
