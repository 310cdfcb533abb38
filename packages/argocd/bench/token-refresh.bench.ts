// Benchmark of the cluster Secret syncer's token refresh on a fleet whose
// tokens all expire together: 500 ClusterProfiles, credentials from a real
// credential plugin (a shell script run by @mco/cluster-access) through the
// real syncer, Secret writes counted on an in-memory Secret store. The first
// mint of every cluster's token is instant, so all 500 tokens are minted within
// moments and expire at the same instant; every refresh then takes 5 s. The
// refresh margin is the command's 5 minutes (the syncer takes at most half a
// token's lifetime, so the tokens live twice that plus 20 s): about 5 minutes
// pass before the refreshes fall due, then all 500 are due within the jitter
// window, as with tokens minted together on a real fleet. Prints the time
// until all 500 are rewritten and the margin left before the old tokens
// expire; asserts nothing. Takes about 8 minutes.
//
//   npx tsx --conditions=@mco/source bench/token-refresh.bench.ts   (in packages/argocd)
//   BENCH_CLUSTERS, BENCH_PLUGIN_SECONDS, BENCH_CONCURRENCY, BENCH_JITTER (0..1) override the defaults.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { aClusterProfile } from '@mco/core/testing';
import { createClusterAccess } from '@mco/cluster-access';
import { createLogger } from '@mco/runtime';
import { CREDENTIAL_EXPIRES_ANNOTATION, createSecretSyncer, type ClusterSecret } from '../src/index.js';
import { FakeCache, FakeSecrets } from '../test/fakes.js';

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 500);
const PLUGIN_SECONDS = Number(process.env.BENCH_PLUGIN_SECONDS ?? 5);
const CONCURRENCY = process.env.BENCH_CONCURRENCY ? Number(process.env.BENCH_CONCURRENCY) : undefined;
const REFRESH_BEFORE_MS = 5 * 60_000; // what `mco argocd-plugin` uses
const JITTER = process.env.BENCH_JITTER ? Number(process.env.BENCH_JITTER) : undefined;
const LIFETIME_S = (2 * REFRESH_BEFORE_MS) / 1000 + 20;

const dir = mkdtempSync(join(tmpdir(), 'mco-refresh-bench-'));
const firstExpiry = new Date(Math.ceil((Date.now() + LIFETIME_S * 1000) / 1000) * 1000);
const plugin = join(dir, 'plugin.sh');
// The first call per cluster answers at once with the shared expiry; later calls take PLUGIN_SECONDS.
writeFileSync(
  plugin,
  `#!/bin/sh
server=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"server":"\\([^"]*\\)".*/\\1/p')
marker='${dir}'/$(printf '%s' "$server" | tr -c 'a-z0-9' '_')
if [ -e "$marker" ]; then
  sleep ${PLUGIN_SECONDS}
  expiry=$(date -u -d @$(( $(date +%s) + ${LIFETIME_S} )) +%Y-%m-%dT%H:%M:%SZ)
else
  : > "$marker"
  expiry='${firstExpiry.toISOString().replace('.000Z', 'Z')}'
fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t-%s","expirationTimestamp":"%s"}}' "$(date +%s%N)" "$expiry"
`,
);
chmodSync(plugin, 0o755);

const profiles = Array.from({ length: CLUSTERS }, (_, i) =>
  aClusterProfile(`fleet/c${String(i).padStart(4, '0')}`, { server: `https://c${i}.example` }),
);
const access = createClusterAccess({
  providers: [
    {
      name: 'kubeconfig',
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, provideClusterInfo: true },
      allowedServers: ['https://*.example'],
    },
  ],
  refreshBeforeMs: REFRESH_BEFORE_MS,
});

/** Counts Secret writes and notes when each Secret was last rewritten with a token that outlives the first expiry. */
class CountingSecrets extends FakeSecrets {
  readonly renewedAt = new Map<string, number>();
  override async replace(secret: ClusterSecret) {
    await super.replace(secret);
    const expires = Date.parse(secret.metadata.annotations[CREDENTIAL_EXPIRES_ANNOTATION] ?? '');
    if (expires > firstExpiry.getTime()) this.renewedAt.set(secret.metadata.name, Date.now());
  }
}
const secrets = new CountingSecrets();
const syncer = createSecretSyncer({
  clusterProfiles: new FakeCache(profiles),
  secrets,
  namespace: 'argocd',
  refreshBeforeMs: REFRESH_BEFORE_MS,
  resolveAccess: (profile) => access.accessFor(profile),
  logger: createLogger({ level: 'warn', write: (line) => process.stderr.write(line) }),
  ...(CONCURRENCY ? { concurrency: CONCURRENCY } : {}),
  ...(JITTER !== undefined ? { refreshJitter: JITTER } : {}),
});

const started = Date.now();
await syncer.start();
while (secrets.store.size < CLUSTERS) await new Promise((resolve) => setTimeout(resolve, 100));
const mintedMs = Date.now() - started;
while (secrets.renewedAt.size < CLUSTERS && Date.now() < firstExpiry.getTime() + 60_000) {
  await new Promise((resolve) => setTimeout(resolve, 250));
}
syncer.stop();
await syncer.idle();

const renewed = [...secrets.renewedAt.values()];
const lastRewrite = Math.max(...renewed);
const firstRewrite = Math.min(...renewed);
const newExpiries = [...secrets.store.values()].map((s) =>
  Date.parse(s.metadata?.annotations?.[CREDENTIAL_EXPIRES_ANNOTATION] ?? ''),
);
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
console.log(`token refresh: ${CLUSTERS} clusters, tokens expiring together, a ${PLUGIN_SECONDS} s credential plugin`);
console.log(
  `  concurrency ${CONCURRENCY ?? 'default (16)'}, jitter ${JITTER ?? 'default (0.2)'}, refresh margin ${s(REFRESH_BEFORE_MS)}, token lifetime ${s(LIFETIME_S * 1000)}, load average ${loadavg()[0]!.toFixed(2)}`,
);
console.log(`  first ${CLUSTERS} Secrets written (instant mint): ${s(mintedMs)} after start`);
console.log(
  `  Secrets rewritten with a new token before the old ones expired: ${renewed.filter((t) => t < firstExpiry.getTime()).length} of ${CLUSTERS}`,
);
console.log(
  `  rewrite of all ${CLUSTERS}: from ${s(firstRewrite - started)} to ${s(lastRewrite - started)} after start (${s(lastRewrite - firstRewrite)})`,
);
console.log(`  margin left before expiry: ${s(firstExpiry.getTime() - lastRewrite)}`);
console.log(`  new expiries spread over ${s(Math.max(...newExpiries) - Math.min(...newExpiries))} (were all equal)`);
console.log(
  `  Secret writes: ${secrets.writes.length} (${CLUSTERS} creates + ${secrets.writes.length - CLUSTERS} rewrites)`,
);
rmSync(dir, { recursive: true, force: true });
