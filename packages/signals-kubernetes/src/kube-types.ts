// The fields of the member objects the source reads, as the API serves them in
// JSON. Times are strings on the wire; a Date is accepted too (what typed
// clients hand out), so callers may pass either.

type Time = Date | string;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  lastTransitionTime?: Time;
}

export interface HorizontalPodAutoscaler {
  spec?: { minReplicas?: number; maxReplicas?: number; [field: string]: unknown };
  status?: { currentReplicas?: number; desiredReplicas?: number; conditions?: Condition[]; [field: string]: unknown };
  [field: string]: unknown;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface Deployment {
  spec?: { selector?: LabelSelector };
  status?: { readyReplicas?: number; conditions?: Condition[] };
}

export interface Pod {
  metadata?: { name?: string; deletionTimestamp?: Time };
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

export interface CoreEvent {
  metadata?: { creationTimestamp?: Time };
  involvedObject: { name?: string };
  reason?: string;
  message?: string;
  source?: { component?: string };
  reportingComponent?: string;
  series?: { lastObservedTime?: Time };
  lastTimestamp?: Time;
  eventTime?: Time;
  firstTimestamp?: Time;
}
