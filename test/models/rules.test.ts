import { describe, expect, it } from 'vitest';
import { assistantAgent } from '../../src/agents/index.js';
import { ManualClock } from '../../src/core/clock.js';
import { cityRoles } from '../../src/models/rules/cities.js';
import { extractDate, todayIn } from '../../src/models/rules/dates.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { detectAnswer, detectCancel, findPersonName } from '../../src/models/rules/words.js';
import { taskTypeInfo } from '../../src/runtime/task-type.js';

// Tuesday 2026-12-01 20:00 UTC is already Wednesday 2026-12-02 04:00 in Shanghai.
const clock = new ManualClock('2026-12-01T20:00:00.000Z');
const types = assistantAgent.taskTypes.map(taskTypeInfo);
const model = createRulesModel();

async function extract(
  input: string,
  expecting: { type: string; slot: string } | null = null,
  timezone = 'Asia/Shanghai',
) {
  return model.extract({
    input,
    taskTypes: types,
    expecting,
    now: new Date(clock.now()).toISOString(),
    timezone,
    language: 'en',
  });
}

describe('rules model: flights in English and Chinese', () => {
  it('reads a whole Chinese request', async () => {
    const found = await extract('帮我订下周三北京到上海的机票，商务舱');
    expect(found.intent).toBe('flight_booking');
    expect(found.slots.flight_booking).toEqual({
      origin: 'BJS',
      destination: 'SHA',
      date: '2026-12-09',
      cabin_class: 'business',
    });
  });

  it('reads a whole English request', async () => {
    const found = await extract('Book a flight from Beijing to Shanghai next Wednesday in business class');
    expect(found.intent).toBe('flight_booking');
    expect(found.slots.flight_booking).toEqual({
      origin: 'BJS',
      destination: 'SHA',
      date: '2026-12-09',
      cabin_class: 'business',
    });
  });

  it('finds origin and destination by their markers and order', () => {
    expect(cityRoles('北京 -> 上海', null)).toEqual({ origin: 'BJS', destination: 'SHA' });
    expect(cityRoles('to Chengdu from Guangzhou', null)).toEqual({ origin: 'CAN', destination: 'CTU' });
    expect(cityRoles('从深圳飞成都', null)).toEqual({ origin: 'SZX', destination: 'CTU' });
    expect(cityRoles('订去上海的票', null)).toEqual({ destination: 'SHA' });
    expect(cityRoles('广州出发', null)).toEqual({ origin: 'CAN' });
    expect(cityRoles('BJS to SHA', null)).toEqual({ origin: 'BJS', destination: 'SHA' });
    expect(cityRoles('Shanghai', 'origin')).toEqual({ origin: 'SHA' });
    expect(cityRoles('Shanghai', null)).toEqual({});
  });

  it('finds today in a zone again when the minute changes: at local midnight, in two zones in turn', () => {
    // 2026-12-01 15:59 UTC is 23:59 in Shanghai; a minute later it is 2026-12-02 there, still 12-01 in New York.
    const before = Date.UTC(2026, 11, 1, 15, 59, 30);
    const after = Date.UTC(2026, 11, 1, 16, 0, 0);
    expect(todayIn(before, 'Asia/Shanghai')).toBe('2026-12-01');
    expect(todayIn(before + 29_999, 'Asia/Shanghai')).toBe('2026-12-01');
    expect(todayIn(after, 'Asia/Shanghai')).toBe('2026-12-02');
    expect(todayIn(after, 'America/New_York')).toBe('2026-12-01');
    expect(todayIn(after, 'Asia/Shanghai')).toBe('2026-12-02');
    // Back in time (a test clock may go there), and before whole-minute offsets: Monrovia was -00:44:30
    // until 1972, so its midnight fell half-way through a UTC minute.
    expect(todayIn(before, 'Asia/Shanghai')).toBe('2026-12-01');
    const monroviaMidnight = Date.UTC(1970, 5, 1) + (44 * 60 + 30) * 1000;
    expect(todayIn(monroviaMidnight - 1000, 'Africa/Monrovia')).toBe('1970-05-31');
    expect(todayIn(monroviaMidnight, 'Africa/Monrovia')).toBe('1970-06-01');
    expect(() => todayIn(after, 'Not/AZone')).toThrow(RangeError);
  });

  it('resolves relative dates in the user’s time zone', () => {
    const now = clock.now();
    expect(todayIn(now, 'Asia/Shanghai')).toBe('2026-12-02');
    expect(todayIn(now, 'America/New_York')).toBe('2026-12-01');
    expect(extractDate('tomorrow', now, 'Asia/Shanghai')).toBe('2026-12-03');
    expect(extractDate('tomorrow', now, 'America/New_York')).toBe('2026-12-02');
    expect(extractDate('明天', now, 'Asia/Shanghai')).toBe('2026-12-03');
    expect(extractDate('后天', now, 'Asia/Shanghai')).toBe('2026-12-04');
    expect(extractDate('下周三', now, 'Asia/Shanghai')).toBe('2026-12-09');
    expect(extractDate('下星期五', now, 'Asia/Shanghai')).toBe('2026-12-11');
    expect(extractDate('next Wednesday', now, 'America/New_York')).toBe('2026-12-09');
    expect(extractDate('on Friday', now, 'Asia/Shanghai')).toBe('2026-12-04');
    expect(extractDate('周三', now, 'Asia/Shanghai')).toBe('2026-12-09');
    expect(extractDate('in 3 days', now, 'Asia/Shanghai')).toBe('2026-12-05');
    expect(extractDate('2027-01-15', now, 'UTC')).toBe('2027-01-15');
    expect(extractDate('12月24日', now, 'Asia/Shanghai')).toBe('2026-12-24');
    expect(extractDate('1月3号', now, 'Asia/Shanghai')).toBe('2027-01-03');
    expect(extractDate('Dec 24', now, 'UTC')).toBe('2026-12-24');
    expect(extractDate('2026-02-30', now, 'UTC')).toBeNull();
    expect(extractDate('no date here', now, 'UTC')).toBeNull();
  });

  it('reads cabin classes', async () => {
    expect((await extract('头等舱')).slots.flight_booking).toEqual({ cabin_class: 'first' });
    expect((await extract('经济舱就行')).slots.flight_booking).toEqual({ cabin_class: 'economy' });
    expect((await extract('business class please')).slots.flight_booking).toEqual({
      cabin_class: 'business',
    });
    expect((await extract('first class')).slots.flight_booking).toEqual({ cabin_class: 'first' });
  });

  it('reads passenger names, bare ones only when the name is what was asked', async () => {
    expect(findPersonName('我叫张三', false)).toBe('张三');
    expect(findPersonName('乘机人是李四。', false)).toBe('李四');
    expect(findPersonName('my name is john smith', false)).toBe('John Smith');
    expect(findPersonName('The passenger is Ada Lovelace, thanks', false)).toBe('Ada Lovelace');
    expect(findPersonName('Ada Lovelace', false)).toBeNull();
    expect(findPersonName('Ada Lovelace', true)).toBe('Ada Lovelace');
    expect(findPersonName("I'm Grace Hopper", true)).toBe('Grace Hopper');
    expect(
      (await extract('王小明', { type: 'flight_booking', slot: 'passenger_name' })).slots.flight_booking,
    ).toEqual({
      passenger_name: '王小明',
    });
  });

  it('reads yes, no and cancel', () => {
    for (const yes of ['yes', 'Yes, please', 'ok', 'go ahead', '确认', '是的', '好的，订吧', '可以'])
      expect(detectAnswer(yes)).toBe('yes');
    for (const no of ['no', 'No, change it', '不', '不对，改成经济舱', '不是'])
      expect(detectAnswer(no)).toBe('no');
    for (const nothing of ['Shanghai', '我叫张三', 'business class'])
      expect(detectAnswer(nothing)).toBeNull();
    expect(detectCancel('cancel the flight')).toBe(true);
    expect(detectCancel('取消')).toBe(true);
    expect(detectCancel('算了，不订了')).toBe(true);
    expect(detectCancel('business class')).toBe(false);
  });

  it('tells a new flight request from a change ("another", 再)', async () => {
    const again = await extract('再帮我订张去北京的');
    expect(again).toMatchObject({ intent: 'flight_booking', another: true });
    expect(again.slots.flight_booking).toEqual({ destination: 'BJS' });
  });
});

describe('rules model: deploys', () => {
  it('reads service, environment and version', async () => {
    const found = await extract('deploy checkout-api 1.4.2 to production');
    expect(found.intent).toBe('deploy_pipeline');
    expect(found.slots.deploy_pipeline).toEqual({
      service: 'checkout-api',
      environment: 'production',
      version: '1.4.2',
    });
    const zh = await extract('部署 web 到预发');
    expect(zh.slots.deploy_pipeline).toEqual({ service: 'web', environment: 'staging' });
  });

  it('routes by recency and replies with the draft', async () => {
    const decision = await model.route({
      input: 'x',
      extraction: { intent: null, slots: {}, answer: null, cancel: false, another: false },
      tasks: [
        {
          id: 'task_1',
          type: 'flight_booking',
          state: 'COLLECTING',
          slots: {},
          missing: [],
          status_line: '',
          updated_at: '2026-12-01T00:00:00.000Z',
        },
        {
          id: 'task_2',
          type: 'flight_booking',
          state: 'COLLECTING',
          slots: {},
          missing: [],
          status_line: '',
          updated_at: '2026-12-02T00:00:00.000Z',
        },
      ],
      taskTypes: types,
    });
    expect(decision.task_id).toBe('task_2');
    expect(await model.reply({ input: 'x', language: 'en', draft: 'Hello.', task: null })).toBe('Hello.');
  });
});
