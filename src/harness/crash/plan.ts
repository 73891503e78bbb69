/** Which kill points to use: chosen deterministically from the points an uninterrupted reference run passed. */
import { isStepBoundary } from './points.js';

function evenly<T>(items: readonly T[], count: number): T[] {
  if (count <= 0 || items.length === 0) return [];
  if (count >= items.length) return [...items];
  return Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)] as T);
}

/**
 * `kills` kill plans (a plan is the kill point of each successive run of one interrupted pipeline).
 * Up to the number of points: single kills, spread evenly over tool-call points and step boundaries.
 * Beyond that: every point once, then double kills (a point, then the next tool point in the resumed run),
 * which also kill a run while it recovers.
 */
export function planKills(referencePoints: readonly string[], kills: number): string[][] {
  const points = [...new Set(referencePoints)];
  const inside = points.filter((p) => !isStepBoundary(p));
  const boundaries = points.filter(isStepBoundary);
  if (kills <= points.length) {
    const fromInside = evenly(inside, Math.min(inside.length, Math.ceil(kills / 2)));
    const fromBoundaries = evenly(boundaries, kills - fromInside.length);
    const plans: string[][] = [];
    for (let i = 0; i < Math.max(fromInside.length, fromBoundaries.length); i++) {
      if (fromInside[i] !== undefined) plans.push([fromInside[i] as string]);
      if (fromBoundaries[i] !== undefined) plans.push([fromBoundaries[i] as string]);
    }
    return plans;
  }
  const plans = points.map((p) => [p]);
  for (let i = 0; plannedKills(plans) < kills && i < points.length * 4; i++) {
    const first = points[i % points.length] as string;
    const next = points.slice(points.indexOf(first) + 1).find((p) => !isStepBoundary(p));
    plans.push(next === undefined ? [first] : [first, next]);
  }
  return plans;
}

/** How many SIGKILLs a set of plans asks for. */
export function plannedKills(plans: readonly (readonly string[])[]): number {
  return plans.reduce((sum, plan) => sum + plan.length, 0);
}
