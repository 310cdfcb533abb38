import type { KubeConfig } from '@kubernetes/client-node';
import { startHealthServer } from '@mco/controller';
import { createLogger, type InventoryProvider, type Logger } from '@mco/runtime';
import { Registry } from 'prom-client';
import { z } from 'zod';
import {
  KUBECONFIG_HELP,
  parseListenAddress,
  parseOrThrow,
  readDocument,
  UsageError,
  type Command,
  parseFlags,
  parseLogLevel,
} from '../cli.js';
import { loadKubeConfig } from '../client-node-hub.js';
import { assertUniqueOwnership } from '../ownership.js';
import { inventoryProviders } from '../inventory-providers.js';
import { createPlugins, withImportedModules } from '../plugins.js';

export const InventoryFileSchema = z.strictObject({
  providers: z
    .array(
      z
        .strictObject({
          name: z.string().min(1).max(253),
          /** A built-in provider by name. */
          plugin: z.string().min(1).optional(),
          /** A provider package by name, or a path to its module file (relative to the providers file). */
          module: z.string().min(1).optional(),
          config: z.unknown().optional(),
        })
        .refine((entry) => (entry.plugin === undefined) !== (entry.module === undefined), {
          message: 'set exactly one of plugin (a built-in provider) and module (a provider package or file)',
          path: ['plugin'],
        }),
    )
    .min(1)
    .max(64),
});

export interface InventoryDeps {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  readonly registry: Registry;
}

/** Reads a providers file and creates its providers; a bad file is a UsageError naming the field. */
export async function loadInventoryProviders(
  file: string,
  deps: InventoryDeps,
): Promise<Map<string, InventoryProvider>> {
  const { kubeConfig, logger, registry } = deps;
  const document = parseOrThrow(InventoryFileSchema, await readDocument(file), `inventory providers file ${file}`);
  const { modules, entries } = await withImportedModules(
    'inventory',
    inventoryProviders,
    document.providers,
    file,
    (index) => `${file}: providers[${index}]`,
  );
  const providers = createPlugins(
    modules,
    entries,
    (index) => `${file}: providers[${index}]`,
    (entry) => ({
      logger: logger.child({ provider: entry.name }),
      kubeConfig,
      metrics: registry,
      now: () => new Date(),
    }),
  );
  assertUniqueOwnership(modules, entries, (index) => `${file}: providers[${index}]`);
  return providers;
}

/** Runs providers until `abort` fires. One failing provider does not stop the others. */
export async function runInventoryProviders(
  providers: ReadonlyMap<string, InventoryProvider>,
  logger: Logger,
  abort: AbortSignal,
): Promise<void> {
  logger.info('starting inventory providers', { providers: [...providers.keys()] });
  await Promise.all(
    [...providers].map(([name, provider]) =>
      provider
        .run(abort)
        .catch((error: unknown) => logger.error('inventory provider stopped', { provider: name, error })),
    ),
  );
}

export const inventoryCommand: Command = {
  name: 'inventory',
  usage: `Usage: mco inventory --config <providers.yaml> [options]

Runs the configured inventory providers until SIGTERM or SIGINT. Each keeps
the ClusterProfiles it owns in step with its source of truth and never prunes
from a partial listing. Serves /healthz, /readyz and Prometheus /metrics.

Providers file:
  providers:
    - name: lab                  # instance name (logs and metrics)
      plugin: manual             # one of: ${inventoryProviders.map((m) => m.name).join(', ')}
      config: {file: /etc/mco/clusters.yaml}   # the plugin's own configuration
    - name: cmdb
      module: mco-provider-cmdb  # or a provider package (resolved from this file's
                                 # folder, NODE_PATH, then mco's) or ./path/to/index.js
      config: {managerName: cmdb, ...}

Options:
  --config <file>       the providers file (required)
  --kubeconfig <file>   ${KUBECONFIG_HELP}
  --listen <host:port>  address of /healthz, /readyz and /metrics (default 0.0.0.0:8081;
                        port 0 picks one); also --http-port <port>
  --log-level <level>   debug, info, warn or error (default info)
  -h, --help            show this help

Exit codes: 0 stopped by a signal, 1 failed, 2 bad usage or configuration.
See docs/providers.md and docs/writing-a-provider.md.`,
  async run(argv, io) {
    const { values } = parseFlags({
      args: argv,
      options: {
        config: { type: 'string' },
        kubeconfig: { type: 'string' },
        listen: { type: 'string' },
        'http-port': { type: 'string' }, // the former name of --listen (a port only)
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    if (!values.config) throw new UsageError('missing --config <providers.yaml>');
    const level = parseLogLevel(values['log-level']);
    const listen =
      values.listen === undefined && values['http-port'] !== undefined
        ? parseListenAddress(`0.0.0.0:${values['http-port']}`, '--http-port')
        : parseListenAddress(values.listen ?? '0.0.0.0:8081');
    const logger = createLogger({ level, write: io.stderr }).child({ component: 'mco-inventory' });
    const kubeConfig = loadKubeConfig(values.kubeconfig);
    const registry = new Registry();
    const providers = await loadInventoryProviders(values.config, { kubeConfig, logger, registry });
    const abort = new AbortController();
    const server = await startHealthServer({
      host: listen.host,
      port: listen.port,
      registry,
      isHealthy: () => true,
      isReady: () => !abort.signal.aborted,
    });
    const onSignal = () => abort.abort();
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    try {
      await runInventoryProviders(providers, logger, abort.signal);
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      await server.close();
    }
    return 0;
  },
};
