/** Which kill points to use: chosen deterministically from the points an uninterrupted reference run passed. */
import { isStepBoundary } from './points.js';

function evenly<T>(items: readonly T[], count: number): T[] {
  if (count <= 0 || items.length === 0) return [];
  if (count >= items.length) return [...items];
  return Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)] as T);
}

const TOOL_POINT = /^tool:(.+):(before_effect|effect_done)$/;

/** The tools a reference run called, in order. */
function toolsOf(points: readonly string[]): string[] {
  const tools: string[] = [];
  for (const point of points) {
    const tool = TOOL_POINT.exec(point)?.[1];
    if (tool !== undefined && !tools.includes(tool)) tools.push(tool);
  }
  return tools;
}

/**
 * The `n`-th double kill: a first kill, then one in the resumed run at a point it must pass. Even ones kill
 * a tool call before its effect, then the same call again after its effect (the recovery's own call is
 * killed); odd ones kill a call after its effect, then the next call before its effect (a run that recovered
 * through lookup is killed again). Tools are taken round-robin from the middle of the run.
 */
function doubleKill(tools: readonly string[], n: number): string[] | null {
  if (tools.length === 0) return null;
  const at = (Math.floor(tools.length / 2) + Math.floor(n / 2)) % tools.length;
  const tool = tools[at] as string;
  if (n % 2 === 0) return [`tool:${tool}:before_effect`, `tool:${tool}:effect_done`];
  const next = tools[at + 1];
  if (next === undefined) return [`tool:${tool}:effect_done`];
  return [`tool:${tool}:effect_done`, `tool:${next}:before_effect`];
}

/**
 * `kills` kill plans (a plan is the kill point of each successive run of one interrupted pipeline).
 * Up to the number of points: from 4 kills on, one double kill per started 10 kills (each worth two), the
 * rest single kills, spread evenly over tool-call points and step boundaries, always including the boundary
 * just before the run's last write (its final commit, where a run that splits one commit into parts, or
 * writes its messages before its task, is caught). Beyond the number of points: every point once, then
 * double kills.
 */
export function planKills(referencePoints: readonly string[], kills: number): string[][] {
  const points = [...new Set(referencePoints)];
  const tools = toolsOf(points);
  if (kills <= points.length) {
    const doubles = kills >= 4 ? Math.ceil(kills / 10) : 0;
    const doublePlans = Array.from({ length: doubles }, (_, n) => doubleKill(tools, n)).filter(
      (plan): plan is string[] => plan !== null,
    );
    const singles = kills - plannedKills(doublePlans);
    const inside = points.filter((p) => !isStepBoundary(p));
    const boundaries = points.filter(isStepBoundary);
    const fromInside = evenly(inside, Math.min(inside.length, Math.ceil(singles / 2)));
    const lastWrite = boundaries.filter((p) => p.endsWith(':before')).at(-1);
    const others = boundaries.filter((p) => p !== lastWrite);
    const boundaryCount = singles - fromInside.length;
    const fromBoundaries =
      lastWrite === undefined || boundaryCount <= 0
        ? evenly(boundaries, boundaryCount)
        : [...evenly(others, boundaryCount - 1), lastWrite];
    const plans: string[][] = [];
    for (let i = 0; i < Math.max(fromInside.length, fromBoundaries.length); i++) {
      if (fromInside[i] !== undefined) plans.push([fromInside[i] as string]);
      if (fromBoundaries[i] !== undefined) plans.push([fromBoundaries[i] as string]);
    }
    return [...plans, ...doublePlans];
  }
  const plans = points.map((p) => [p]);
  for (let n = 0; plannedKills(plans) < kills && n < points.length * 4; n++) {
    const plan = doubleKill(tools, n);
    if (plan === null) break;
    plans.push(plan);
  }
  return plans;
}

/** How many SIGKILLs a set of plans asks for. */
export function plannedKills(plans: readonly (readonly string[])[]): number {
  return plans.reduce((sum, plan) => sum + plan.length, 0);
}
