/** Formatting helpers: times, countdowns, JSON. */

export function clock(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return date.toISOString().slice(11, 19);
}

export function dateTime(iso) {
  if (!iso) return '';
  return new Date(iso).toISOString().replace('T', ' ').slice(0, 19);
}

function span(seconds) {
  const s = Math.abs(Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function ago(iso, now) {
  if (!iso) return '';
  return `${span((now - Date.parse(iso)) / 1000)} ago`;
}

/** Time left until `iso`: "12m 03s", or "expired". */
export function countdown(iso, now) {
  const left = (Date.parse(iso) - now) / 1000;
  return left <= 0 ? 'expired' : span(left);
}

export function json(value) {
  return JSON.stringify(value, null, 2);
}

export function short(value, max = 80) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function shortId(id) {
  return id ? `${id.slice(0, 9)}…${id.slice(-4)}` : '';
}
