// The public API of @mco/argocd: Argo CD delivery of mco's placements (docs/argocd.md).
export { selectAccessProvider, type SelectedAccess } from './access.js';
export {
  PLACEMENT_NAME_PARAMETER,
  PLACEMENT_NAMESPACE_PARAMETER,
  argoClusterName,
  parsePluginRequest,
  placementParameters,
  type ParametersResult,
  type PluginParameters,
  type PluginRequest,
  type PluginRequestResult,
  type ProfileLookup,
  type Unsure,
} from './parameters.js';
export {
  PLUGIN_PATH,
  createPluginServer,
  type PluginServer,
  type PluginServerLimits,
  type PluginServerOptions,
} from './server.js';
export { createFileTokenVerifier, type FileTokenOptions, type TokenVerifier } from './token.js';
export { createStaticPlacementView, type PlacementView, type StaticPlacementView } from './view.js';
