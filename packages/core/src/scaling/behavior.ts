import type { Behavior, ScalingBehavior } from '../api/placement.js';

/** Every timing knob of a placement, defaults applied (docs/placement-rules.md §6). */
export interface ResolvedBehavior {
  readonly scaleOutStabilizationSeconds: number;
  readonly scaleInStabilizationSeconds: number;
  readonly scaleInCooldownSeconds: number;
  readonly drainStepIntervalSeconds: number;
  readonly drainStepPercent: number;
  readonly evictionTimeoutSeconds: number;
  readonly unhealthyTimeoutSeconds: number;
  readonly signalStaleAfterSeconds: number;
  /** Without autoscaling: how long a cluster whose ClusterProfile is missing stays EVICTING (docs/placement-rules.md §10.5). */
  readonly profileLossGraceSeconds: number;
  readonly failBackEnabled: boolean;
  readonly failBackStabilizationSeconds: number;
  /** The cap of the fail-back backoff (the backed-off window never exceeds it). */
  readonly failBackMaxStabilizationSeconds: number;
  /** A quiet period without a fail-back cycle lowers the backoff level by one. */
  readonly failBackBackoffDecaySeconds: number;
  /** How long a cluster drained by fail-back stays warm before it drains on to removal. */
  readonly failBackLingerSeconds: number;
  /** How far back fail-back looks for the workload's peak (rule F2). */
  readonly failBackPeakLookbackSeconds: number;
}

export const DEFAULT_BEHAVIOR: ResolvedBehavior = Object.freeze({
  scaleOutStabilizationSeconds: 0,
  scaleInStabilizationSeconds: 300,
  scaleInCooldownSeconds: 300,
  drainStepIntervalSeconds: 60,
  drainStepPercent: 25,
  evictionTimeoutSeconds: 1800,
  unhealthyTimeoutSeconds: 900,
  signalStaleAfterSeconds: 180,
  profileLossGraceSeconds: 300,
  failBackEnabled: false,
  failBackStabilizationSeconds: 600,
  failBackMaxStabilizationSeconds: 14_400,
  failBackBackoffDecaySeconds: 28_800,
  failBackLingerSeconds: 3600,
  failBackPeakLookbackSeconds: 7200,
});

export function resolveBehavior(
  behavior: Behavior | undefined,
  scalingBehavior?: ScalingBehavior | undefined,
): ResolvedBehavior {
  const d = DEFAULT_BEHAVIOR;
  return {
    scaleOutStabilizationSeconds: behavior?.scaleOut?.stabilizationWindowSeconds ?? d.scaleOutStabilizationSeconds,
    scaleInStabilizationSeconds: behavior?.scaleIn?.stabilizationWindowSeconds ?? d.scaleInStabilizationSeconds,
    scaleInCooldownSeconds: behavior?.scaleIn?.cooldownSeconds ?? d.scaleInCooldownSeconds,
    drainStepIntervalSeconds: behavior?.drain?.stepIntervalSeconds ?? d.drainStepIntervalSeconds,
    drainStepPercent: behavior?.drain?.stepPercent ?? d.drainStepPercent,
    evictionTimeoutSeconds: behavior?.evictionTimeoutSeconds ?? d.evictionTimeoutSeconds,
    unhealthyTimeoutSeconds: behavior?.unhealthyTimeoutSeconds ?? d.unhealthyTimeoutSeconds,
    signalStaleAfterSeconds: behavior?.signalStaleAfterSeconds ?? d.signalStaleAfterSeconds,
    profileLossGraceSeconds: scalingBehavior?.profileLossGraceSeconds ?? d.profileLossGraceSeconds,
    failBackEnabled: behavior?.failBack?.enabled ?? d.failBackEnabled,
    failBackStabilizationSeconds: behavior?.failBack?.stabilizationWindowSeconds ?? d.failBackStabilizationSeconds,
    failBackMaxStabilizationSeconds:
      behavior?.failBack?.maxStabilizationWindowSeconds ?? d.failBackMaxStabilizationSeconds,
    failBackBackoffDecaySeconds: behavior?.failBack?.backoffDecaySeconds ?? d.failBackBackoffDecaySeconds,
    failBackLingerSeconds: behavior?.failBack?.lingerSeconds ?? d.failBackLingerSeconds,
    failBackPeakLookbackSeconds: behavior?.failBack?.peakLookbackSeconds ?? d.failBackPeakLookbackSeconds,
  };
}
