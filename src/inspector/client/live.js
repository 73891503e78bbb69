/**
 * The open session's live events: `GET /v1/sessions/{id}/events` read with fetch streaming through
 * agentstate/client's `followSession` (EventSource cannot send the Authorization header the page uses),
 * resumed after the last event when the connection drops.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { sessionCursor } from '../../client/index.js';
import { client } from './api.js';

/** How long a stream that failed waits before it is tried again (the view polls meanwhile). */
const RETRY_MS = 5000;

function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Tells `onEvent` of each event of the session's runs as it happens. Answers the stream's state:
 * `connecting`, `live` (the server answered; events come as they happen) or `off` (it failed: the caller
 * polls, and the stream is tried again after RETRY_MS, from where it stopped).
 * @param {string} id
 * @param {(event: {id: string, run_id: string, type: string, data: Record<string, unknown>}) => void} onEvent
 */
export function useSessionEvents(id, onEvent) {
  const [state, setState] = useState('connecting');
  const latest = useRef(onEvent);
  latest.current = onEvent;
  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    let after = null;
    setState('connecting');
    (async () => {
      while (!signal.aborted) {
        try {
          for await (const event of client.followSession(id, {
            after,
            signal,
            reconnects: 3,
            onOpen: () => setState('live'),
          })) {
            after = sessionCursor(event);
            latest.current(event);
          }
        } catch {
          if (signal.aborted) return;
          setState('off');
          await pause(RETRY_MS, signal);
          if (!signal.aborted) setState('connecting');
        }
      }
    })();
    return () => controller.abort();
  }, [id]);
  return state;
}
