import { describe, expect, it } from 'vitest';
import {
  controllerFlagsHelp,
  flagSyntax,
  CONTROLLER_FLAGS,
  parseControllerConfig,
  parseDuration,
  parseNamespaceList,
} from '../src/index.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['15s', 15_000],
    ['1.5s', 1500],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['15', undefined],
    ['s', undefined],
    ['-1s', undefined],
  ])('%s is %s ms', (text, ms) => expect(parseDuration(text)).toBe(ms));
});

describe('parseNamespaceList', () => {
  it.each([
    { name: 'an empty text is every namespace', text: '', want: { ok: true, value: [] } },
    {
      name: 'a list is trimmed, sorted and de-duplicated',
      text: ' team-b,fleet, ,team-b',
      want: { ok: true, value: ['fleet', 'team-b'] },
    },
    {
      name: 'an entry that is not a DNS-1123 label is named',
      text: 'fleet,../x',
      want: { ok: false, error: '"../x" is not a namespace name (DNS-1123 label)' },
    },
  ])('$name', ({ text, want }) => expect(parseNamespaceList(text)).toEqual(want));
});

describe('parseControllerConfig', () => {
  it('uses the defaults when nothing is given', () => {
    const result = parseControllerConfig({}, { POD_NAME: 'mco-0' });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect({ ...result.value, identity: result.value.identity.replace(/_[0-9a-f]{8}$/, '_<random>') }).toEqual({
      kubeconfig: undefined,
      http: { host: '0.0.0.0', port: 8080 },
      leaderElection: {
        namespace: 'kube-system',
        name: 'mco-controller',
        shards: 8,
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
      identity: 'mco-0_<random>',
      workers: 4,
      resyncPeriodMs: 600_000,
      signalSourcesFile: undefined,
      signalPollIntervalMs: 30_000,
      signalTimeoutMs: 10_000,
      inventoryLoss: { threshold: 0.3, windowMs: 300_000 },
      namespace: 'mco-system',
      watchIdleTimeoutMs: 180_000,
      cacheLimits: { maxObjects: 100_000, maxBytes: 256 * 2 ** 20 },
      requestTimeoutMs: 30_000,
      events: true,
      allowCrossNamespaceWorkloads: false,
      clusterProfileNamespaces: [],
      logLevel: 'info',
      shutdownTimeoutMs: 20_000,
    });
  });

  it.each([
    ['--listen', { listen: '127.0.0.1:9001' }],
    ['its old name --http-address', { 'http-address': '127.0.0.1:9001' }],
  ])('sets the HTTP address with %s', (_name, flags) => {
    const result = parseControllerConfig(flags, {});
    expect(result.ok && result.value.http).toEqual({ host: '127.0.0.1', port: 9001 });
  });

  it('takes a flag over its environment variable over the default', () => {
    const result = parseControllerConfig(
      { workers: '8', 'http-address': '127.0.0.1:9000' },
      { MCO_WORKERS: '2', MCO_LOG_LEVEL: 'debug', MCO_LEADER_ELECTION_NAMESPACE: 'ops', MCO_LEADER_ELECT: 'true' },
    );
    expect(
      result.ok && {
        workers: result.value.workers,
        http: result.value.http,
        log: result.value.logLevel,
        ns: result.value.leaderElection?.namespace,
      },
    ).toEqual({
      workers: 8,
      http: { host: '127.0.0.1', port: 9000 },
      log: 'debug',
      ns: 'ops',
    });
  });

  it('reads its own namespace (where the inventory-loss confirmation is) from POD_NAMESPACE, as the chart sets it', () => {
    const fromPod = parseControllerConfig({}, { POD_NAMESPACE: 'ops-mco' });
    const fromFlag = parseControllerConfig({ namespace: 'other' }, { POD_NAMESPACE: 'ops-mco' });
    expect([fromPod.ok && fromPod.value.namespace, fromFlag.ok && fromFlag.value.namespace]).toEqual([
      'ops-mco',
      'other',
    ]);
  });

  it('turns leader election off with --leader-elect=false', () => {
    const result = parseControllerConfig({ 'leader-elect': 'false' }, {});
    expect(result.ok && result.value.leaderElection).toBeUndefined();
  });

  it.each([
    { flags: { workers: '0' }, error: /^--workers \(MCO_WORKERS\): expected an integer from 1 to 64, got "0"$/ },
    { flags: { workers: '1e1' }, error: /^--workers \(MCO_WORKERS\): expected an integer from 1 to 64, got "1e1"$/ },
    { flags: { shards: '' }, error: /^--shards \(MCO_SHARDS\): expected an integer from 1 to 256, got ""$/ },
    { flags: { shards: '0x10' }, error: /^--shards \(MCO_SHARDS\): expected an integer from 1 to 256, got "0x10"$/ },
    {
      flags: { 'cache-max-objects': ' 5' },
      error: /^--cache-max-objects \(MCO_CACHE_MAX_OBJECTS\): expected an integer from 0 to 100000000, got " 5"$/,
    },
    { flags: { 'lease-duration': '15' }, error: /^--lease-duration \(MCO_LEASE_DURATION\): expected a duration/ },
    { flags: { listen: 'localhost' }, error: /^--listen \(MCO_HTTP_ADDRESS\): expected host:port/ },
    { flags: { events: 'yes' }, error: /^--events \(MCO_EVENTS\)/ },
    { flags: { 'renew-deadline': '20s' }, error: /^--retry-period < --renew-deadline < --lease-duration/ },
    {
      flags: { 'leader-election-namespace': 'Not_A_Name' },
      error: /^--leader-election-namespace \(MCO_LEADER_ELECTION_NAMESPACE\)/,
    },
    { flags: { namespace: 'mco.system' }, error: /^--namespace \(POD_NAMESPACE\): expected a namespace name/ },
    {
      flags: { 'cluster-profile-namespaces': 'fleet,Team_A' },
      error: /^--cluster-profile-namespaces \(MCO_CLUSTER_PROFILE_NAMESPACES\): "Team_A" is not a namespace name/,
    },
    {
      flags: { 'cache-max-bytes': '64MB' },
      error:
        /^--cache-max-bytes \(MCO_CACHE_MAX_BYTES\): expected a byte count like 268435456, 64Mi or 1Gi, got "64MB"/,
    },
  ])('rejects $flags naming the flag and its variable', ({ flags, error }) => {
    const result = parseControllerConfig(flags, {});
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(error);
  });

  it('reads cache bounds as integers with Ki, Mi or Gi, 0 for none', () => {
    const limits = (flags: Record<string, string>) => {
      const result = parseControllerConfig(flags, {});
      return result.ok ? result.value.cacheLimits : result.error;
    };
    expect([
      limits({ 'cache-max-bytes': '64Mi', 'cache-max-objects': '5000' }),
      limits({ 'cache-max-bytes': '1Gi' }),
      limits({ 'cache-max-bytes': '0', 'cache-max-objects': '0' }),
    ]).toEqual([
      { maxObjects: 5000, maxBytes: 64 * 2 ** 20 },
      { maxObjects: 100_000, maxBytes: 2 ** 30 },
      { maxObjects: 0, maxBytes: 0 },
    ]);
  });

  it('documents every flag with its environment variable', () => {
    const help = controllerFlagsHelp();
    for (const f of CONTROLLER_FLAGS) {
      expect(help).toContain(flagSyntax(f));
      expect(help).toContain(`env ${f.env}`);
    }
  });
});
