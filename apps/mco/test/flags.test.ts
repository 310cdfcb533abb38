import { describe, expect, it } from 'vitest';
import { parseFlags, parseLogLevel, UsageError } from '../src/cli.js';
import { controllerConfigFromArgs } from '../src/commands/controller.js';

// Boolean flags are switches that also take a value, as Kubernetes
// controllers' flags do: `--flag`, `--flag=true|false`, `--flag true|false`.
describe('parseFlags', () => {
  const parse = (args: string[]) =>
    parseFlags({
      args,
      allowPositionals: true,
      options: {
        'dry-run': { type: 'boolean' },
        prune: { type: 'boolean' },
        file: { type: 'string', short: 'f' },
        help: { type: 'boolean', short: 'h' },
      },
    });

  it.each([
    { args: ['--dry-run'], values: { 'dry-run': true }, positionals: [] },
    { args: ['--dry-run=true'], values: { 'dry-run': true }, positionals: [] },
    { args: ['--dry-run=false'], values: { 'dry-run': false }, positionals: [] },
    { args: ['--dry-run', 'true'], values: { 'dry-run': true }, positionals: [] },
    { args: ['--dry-run', 'false'], values: { 'dry-run': false }, positionals: [] },
    { args: ['--dry-run', 'apply'], values: { 'dry-run': true }, positionals: ['apply'] },
    { args: ['apply', '--dry-run'], values: { 'dry-run': true }, positionals: ['apply'] },
    { args: ['--dry-run=false', '--dry-run'], values: { 'dry-run': true }, positionals: [] },
    { args: ['--dry-run', '--dry-run', 'false'], values: { 'dry-run': false }, positionals: [] },
    {
      args: ['--dry-run', '--prune', 'false', '-f', 'x.yaml'],
      values: { 'dry-run': true, prune: false, file: 'x.yaml' },
      positionals: [],
    },
    { args: ['--file', 'false'], values: { file: 'false' }, positionals: [] },
    { args: ['--file=--dry-run'], values: { file: '--dry-run' }, positionals: [] },
    { args: ['--', '--dry-run', 'false'], values: {}, positionals: ['--dry-run', 'false'] },
    { args: ['-h'], values: { help: true }, positionals: [] },
    { args: [], values: {}, positionals: [] },
  ])('$args', ({ args, values, positionals }) => {
    const parsed = parse(args);
    expect({ values: { ...parsed.values }, positionals: parsed.positionals }).toEqual({ values, positionals });
  });

  it.each([
    { args: ['--dry-run=yes'], error: new UsageError('--dry-run: expected true or false (or no value), got "yes"') },
    { args: ['--prune='], error: new UsageError('--prune: expected true or false (or no value), got ""') },
    { args: ['--dry-runs'], error: expect.objectContaining({ code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' }) },
    { args: ['-f'], error: expect.objectContaining({ code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' }) },
  ])('refuses $args', ({ args, error }) => {
    expect(() => parse(args)).toThrow(error);
  });
});

describe('parseLogLevel (every long-running command)', () => {
  it.each([
    [undefined, 'info'],
    ['debug', 'debug'],
    ['error', 'error'],
  ])('%s -> %s', (given, want) => expect(parseLogLevel(given)).toBe(want));

  it('names the flag and the levels on a bad value', () => {
    expect(() => parseLogLevel('loud')).toThrow(new UsageError('--log-level loud: expected debug, info, warn, error'));
  });
});

describe('mco controller switches', () => {
  const config = (args: string[], env: Record<string, string | undefined> = {}) => {
    const c = controllerConfigFromArgs(['--kubeconfig', 'hub.yaml', ...args], env);
    if (c === 'help') throw new Error('help');
    return {
      allowCrossNamespaceWorkloads: c.allowCrossNamespaceWorkloads,
      events: c.events,
      leaderElection: c.leaderElection !== undefined,
      workers: c.workers,
    };
  };
  const defaults = { allowCrossNamespaceWorkloads: false, events: true, leaderElection: true, workers: 4 };

  it.each([
    { args: [], env: {}, expected: defaults },
    { args: ['--allow-cross-namespace-workloads'], env: {}, expected: { allowCrossNamespaceWorkloads: true } },
    {
      args: ['--allow-cross-namespace-workloads', '--workers', '3'],
      env: {},
      expected: { allowCrossNamespaceWorkloads: true, workers: 3 },
    },
    { args: ['--allow-cross-namespace-workloads=true'], env: {}, expected: { allowCrossNamespaceWorkloads: true } },
    { args: ['--allow-cross-namespace-workloads', 'true'], env: {}, expected: { allowCrossNamespaceWorkloads: true } },
    { args: ['--allow-cross-namespace-workloads=false'], env: {}, expected: {} },
    { args: ['--allow-cross-namespace-workloads', 'false'], env: {}, expected: {} },
    {
      args: ['--events', 'false', '--leader-elect=false'],
      env: {},
      expected: { events: false, leaderElection: false },
    },
    { args: ['--leader-elect', 'false'], env: {}, expected: { leaderElection: false } },
    { args: ['--events'], env: { MCO_EVENTS: 'false' }, expected: {} },
    {
      args: [],
      env: { MCO_ALLOW_CROSS_NAMESPACE_WORKLOADS: 'true' },
      expected: { allowCrossNamespaceWorkloads: true },
    },
    {
      args: ['--allow-cross-namespace-workloads=false'],
      env: { MCO_ALLOW_CROSS_NAMESPACE_WORKLOADS: 'true' },
      expected: {},
    },
  ])('$args with $env', ({ args, env, expected }) => {
    expect(config(args, env)).toEqual({ ...defaults, ...expected });
  });

  it.each([
    { args: ['--events=on'], env: {}, error: '--events: expected true or false (or no value), got "on"' },
    { args: [], env: { MCO_EVENTS: 'on' }, error: /^--events \(MCO_EVENTS\): / },
    { args: ['--workers'], env: {}, error: /argument missing/ },
  ])('refuses $args with $env naming the flag', ({ args, env, error }) => {
    expect(() => config(args, env)).toThrow(error);
  });
});
