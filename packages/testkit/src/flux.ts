import { mkdirSync, readdirSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { freePort, startServer, stopServer, tailOf, type ProcessReaper, type ServerProcess } from './processes.js';
import { requireTool } from './tools.js';
import { eventually } from './wait.js';

/** The Flux controllers the tests run, each from its prepared tool (tools/<tool>/build.sh). */
const CONTROLLERS = {
  'source-controller': { tool: 'flux-source-controller' },
  'kustomize-controller': { tool: 'flux' },
  'flux-operator': { tool: 'flux-operator' },
} as const;

export type FluxControllerName = keyof typeof CONTROLLERS;

/** The tool each Flux controller needs prepared: list it in the suite's `tools` requirement. */
export const fluxControllerTool = (name: FluxControllerName): string => CONTROLLERS[name].tool;

/** The CRD files a Flux controller's tool ships (its `crds/`, from the Go module it was built from). */
export function fluxControllerCrds(name: FluxControllerName): string[] {
  const dir = join(requireTool(CONTROLLERS[name].tool), 'crds');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(dir, f));
}

export interface FluxControllerOptions {
  /** A kubeconfig file for the hub, where the controller runs as Flux runs it. */
  readonly kubeconfig: string;
  /** Flux's namespace: the controller watches only it (RUNTIME_NAMESPACE). */
  readonly namespace: string;
  /** A directory for the log (`<name>.log`) and source-controller's artifact storage. */
  readonly dir: string;
  /** Kills the controller if the test process dies without stopping it. */
  readonly reaper?: ProcessReaper;
}

export interface FluxController {
  readonly name: FluxControllerName;
  readonly process: ServerProcess;
  /** The last lines of its log, for failure messages. */
  tail(lines?: number): string;
  stop(): Promise<void>;
}

const ready = (port: number) =>
  new Promise<boolean>((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/readyz', timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('error', () => resolve(false));
    request.on('timeout', () => request.destroy());
  });

/**
 * Starts a Flux controller as its Deployment runs it, minus what a test has
 * no use for (leader election, metrics, flux-operator's web UI), and resolves
 * once its /readyz answers. source-controller serves its artifacts on a free
 * loopback port, which it also advertises, so kustomize-controller fetches
 * them from there.
 */
export async function startFluxController(
  name: FluxControllerName,
  options: FluxControllerOptions,
): Promise<FluxController> {
  const binary = join(requireTool(CONTROLLERS[name].tool), name);
  const health = await freePort();
  const common = [
    '--enable-leader-election=false',
    '--metrics-addr=0',
    `--health-addr=127.0.0.1:${health}`,
    '--log-level=info',
    '--concurrent=2',
  ];
  let args: string[];
  if (name === 'source-controller') {
    const storage = await freePort();
    const path = join(options.dir, 'source-controller-storage');
    mkdirSync(path, { recursive: true });
    args = [
      ...common,
      `--storage-path=${path}`,
      `--storage-addr=127.0.0.1:${storage}`,
      `--storage-adv-addr=127.0.0.1:${storage}`,
      '--watch-all-namespaces=false',
    ];
  } else if (name === 'kustomize-controller') {
    args = [...common, '--watch-all-namespaces=false'];
  } else {
    const path = join(options.dir, 'flux-operator-storage');
    mkdirSync(path, { recursive: true });
    args = [...common, '--web-server-port=0', `--storage-path=${path}`];
  }
  const logFile = join(options.dir, `${name}.log`);
  const server = startServer(binary, args, logFile, {
    KUBECONFIG: options.kubeconfig,
    RUNTIME_NAMESPACE: options.namespace,
  });
  options.reaper?.track(server.child.pid);
  const controller: FluxController = {
    name,
    process: server,
    tail: (lines = 25) => tailOf(logFile, lines),
    async stop() {
      await stopServer(server, 10_000);
      options.reaper?.untrack(server.child.pid);
    },
  };
  try {
    await eventually(
      `${name} ready`,
      async () => (server.hasExited() ? 'exited' : (await ready(health)) ? 'ready' : 'starting'),
      (state) => state !== 'starting',
      120_000,
      250,
    ).then((state) => {
      if (state === 'exited') throw new Error('exited');
    });
  } catch (error) {
    await controller.stop();
    throw new Error(`${name} did not start (${(error as Error).message}); its log:\n${tailOf(logFile)}`);
  }
  return controller;
}
