/** The drafts of what a turn says, in English or Chinese. A model may reword them; the rules model does not. */
import type { JsonObject } from '../core/json.js';
import type { Language } from '../models/types.js';
import type { SlotError, TaskType } from './task-type.js';

export function askText(
  type: TaskType,
  slot: string,
  errors: readonly SlotError[],
  language: Language,
): string {
  const question = type.slots[slot]?.question[language] ?? slot;
  if (errors.length === 0) return question;
  const problems = errors.map((error) => error.message).join(language === 'zh' ? '；' : '; ');
  return language === 'zh' ? `${problems}。${question}` : `${problems}. ${question}`;
}

export function errorsText(errors: readonly SlotError[], language: Language): string {
  const problems = errors.map((error) => error.message).join(language === 'zh' ? '；' : '; ');
  return language === 'zh' ? `${problems}。` : `${problems}.`;
}

export function declinedText(language: Language): string {
  return language === 'zh'
    ? '好的，暂不执行。请告诉我要修改什么，或者说“取消”。'
    : "OK, I won't go ahead. Tell me what to change, or say cancel.";
}

export function cancelledText(type: TaskType, slots: JsonObject, language: Language): string {
  return language === 'zh' ? `已取消：${type.describe(slots)}。` : `Cancelled: ${type.describe(slots)}.`;
}

export function failedText(type: TaskType, slots: JsonObject, reason: string, language: Language): string {
  return language === 'zh'
    ? `${type.describe(slots)} 失败：${reason}。可以修改后重试。`
    : `${type.describe(slots)} failed: ${reason}. You can change something and try again.`;
}

export function blockedText(
  type: TaskType,
  slots: JsonObject,
  tool: string,
  actionId: string,
  language: Language,
): string {
  return language === 'zh'
    ? `${type.describe(slots)} 已暂停：无法确认 ${tool} 是否已执行，需要人工核实（动作 ${actionId}）。`
    : `${type.describe(slots)} is on hold: I could not confirm whether ${tool} went through. A person needs to check it (action ${actionId}).`;
}

export function nothingText(greeting: string, statusLines: readonly string[], language: Language): string {
  if (statusLines.length === 0) return greeting;
  const header = language === 'zh' ? '进行中的任务：' : 'Open tasks:';
  return `${greeting}\n${header}\n${statusLines.map((line) => `- ${line}`).join('\n')}`;
}
