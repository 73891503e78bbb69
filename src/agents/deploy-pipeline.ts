/**
 * `deploy_pipeline`: five tool calls in a row (plan, write files, run tests, build, deploy), each fed by the
 * result of the one before. No confirmation: a complete request runs at once. Used by the crash harness.
 */
import { z } from 'zod';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Agent } from '../runtime/agent.js';
import { defineTaskType, type TaskType } from '../runtime/task-type.js';
import { DEPLOY_ENVIRONMENTS, DEPLOY_STEPS } from './tool-params.js';

function text(slots: JsonObject, name: string, fallback: string): string {
  const value = slots[name];
  return typeof value === 'string' ? value : fallback;
}

function target(slots: JsonObject) {
  return {
    service: text(slots, 'service', '?'),
    environment: text(slots, 'environment', 'staging'),
    version: text(slots, 'version', 'latest'),
  };
}

/** Which result each step receives from the step before, by param name. */
const FED_AS = [null, 'plan', 'files', 'tests', 'build'] as const;

function deployedUrl(result: JsonValue | undefined): string {
  if (
    result !== null &&
    typeof result === 'object' &&
    !Array.isArray(result) &&
    typeof result.url === 'string'
  ) {
    return result.url;
  }
  return JSON.stringify(result ?? null);
}

export const deployPipelineTask: TaskType = defineTaskType({
  name: 'deploy_pipeline',
  description: 'Deploy a service: plan, write files, run tests, build, deploy.',
  keywords: ['deploy', 'release', 'ship', 'roll out', '部署', '发布', '上线'],
  confirm: false,
  steps: DEPLOY_STEPS.length,
  slots: {
    service: {
      schema: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'must be a service name such as checkout-api'),
      required: true,
      label: 'service',
      description: 'the service to deploy (lowercase letters, digits, dashes)',
      hint: { kind: 'identifier', after: ['deploy', 'release', 'ship', 'service', '部署', '发布', '服务'] },
      question: { en: 'Which service should I deploy?', zh: '要部署哪个服务？' },
    },
    environment: {
      schema: z.enum(DEPLOY_ENVIRONMENTS, { error: 'must be staging or production' }),
      required: false,
      label: 'environment',
      description: 'staging (the default) or production',
      hint: {
        kind: 'enum',
        values: {
          staging: ['staging', 'stage', '预发', '预发布', '测试环境'],
          production: ['production', 'prod', '生产', '线上', '正式环境'],
        },
      },
      question: { en: 'Staging or production?', zh: '部署到预发还是生产？' },
    },
    version: {
      schema: z.string().regex(/^v?\d+(\.\d+){0,3}$/, 'must be a version such as 1.4.2'),
      required: false,
      label: 'version',
      description: 'the version to deploy; "latest" when absent',
      hint: { kind: 'version' },
      question: { en: 'Which version?', zh: '哪个版本？' },
    },
  },
  nextCall: (slots, results) => {
    const index = results.length;
    const tool = DEPLOY_STEPS[index];
    if (tool === undefined) return null;
    const fedAs = FED_AS[index];
    const previous = results[index - 1];
    const params: JsonObject = { ...target(slots) };
    if (fedAs !== null && fedAs !== undefined && previous !== undefined) params[fedAs] = previous;
    return { tool, params };
  },
  describe: (slots) => {
    const { service, environment, version } = target(slots);
    return `Deploying ${service} ${version} to ${environment}`;
  },
  confirmText: (slots, language) =>
    language === 'zh'
      ? `确认部署 ${target(slots).service} 吗？（是/否）`
      : `Deploy ${target(slots).service}? (yes/no)`,
  doneText: (slots, results, language) => {
    const { service, environment, version } = target(slots);
    const url = deployedUrl(results[results.length - 1]);
    return language === 'zh'
      ? `已部署 ${service} ${version} 到 ${environment}：${url}（共 ${results.length} 步）。`
      : `Deployed ${service} ${version} to ${environment}: ${url} (${results.length} steps).`;
  },
});

export const deployPipelineAgent: Agent = {
  name: 'deploy_pipeline',
  description: 'Deploys a service in five steps: plan, write files, run tests, build, deploy.',
  taskTypes: [deployPipelineTask],
  greeting: {
    en: 'I can deploy a service for you: say for example "deploy checkout-api to staging".',
    zh: '我可以帮您部署服务，例如：“部署 checkout-api 到预发”。',
  },
};
