export {
  AuthSchema,
  CAPACITY_QUERY_VARIABLES,
  PrometheusCapacityConfigSchema,
  type PrometheusCapacityConfig,
  DEFAULT_QUERIES,
  GCE_METADATA_TOKEN_URL,
  GKE_METRICS_ENDPOINT_ANNOTATION,
  PrometheusSignalsConfigSchema,
  QUERY_NAMES,
  QUERY_VARIABLES,
  type PrometheusAuth,
  type PrometheusSignalsConfig,
  type QueryName,
} from './config.js';
export { createAuth, type Auth, type AuthOptions } from './auth.js';
export { queryEndpoint, queryInstant, type InstantQueryOptions, type QueryValue } from './prometheus-client.js';
export { prometheusCapacityModule, prometheusSignalsModule } from './module.js';
export { createPrometheusCapacitySource, type PrometheusCapacitySourceOptions } from './capacity.js';
export {
  SOURCE_NAME,
  clusterMatchers,
  createPrometheusSignalSource,
  endpointFor,
  escapeLabelValue,
  render,
  scalingLimitedReason,
  toObservation,
  type PrometheusSignalSourceOptions,
} from './source.js';
