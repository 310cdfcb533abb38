import { describe } from 'vitest';
import { controlPlaneAvailability, ENABLE_HINT } from './binaries.js';
import { PREPARE_HINT, preparedTool } from './tools.js';

export interface RequirementOptions {
  /**
   * Other prepared tools the suite needs (names of `tools/<name>/`), e.g.
   * `helm`, or `argocd` for the ApplicationSet CRD (see thirdPartyCrd).
   */
  readonly tools?: readonly string[];
}

/**
 * Why a suite that needs a real control plane cannot run here, or undefined
 * when it can. Under `CI=true` nothing is skipped for want of a tool: a missing
 * requirement then fails the suite in its `beforeAll`. `MCO_UNIT_ONLY=1` skips
 * every such suite.
 */
export function controlPlaneSkipReason(
  options: RequirementOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  // The unit pass on the oldest supported Node.js (scripts/test.mjs) skips them even under CI.
  if (env.MCO_UNIT_ONLY === '1') return 'MCO_UNIT_ONLY=1 (the unit pass on the oldest supported Node.js)';
  if (env.CI === 'true' || env.CI === '1') return undefined;
  const availability = controlPlaneAvailability(env);
  if (!availability.available) return `${availability.reason}; to enable: ${ENABLE_HINT}`;
  const missing = (options.tools ?? []).filter((name) => preparedTool(name, env) === undefined);
  if (missing.length > 0) return `${missing.join(', ')} not prepared; to enable: ${PREPARE_HINT}`;
  return undefined;
}

const announced = new Set<string>();

/**
 * `describe` for suites that start a real kube-apiserver. Outside CI, when the
 * requirements are missing, the suite is skipped and ONE line says why and how
 * to enable it.
 */
export function describeWithControlPlane(name: string, fn: () => void): void;
export function describeWithControlPlane(name: string, options: RequirementOptions, fn: () => void): void;
export function describeWithControlPlane(
  name: string,
  optionsOrFn: RequirementOptions | (() => void),
  maybeFn?: () => void,
): void {
  const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn!];
  const reason = controlPlaneSkipReason(options);
  if (reason === undefined) {
    describe(name, fn);
    return;
  }
  if (!announced.has(reason)) {
    announced.add(reason);
    console.warn(`[mco-testkit] skipping integration tests: ${reason}`);
  }
  describe.skip(name, fn);
}
