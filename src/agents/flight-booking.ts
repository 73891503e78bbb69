/**
 * `flight_booking`: origin, destination, date, cabin class and passenger name; a confirmation; then one call
 * of `airline.book` (implemented in src/demo, looked up in the tool registry of the run).
 */
import { z } from 'zod';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Language } from '../models/types.js';
import type { Agent } from '../runtime/agent.js';
import { defineTaskType, type TaskType } from '../runtime/task-type.js';
import { CABIN_CLASSES } from './tool-params.js';

const CABIN_NAMES: Readonly<Record<string, Record<Language, string>>> = {
  economy: { en: 'economy', zh: '经济舱' },
  premium_economy: { en: 'premium economy', zh: '超级经济舱' },
  business: { en: 'business', zh: '商务舱' },
  first: { en: 'first', zh: '头等舱' },
};

const city = z.string().regex(/^[A-Z]{3}$/, 'must be a city such as Beijing or a 3-letter code such as BJS');

function text(slots: JsonObject, name: string): string {
  const value = slots[name];
  return typeof value === 'string' ? value : '?';
}

function bookingReference(result: JsonValue | undefined): string {
  if (result !== null && typeof result === 'object' && !Array.isArray(result)) {
    for (const key of ['booking_id', 'confirmation', 'id']) {
      const value = result[key];
      if (typeof value === 'string' || typeof value === 'number') return String(value);
    }
  }
  return JSON.stringify(result ?? null);
}

export const flightBookingTask: TaskType = defineTaskType({
  name: 'flight_booking',
  description: 'Book a one-way flight for one passenger.',
  keywords: ['book', 'flight', 'fly', 'ticket', 'plane', '订', '机票', '航班', '飞机', '买票'],
  confirm: true,
  steps: 1,
  slots: {
    origin: {
      schema: city,
      required: true,
      label: 'origin',
      description: 'departure city as an IATA metropolitan code (BJS, SHA, CAN, SZX, CTU, ...)',
      hint: { kind: 'city', role: 'origin' },
      question: { en: 'Where are you flying from?', zh: '请问从哪里出发？' },
    },
    destination: {
      schema: city,
      required: true,
      label: 'destination',
      description: 'arrival city as an IATA metropolitan code',
      hint: { kind: 'city', role: 'destination' },
      question: { en: 'Where are you flying to?', zh: '请问要飞往哪里？' },
    },
    date: {
      schema: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2026-12-09 or "next Wednesday"'),
      required: true,
      label: 'date',
      description: 'departure date, YYYY-MM-DD, in the traveller’s time zone',
      hint: { kind: 'date' },
      question: { en: 'What date do you want to fly?', zh: '请问哪天出发？' },
      check: (value, context) =>
        typeof value === 'string' && value < context.today
          ? `${value} is in the past (today is ${context.today})`
          : null,
    },
    cabin_class: {
      schema: z.enum(CABIN_CLASSES, { error: 'must be economy, premium economy, business or first' }),
      required: true,
      label: 'cabin class',
      description: 'economy, premium_economy, business or first',
      hint: {
        kind: 'enum',
        values: {
          economy: ['economy class', 'economy', 'coach', '经济舱', '经济'],
          premium_economy: ['premium economy', '超级经济舱', '超经'],
          business: ['business class', 'business', '商务舱', '公务舱', '商务'],
          first: ['first class', 'first-class', '头等舱', '头等'],
        },
      },
      question: {
        en: 'Which cabin class: economy, business or first?',
        zh: '请问要什么舱位：经济舱、商务舱还是头等舱？',
      },
    },
    passenger_name: {
      schema: z
        .string()
        .trim()
        .min(2, 'must have at least 2 characters')
        .max(100, 'must be at most 100 characters'),
      required: true,
      label: 'passenger name',
      description: 'full name of the passenger',
      hint: { kind: 'person_name' },
      question: { en: "What is the passenger's full name?", zh: '请问乘机人的姓名是？' },
    },
  },
  crossCheck: (slots) =>
    slots.origin !== undefined && slots.origin === slots.destination
      ? `origin and destination are both ${String(slots.origin)}`
      : null,
  nextCall: (slots, results) =>
    results.length > 0
      ? null
      : {
          tool: 'airline.book',
          params: {
            origin: text(slots, 'origin'),
            destination: text(slots, 'destination'),
            date: text(slots, 'date'),
            cabin_class: text(slots, 'cabin_class'),
            passenger_name: text(slots, 'passenger_name'),
          },
        },
  describe: (slots) => {
    const date = typeof slots.date === 'string' ? ` on ${slots.date}` : '';
    return `Booking ${text(slots, 'origin')} -> ${text(slots, 'destination')}${date}`;
  },
  confirmText: (slots, language) => {
    const cabin = CABIN_NAMES[text(slots, 'cabin_class')]?.[language] ?? text(slots, 'cabin_class');
    return language === 'zh'
      ? `请确认：${text(slots, 'passenger_name')}，${text(slots, 'date')} 从 ${text(slots, 'origin')} 飞往 ${text(slots, 'destination')}，${cabin}。确认预订吗？（是/否）`
      : `Please confirm: ${cabin} class from ${text(slots, 'origin')} to ${text(slots, 'destination')} on ${text(slots, 'date')} for ${text(slots, 'passenger_name')}. Shall I book it? (yes/no)`;
  },
  doneText: (slots, results, language) => {
    const reference = bookingReference(results[0]);
    return language === 'zh'
      ? `已订好：${text(slots, 'passenger_name')}，${text(slots, 'date')} 从 ${text(slots, 'origin')} 飞往 ${text(slots, 'destination')}。预订号 ${reference}。`
      : `Booked: ${text(slots, 'origin')} to ${text(slots, 'destination')} on ${text(slots, 'date')} for ${text(slots, 'passenger_name')}. Booking reference ${reference}.`;
  },
});

export const flightBookingAgent: Agent = {
  name: 'flight_booking',
  description: 'Books flights: slot filling, confirmation, booking through airline.book.',
  taskTypes: [flightBookingTask],
  greeting: {
    en: 'I can book a flight for you: tell me where from, where to and when.',
    zh: '我可以帮您订机票：请告诉我出发地、目的地和日期。',
  },
};
