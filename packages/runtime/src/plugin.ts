import type { KubeConfig } from '@kubernetes/client-node';
import type { CapacityAnswer, ClusterProfile, PlacementSpec, Signal } from '@mco/core';
import type { Registry } from 'prom-client';
import type { z } from 'zod';
import type { McoErrorCode } from './errors.js';
import type { KubeConnection } from './kube-connection.js';
import type { Logger } from './logger.js';

/** What the mco app hands to every plugin it creates. */
interface BasePluginDeps {
  readonly logger: Logger;
  /** Register the plugin's metrics here; they appear on the app's /metrics. */
  readonly metrics: Registry;
  /** The clock; tests pass a fake one. */
  readonly now: () => Date;
}

/** What an inventory provider is given: access to the hub as a client-node `KubeConfig`. */
export interface PluginDeps extends BasePluginDeps {
  readonly kubeConfig: KubeConfig;
}

/**
 * What a capacity-signal source or a capacity source is given: the hub as a
 * `KubeConnection`, so that the controller, which runs the sources, never loads
 * a Kubernetes client library (docs/performance.md).
 */
export interface SignalSourceDeps extends BasePluginDeps {
  readonly hub: KubeConnection;
}

export type PluginKind = 'inventory' | 'signals' | 'capacity';

/**
 * What a provider package exports (docs/writing-a-provider.md): a name, a zod
 * schema for its configuration, and a factory. Importing the package has no
 * side effects; the mco app registers it in one list.
 */
export interface PluginModule<Kind extends PluginKind, Config, Instance, Deps = PluginDeps> {
  readonly kind: Kind;
  /** Unique among plugins of its kind: lower-case words and dashes. */
  readonly name: string;
  readonly configSchema: z.ZodType<Config>;
  create(config: Config, deps: Deps): Instance;
}

/** What a capacity-signal source is asked about: one placement and its listed clusters. */
export interface SignalRequest {
  readonly placement: {
    readonly namespace: string;
    readonly name: string;
    readonly spec: PlacementSpec;
  };
  /** The clusters to observe, with their ClusterProfiles (for access and annotations). */
  readonly clusters: readonly { readonly key: string; readonly profile: ClusterProfile }[];
}

/**
 * Why a cluster's signal is missing or incomplete. The controller shows these
 * in the placement's conditions; the message names the cluster's problem in
 * words an operator can act on and never contains a credential.
 */
export interface SignalError {
  /** ClusterProfile `namespace/name`. */
  readonly cluster: string;
  readonly code: McoErrorCode;
  readonly message: string;
}

/** The answer of one `observe` call. */
export interface SignalObservation {
  /** At most one signal per requested cluster; a cluster that could not be observed has none. */
  readonly signals: readonly Signal[];
  /**
   * One entry per cluster that could not be observed (no signal) or only in
   * part (its signal leaves the unobserved fields undefined), in request order.
   */
  readonly errors: readonly SignalError[];
}

/**
 * Observes the placed workload on clusters and reports docs/placement-rules.md §5
 * signals, each stamped with `observedAt`. Sources observe; they never decide.
 * A cluster it cannot observe is left out (a missing signal), never guessed,
 * and reported in `errors`. `abort` fires on shutdown or at the caller's
 * overall deadline; a deadline aborts with a `TimeoutError` (`isDeadline`), and
 * then `observe` resolves promptly with what it has observed and a `Timeout`
 * error for every other cluster (`observeEachCluster` does this), so one slow
 * member never costs the placement its evaluation. `observe` rejects only on
 * another abort or a broken invariant, never because a cluster failed.
 */
export interface CapacitySignalSource {
  observe(request: SignalRequest, abort?: AbortSignal): Promise<SignalObservation>;
  close?(): Promise<void>;
}

/**
 * What a capacity source is asked about: one autoscaling placement, its
 * scale-out candidates and the clusters it is placed on.
 */
export interface CapacityRequest {
  readonly placement: SignalRequest['placement'];
  /** The scale-out candidates, in the engine's order, with their ClusterProfiles: answer for these. */
  readonly clusters: SignalRequest['clusters'];
  /**
   * The clusters the placement is listed on: where its workload (the
   * Deployment of `workloadDetails`) already runs, so a source that needs the
   * pod shape reads the pod template there (`podShapeOf`).
   */
  readonly placed: SignalRequest['clusters'];
}

/** The answer of one `answer` call. */
export interface CapacityObservation {
  /** At most one answer per requested cluster; a cluster whose answer failed has none. */
  readonly answers: readonly CapacityAnswer[];
  /** One entry per cluster that could not be answered for, in request order. */
  readonly errors: readonly SignalError[];
}

/**
 * Answers, for each scale-out candidate of a placement, how many replicas of
 * its workload the cluster can add now (`addableReplicas`), or that it does
 * not know (undefined), with the time of the answer and a reason. Sources
 * answer; they never decide: the engine only passes over a candidate whose
 * fresh answer says it cannot add the replicas it needs. A cluster the source
 * cannot answer for gets no answer and an error; deadlines and `abort` work as
 * for `CapacitySignalSource.observe` (`answerEachCluster` does both).
 */
export interface CapacitySource {
  answer(request: CapacityRequest, abort?: AbortSignal): Promise<CapacityObservation>;
  close?(): Promise<void>;
}

/**
 * Keeps the hub's ClusterProfiles in step with a source of truth. Owns only
 * profiles whose `spec.clusterManager.name` is its own; never prunes from a
 * partial listing.
 */
export interface InventoryProvider {
  /** Runs until `abort` fires; resolves after cleanup. */
  run(abort: AbortSignal): Promise<void>;
}

export type SignalSourceModule<Config = unknown> = PluginModule<
  'signals',
  Config,
  CapacitySignalSource,
  SignalSourceDeps
>;
export type CapacitySourceModule<Config = unknown> = PluginModule<'capacity', Config, CapacitySource, SignalSourceDeps>;
export type InventoryProviderModule<Config = unknown> = PluginModule<'inventory', Config, InventoryProvider>;
