// Chart values shared by the chart tests.

/** Every component of the chart on (with the least each one needs to render). */
export const ALL_ON: Readonly<Record<string, string>> = {
  'argocd.plugin.enabled': 'true',
  'argocd.plugin.existingSecret': 'mco-plugin-token',
  'argocd.refreshApplicationSets.enabled': 'true',
  'argocd.clusterSecretSync.enabled': 'true',
  'argocd.clusterSecretSync.providers[0].name': 'google',
  'argocd.clusterSecretSync.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
  'argocd.clusterSecretSync.providers[0].execConfig.command': 'gke-gcloud-auth-plugin',
  'argocd.clusterSecretSync.providers[0].allowedServers[0]': 'https://connectgateway.googleapis.com/v1/projects/1/',
  'flux.enabled': 'true',
  'flux.inputProviders': 'true',
  'flux.providers[0].name': 'google',
  'flux.providers[0].execConfig.apiVersion': 'client.authentication.k8s.io/v1',
  'flux.providers[0].execConfig.command': 'gke-gcloud-auth-plugin',
  'flux.providers[0].allowedServers[0]': 'https://connectgateway.googleapis.com/v1/projects/1/',
  'configsync.enabled': 'true',
  'dashboard.enabled': 'true',
  'inventory.enabled': 'true',
  'inventory.providers[0].name': 'lab',
  'inventory.providers[0].plugin': 'manual',
  'inventory.providers[0].config.file': '/etc/mco-inventory/clusters.yaml',
};
