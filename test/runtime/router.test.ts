import { describe, expect, it } from 'vitest';
import type { Extraction, OpenTaskInfo } from '../../src/models/types.js';
import { routeByRules } from '../../src/runtime/router.js';

function task(
  id: string,
  state: OpenTaskInfo['state'],
  slots: OpenTaskInfo['slots'],
  missing: string[],
  updated: string,
  type = 'flight_booking',
): OpenTaskInfo {
  return {
    id,
    type,
    state,
    slots,
    missing,
    status_line: `${id} line`,
    updated_at: `2026-12-02T00:00:0${updated}.000Z`,
  };
}

function said(partial: Partial<Extraction>): Extraction {
  return { intent: null, slots: {}, answer: null, cancel: false, another: false, ...partial };
}

const a = task(
  'task_a',
  'COLLECTING',
  { destination: 'SHA' },
  ['origin', 'date', 'cabin_class', 'passenger_name'],
  '1',
);
const b = task(
  'task_b',
  'CONFIRMING',
  { origin: 'BJS', destination: 'CAN', date: '2026-12-09', cabin_class: 'first', passenger_name: 'Li' },
  [],
  '2',
);
const d = task('task_d', 'COLLECTING', {}, ['service'], '3', 'deploy_pipeline');

describe('router rules', () => {
  it('sends cancel to the most recent task, or the most recent of the type it names', () => {
    expect(routeByRules(said({ cancel: true }), [a, b, d])).toMatchObject({
      kind: 'task',
      task_id: 'task_d',
    });
    expect(routeByRules(said({ cancel: true, intent: 'flight_booking' }), [a, b, d])).toMatchObject({
      kind: 'task',
      task_id: 'task_b',
    });
    expect(routeByRules(said({ cancel: true }), [])).toMatchObject({ kind: 'none' });
  });

  it('sends yes/no to the task that is confirming', () => {
    expect(routeByRules(said({ answer: 'yes' }), [a, b, d])).toMatchObject({
      kind: 'task',
      task_id: 'task_b',
    });
    expect(routeByRules(said({ answer: 'no' }), [a, b])).toMatchObject({ kind: 'task', task_id: 'task_b' });
  });

  it('sends a slot value only one task is missing to that task', () => {
    const input = said({ slots: { flight_booking: { cabin_class: 'business' }, deploy_pipeline: {} } });
    expect(routeByRules(input, [a, b, d])).toMatchObject({ kind: 'task', task_id: 'task_a' });
  });

  it('asks the model when several tasks miss the slot', () => {
    const a2 = task('task_a2', 'COLLECTING', {}, ['origin', 'cabin_class'], '4');
    const input = said({ slots: { flight_booking: { cabin_class: 'business' } } });
    expect(routeByRules(input, [a, a2])).toEqual({ kind: 'model' });
  });

  it('opens a new task for a new intent that conflicts or asks for another', () => {
    const conflicting = said({ intent: 'flight_booking', slots: { flight_booking: { destination: 'BJS' } } });
    expect(routeByRules(conflicting, [a])).toMatchObject({ kind: 'new', type: 'flight_booking' });
    const another = said({ intent: 'flight_booking', another: true, slots: { flight_booking: {} } });
    expect(routeByRules(another, [a])).toMatchObject({ kind: 'new' });
    const continuing = said({
      intent: 'flight_booking',
      slots: { flight_booking: { destination: 'SHA', date: '2026-12-09' } },
    });
    expect(routeByRules(continuing, [a])).toMatchObject({ kind: 'task', task_id: 'task_a' });
    expect(routeByRules(said({ intent: 'deploy_pipeline' }), [a, b])).toMatchObject({
      kind: 'new',
      type: 'deploy_pipeline',
    });
  });

  it('gives the only open task the input, and leaves nothing to route when none is open', () => {
    expect(routeByRules(said({}), [a])).toMatchObject({ kind: 'task', task_id: 'task_a' });
    expect(routeByRules(said({}), [])).toMatchObject({ kind: 'none' });
    const implied = said({ slots: { flight_booking: { destination: 'CTU' }, deploy_pipeline: {} } });
    expect(routeByRules(implied, [])).toMatchObject({ kind: 'new', type: 'flight_booking' });
    expect(routeByRules(said({}), [a, d])).toEqual({ kind: 'model' });
  });
});
