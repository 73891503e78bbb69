/** How long a session's row and messages are kept: to its expiry, or later while forks read them. */
import type { Session } from '../../core/model.js';

export function keptUntilMs(session: Session): number {
  const expires = Date.parse(session.expires_at);
  if (session.retained_until === undefined) return expires;
  return Math.max(expires, Date.parse(session.retained_until));
}
