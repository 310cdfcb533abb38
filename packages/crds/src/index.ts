import { fileURLToPath } from 'node:url';

/** The folder of the CRD manifests: the released Helm chart's crds/, byte for byte. */
export const crdsDir: string = fileURLToPath(new URL('../crds/', import.meta.url));

/** The file names in `crdsDir`, one CustomResourceDefinition each. */
export const CRD_FILES = {
  clusterProfiles: 'multicluster.x-k8s.io_clusterprofiles.yaml',
  placementDecisions: 'multicluster.x-k8s.io_placementdecisions.yaml',
  placements: 'orchestra.multicluster.x-k8s.io_multikubernetesclusterplacements.yaml',
} as const;
