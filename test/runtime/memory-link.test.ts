/** The proposal rules of a turn, as plain functions: what "yes", "no" and another value do. */
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { answerProposal, proposeFor, remembers } from '../../src/runtime/memory-link.js';

const proposals = [
  {
    slot: 'cabin_class',
    value: 'business',
    key: 'flight_booking.cabin_class',
    question: 'business class again?',
  },
  {
    slot: 'passenger_name',
    value: 'Ada Lovelace',
    key: 'flight_booking.passenger_name',
    question: 'Book for Ada Lovelace again?',
  },
];
const pending: JsonObject = { proposals, proposing: 'passenger_name' };

describe('proposals', () => {
  it('asks the remembered value for the slot to ask, in English or Chinese', () => {
    const en = proposeFor({ proposals }, 'cabin_class', 'en');
    expect(en.question).toBe('Business class again?');
    expect(en.data.proposing).toBe('cabin_class');
    expect(proposeFor({ proposals }, 'cabin_class', 'zh').question).toBe(
      '还和上次一样用 business 吗？（是/否）',
    );
    const none = proposeFor({ proposals, proposing: 'cabin_class' }, 'date', 'en');
    expect(none.question).toBeNull();
    expect(none.data.proposing).toBeUndefined();
    expect(proposeFor({ proposals }, null, 'en').question).toBeNull();
  });

  it('"yes" fills the slot with the remembered value, never with the word yes', () => {
    const out = answerProposal(pending, { passenger_name: 'Yes' }, 'yes');
    expect(out.found).toEqual({ passenger_name: 'Ada Lovelace' });
    expect(out.data.proposing).toBeUndefined();
    expect((out.data.proposals as JsonObject[]).map((p) => p.slot)).toEqual(['cabin_class']);
  });

  it('"no" drops the proposal; another value replaces it; no answer keeps it pending', () => {
    const no = answerProposal(pending, { passenger_name: 'No' }, 'no');
    expect(no.found).toEqual({});
    expect((no.data.proposals as JsonObject[]).map((p) => p.slot)).toEqual(['cabin_class']);
    const other = answerProposal(pending, { passenger_name: 'Grace Hopper' }, null);
    expect(other.found).toEqual({ passenger_name: 'Grace Hopper' });
    expect(other.data.proposing).toBeUndefined();
    const silent = answerProposal(pending, { date: '2026-12-09' }, null);
    expect(silent.data).toEqual(pending);
    expect(answerProposal({}, { cabin_class: 'first' }, 'yes').found).toEqual({ cabin_class: 'first' });
  });

  it('only flight_booking remembers outcomes', () => {
    expect(remembers('flight_booking')).toBe(true);
    expect(remembers('deploy_pipeline')).toBe(false);
  });
});
