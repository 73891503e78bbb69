import { describe, expect, it } from 'vitest';
import {
  describeTask,
  describeTaskGeneric,
  describeTasks,
  missingSlots,
  nextStep,
  taskTypesFrom,
} from '../../src/context/describe.js';
import type { Task } from '../../src/core/model.js';

function task(partial: Partial<Task>): Task {
  return {
    id: 'task_a',
    tenant_id: 't',
    user_id: 'u',
    session_id: 'sess_a',
    type: 'flight_booking',
    state: 'COLLECTING',
    slots: {},
    status_line: '',
    data: {},
    version: 1,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    closed_at: null,
    ...partial,
  };
}

describe('task descriptions', () => {
  it('lists state, filled and missing slots, the next step and the status line', () => {
    const t = task({
      slots: { origin: 'PEK', destination: null, date: '2026-12-01' },
      status_line: 'Collecting: destination missing',
    });
    const text = describeTaskGeneric(t, { required_slots: ['origin', 'destination', 'date', 'cabin_class'] });
    expect(text).toContain('Task flight_booking (task_a): state COLLECTING');
    expect(text).toContain('Status: Collecting: destination missing');
    expect(text).toContain('Slots filled: origin=PEK, date=2026-12-01');
    expect(text).toContain('Slots missing: destination, cabin_class');
    expect(text).toContain('Next step: ask the user for destination');
  });

  it('takes required slots from task.data when the type gives none, and next_step from data when set', () => {
    const t = task({ slots: { a: 1 }, data: { required_slots: ['a', 'b'], next_step: 'call the airline' } });
    expect(missingSlots(t)).toEqual(['b']);
    expect(nextStep(t, ['b'])).toBe('call the airline');
  });

  it('derives the next step from the state', () => {
    expect(nextStep(task({ state: 'CONFIRMING' }), [])).toMatch(/confirm/);
    expect(nextStep(task({ state: 'COLLECTING' }), [])).toMatch(/confirm/);
    expect(nextStep(task({ state: 'FAILED' }), [])).toMatch(/retry/);
    expect(nextStep(task({ state: 'EXECUTING' }), [])).toMatch(/wait/);
  });

  it('uses the type’s describe function when it has one, and says when there is no open task', () => {
    const t = task({ type: 'deploy_pipeline' });
    expect(describeTask(t, { deploy_pipeline: { describe: (x) => `deploying ${x.id}` } })).toBe(
      'deploying task_a',
    );
    expect(describeTasks([])).toBe('# Open tasks\nNone.');
  });

  it('lists tasks oldest first and clips long slot values', () => {
    const newer = task({
      id: 'task_b',
      created_at: '2026-01-02T00:00:00.000Z',
      slots: { notes: 'n'.repeat(500) },
    });
    const older = task({ id: 'task_c', created_at: '2026-01-01T00:00:00.000Z' });
    const text = describeTasks([newer, older]);
    expect(text.indexOf('task_c')).toBeLessThan(text.indexOf('task_b'));
    expect(text).toContain('…');
    expect(text.length).toBeLessThan(600);
  });
});

describe('taskTypesFrom', () => {
  it('takes the required slots of task type definitions', () => {
    const types = taskTypesFrom([
      {
        name: 'flight_booking',
        slots: { origin: { required: true }, notes: { required: false }, date: { required: true } },
      },
    ]);
    expect(types).toEqual({ flight_booking: { required_slots: ['origin', 'date'] } });
  });
});
