import { describe, expect, it } from 'vitest';
import { deployPipelineTask } from '../../src/agents/deploy-pipeline.js';
import { flightBookingTask } from '../../src/agents/flight-booking.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { TASK_STATES } from '../../src/core/model.js';
import { advance, assertTransition, nextStep } from '../../src/runtime/state-machine.js';
import { statusLine } from '../../src/runtime/status.js';
import { mergeSlots, missingSlots } from '../../src/runtime/task-type.js';

const today = { today: '2026-12-02' };
const full = {
  origin: 'BJS',
  destination: 'SHA',
  date: '2026-12-09',
  cabin_class: 'business',
  passenger_name: 'Zhang San',
};
const none = { answer: null, cancel: false } as const;

describe('task state machine', () => {
  it('refuses an illegal transition naming both states', () => {
    try {
      assertTransition('DONE', 'EXECUTING');
      expect.unreachable();
    } catch (error) {
      expect(isAgentStateError(error, 'illegal_transition')).toBe(true);
      expect((error as Error).message).toContain('DONE');
      expect((error as Error).message).toContain('EXECUTING');
    }
    expect(() => assertTransition('COLLECTING', 'EXECUTING')).toThrow(/COLLECTING to EXECUTING/);
    expect(() => assertTransition('CONFIRMING', 'EXECUTING')).not.toThrow();
  });

  it('allows CANCELLED from every state that is not final, and nothing out of DONE or CANCELLED', () => {
    for (const state of TASK_STATES) {
      const final = state === 'DONE' || state === 'CANCELLED';
      const allowed = (() => {
        try {
          assertTransition(state, 'CANCELLED');
          return true;
        } catch {
          return false;
        }
      })();
      expect(allowed).toBe(!final);
    }
  });

  it('decides the next step from state and slots', () => {
    expect(nextStep(flightBookingTask, 'COLLECTING', {})).toEqual({ kind: 'ask', slot: 'origin' });
    expect(
      nextStep(flightBookingTask, 'COLLECTING', { origin: 'BJS', destination: 'SHA', date: '2026-12-09' }),
    ).toEqual({
      kind: 'ask',
      slot: 'cabin_class',
    });
    expect(nextStep(flightBookingTask, 'COLLECTING', full)).toEqual({ kind: 'confirm' });
    expect(nextStep(flightBookingTask, 'CONFIRMING', full)).toEqual({ kind: 'confirm' });
    expect(nextStep(flightBookingTask, 'EXECUTING', full)).toEqual({ kind: 'execute' });
    expect(nextStep(flightBookingTask, 'DONE', full)).toEqual({ kind: 'report' });
  });

  it('advances INIT -> COLLECTING -> CONFIRMING -> EXECUTING on input', () => {
    const a = advance(
      flightBookingTask,
      { state: 'INIT', slots: {}, found: { origin: 'BJS' }, ...none },
      today,
    );
    expect(a.transitions.map((t) => t.to)).toEqual(['COLLECTING']);
    expect(a.reaction).toEqual({ kind: 'ask', slot: 'destination' });
    const b = advance(
      flightBookingTask,
      {
        state: 'COLLECTING',
        slots: { ...full, passenger_name: undefined as never },
        found: { passenger_name: 'Li Si' },
        ...none,
      },
      today,
    );
    expect(b.transitions.map((t) => t.to)).toEqual(['CONFIRMING']);
    expect(b.reaction.kind).toBe('confirm');
    const c = advance(
      flightBookingTask,
      { state: 'CONFIRMING', slots: full, found: {}, answer: 'yes', cancel: false },
      today,
    );
    expect(c.transitions.map((t) => t.to)).toEqual(['EXECUTING']);
    expect(c.reaction.kind).toBe('execute');
  });

  it('goes back to COLLECTING when a slot changes while confirming, and says no without changes', () => {
    const changed = advance(
      flightBookingTask,
      { state: 'CONFIRMING', slots: full, found: { cabin_class: 'economy' }, answer: 'no', cancel: false },
      today,
    );
    expect(changed.transitions.map((t) => t.to)).toEqual(['COLLECTING', 'CONFIRMING']);
    expect(changed.slots.cabin_class).toBe('economy');
    const declined = advance(
      flightBookingTask,
      { state: 'CONFIRMING', slots: full, found: {}, answer: 'no', cancel: false },
      today,
    );
    expect(declined.transitions).toEqual([]);
    expect(declined.reaction.kind).toBe('declined');
  });

  it('cancels open tasks, a FAILED one included, and leaves final tasks alone', () => {
    const failed = advance(
      flightBookingTask,
      { state: 'FAILED', slots: full, found: {}, answer: null, cancel: true },
      today,
    );
    expect(failed.state).toBe('CANCELLED');
    const cancelled = advance(
      flightBookingTask,
      { state: 'COLLECTING', slots: {}, found: {}, answer: null, cancel: true },
      today,
    );
    expect(cancelled.state).toBe('CANCELLED');
    const done = advance(
      flightBookingTask,
      { state: 'DONE', slots: full, found: { cabin_class: 'first' }, ...none },
      today,
    );
    expect(done.transitions).toEqual([]);
    expect(done.slots.cabin_class).toBe('business');
  });

  it('skips the question when a task type needs no confirmation', () => {
    const a = advance(
      deployPipelineTask,
      { state: 'INIT', slots: {}, found: { service: 'web' }, ...none },
      today,
    );
    expect(a.transitions.map((t) => t.to)).toEqual(['COLLECTING', 'CONFIRMING', 'EXECUTING']);
  });

  it('retries a FAILED task when the user changes something', () => {
    const retry = advance(
      flightBookingTask,
      { state: 'FAILED', slots: full, found: { cabin_class: 'economy' }, ...none },
      today,
    );
    expect(retry.transitions.map((t) => t.to)).toEqual(['COLLECTING', 'CONFIRMING']);
  });
});

describe('slots', () => {
  it('validates with clear messages and keeps what was valid', () => {
    const merged = mergeSlots(
      flightBookingTask,
      {},
      { origin: 'BJS', date: '2026-11-30', cabin_class: 'sofa' },
      today,
    );
    expect(merged.slots).toEqual({ origin: 'BJS' });
    expect(merged.errors.map((e) => e.message)).toEqual([
      'date: 2026-11-30 is in the past (today is 2026-12-02)',
      'cabin class: must be economy, premium economy, business or first',
    ]);
  });

  it('refuses the same city as origin and destination', () => {
    const merged = mergeSlots(flightBookingTask, { origin: 'BJS' }, { destination: 'BJS' }, today);
    expect(merged.slots).toEqual({ origin: 'BJS' });
    expect(merged.errors[0]?.message).toBe('origin and destination are both BJS');
  });

  it('lists missing required slots in asking order; optional ones are never missing', () => {
    expect(missingSlots(flightBookingTask, { date: '2026-12-09' })).toEqual([
      'origin',
      'destination',
      'cabin_class',
      'passenger_name',
    ]);
    expect(missingSlots(deployPipelineTask, { service: 'web' })).toEqual([]);
  });

  it('keeps a human-readable status line', () => {
    expect(
      statusLine(flightBookingTask, 'COLLECTING', { origin: 'BJS', destination: 'SHA', date: '2026-12-09' }),
    ).toBe('Booking BJS -> SHA on 2026-12-09: waiting for cabin class');
    expect(
      statusLine(
        deployPipelineTask,
        'EXECUTING',
        { service: 'web' },
        { kind: 'running', step: 3, tool: 'deploy.run_tests' },
      ),
    ).toBe('Deploying web latest to staging: running step 3 of 5 (deploy.run_tests)');
  });
});
