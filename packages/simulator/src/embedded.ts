// The GPU-stockout scenario, embedded so that `mco demo` works from any
// directory and in a container image. It is examples/scenarios/gpu-stockout.yaml
// byte for byte (a test keeps the two in step).
export const GPU_STOCKOUT_SCENARIO = `# mco simulate examples/scenarios/gpu-stockout.yaml   (also: mco demo)
#
# A GPU inference service runs in us-central1, the cheapest region: the
# placement ranks the L4 clusters by the price of a GPU hour (the ClusterProfile
# property gpu-hour-cost). In the morning its traffic ramps up five-fold, but
# us-central1 has run out of L4 GPUs: the cluster-autoscaler cannot add nodes
# (FailedScaleUp) and pods stay Pending. mco sees the cluster at its capacity
# ceiling and places the workload in the next cheapest cluster (us-east4).
# GPUs come back at 06:00; us-east4 stays until traffic falls in the evening,
# unless fail-back is on ("mco with fail-back" in the comparison).
name: gpu-stockout
description: Regional GPU stockout during a morning ramp, and recovery.
seed: 7
start: '2026-01-01T00:00:00Z'
duration: 12h
tick: 30s
workload:
  capacityPerReplica: 10 # requests/s one replica (one L4 GPU) serves at 100% utilisation
  podStartup: 2m # image pull and model load
  deployDelay: 1m # Argo CD sync after the placement lists a cluster
  removeDelay: 1m
  hpa: { minReplicas: 2, maxReplicas: 24, targetUtilization: 70, scaleDownStabilization: 5m }
fleet:
  namespace: fleet
  nodePool: { podsPerNode: 1, minNodes: 0, maxNodes: 24, scaleUpDelay: 4m, scaleDownDelay: 10m }
  clusters:
    - name: us-central1
      region: us-central1
      labels: { accelerator: nvidia-l4, geo: us }
      gpuHourCost: 0.71 # on-demand price of one L4 node-hour (illustrative)
    - name: us-east4
      region: us-east4
      labels: { accelerator: nvidia-l4, geo: us }
      gpuHourCost: 0.76
    - name: europe-west4
      region: europe-west4
      labels: { accelerator: nvidia-l4, geo: eu }
      gpuHourCost: 0.8
    - name: asia-east1
      region: asia-east1
      labels: { accelerator: nvidia-t4, geo: asia }
      gpuHourCost: 0.35
placement:
  apiVersion: orchestra.multicluster.x-k8s.io/v1alpha1
  kind: MultiKubernetesClusterPlacement
  metadata: { name: gemma-inference, namespace: default }
  spec:
    affinity:
      clusterAffinity:
        requiredDuringSchedulingRequiredDuringExecution:
          clusterSelectorTerms:
            - matchExpressions:
                - labelSelector: { key: accelerator, operator: In, values: [nvidia-l4] }
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100 # the cheapest GPU hour first
            propertySorter: { name: gpu-hour-cost, sortOrder: Ascending }
          - weight: 20
            preference:
              matchExpressions:
                - labelSelector: { key: geo, operator: In, values: [us] }
    scaling:
      autoscaleForCapacity:
        minClustersBelowCapacityCeiling: 1
        maxClusters: 3
        useDraining: true
        workloadDetails: { namespace: inference, deploymentName: gemma-server, hpaName: gemma-server }
demand: # requests/s
  piecewise:
    - { at: 0h, value: 30 }
    - { at: 1h, value: 30 }
    - { at: 3h, value: 150 }
    - { at: 7h, value: 150 }
    - { at: 9h, value: 40 }
    - { at: 10h, value: 10 }
  noise: { stddev: 0.03, correlation: 0.9 }
events:
  - { at: 1h15m, type: stockout, region: us-central1 }
  - { at: 6h, type: recovery, region: us-central1 }
`;
