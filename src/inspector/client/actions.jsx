/**
 * A table of actions: tool, status, attempts, idempotency key, result or error, and why it is UNKNOWN.
 * With `onResolved`, an UNKNOWN action has the form to resolve it and a call waiting for approval has
 * Approve and Deny.
 */
import { ApprovalForm, waitsForApproval } from './approval.jsx';
import { clock, short } from './format.js';
import { ResolveForm } from './resolve.jsx';
import { Badge, Empty, SessionLink, TaskLink } from './ui.jsx';

export function ActionsTable({ actions, onResolved, showTask = false }) {
  if (actions.length === 0) return <Empty>No actions yet.</Empty>;
  return (
    <table class="list actions" data-testid="actions">
      <thead>
        <tr>
          <th scope="col">At</th>
          <th scope="col">Tool and params</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col">Idempotency key</th>
          <th scope="col">Outcome</th>
        </tr>
      </thead>
      <tbody>
        {actions.map((a) => (
          <tr key={a.id} data-action={a.id} data-status={a.status}>
            <td class="mono">{clock(a.created_at)}</td>
            <td>
              <strong>{a.tool ?? a.type}</strong>
              <div class="params mono" title={JSON.stringify(a.params)}>
                {short(a.params, 60)}
              </div>
              {showTask ? (
                <div class="muted">
                  task <TaskLink id={a.task_id} />
                  {a.session_id ? (
                    <>
                      {' '}
                      session <SessionLink id={a.session_id} />
                    </>
                  ) : null}
                </div>
              ) : null}
            </td>
            <td>
              <Badge value={a.status} />
            </td>
            <td class="num">{a.attempts}</td>
            <td class="mono key" title={a.idempotency_key}>
              {short(a.idempotency_key, 28)}
            </td>
            <td class="outcome">
              {a.error ? <span class="bad">{a.error.message}</span> : null}
              {a.result !== null ? <code>{short(a.result, 90)}</code> : null}
              {a.note ? <div class="note">{a.note}</div> : null}
              {a.status === 'UNKNOWN' && onResolved ? (
                <details class="resolve-box" open>
                  <summary>Resolve this action</summary>
                  <ResolveForm action={a} onDone={onResolved} />
                </details>
              ) : null}
              {waitsForApproval(a) && onResolved ? <ApprovalForm action={a} onDone={onResolved} /> : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
