import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// @mco/core must stay pure: time, randomness, I/O and Node APIs are inputs,
// never reached for (see docs/architecture.md).
const impure = [
  { name: 'process', message: '@mco/core never reads the environment.' },
  { name: 'setTimeout', message: '@mco/core has no timers.' },
  { name: 'setInterval', message: '@mco/core has no timers.' },
  { name: 'setImmediate', message: '@mco/core has no timers.' },
  { name: 'fetch', message: '@mco/core does no I/O.' },
  { name: 'require', message: '@mco/core is ESM and does no I/O.' },
  { name: 'console', message: '@mco/core returns reasons; it never logs.' },
];

// One client for every runtime request: @mco/kube-runtime's KubeClient
// (docs/architecture.md). Runtime code may name client-node's KubeConfig (a
// library user may pass one; @mco/kube-runtime/client-node turns it into a
// KubeClient), never its generated APIs. The interop module itself and the
// private testkit are exempt.
const clientNodeOnlyKubeConfig = {
  name: '@kubernetes/client-node',
  allowImportNames: ['KubeConfig'],
  message:
    "Requests go through @mco/kube-runtime's KubeClient; only KubeConfig may be imported from client-node (convert it with kubeClientFromKubeConfig from @mco/kube-runtime/client-node).",
};
const clientNodeExempt = ['packages/testkit/**', 'packages/kube-runtime/src/client-node.ts'];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/reports/**', '**/*.d.ts', 'apps/mco/chart/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Adapters, providers and signal sources share the Kubernetes runtime
    // through @mco/kube-runtime; depending on the controller would tie every
    // plugin to its release and its internals (docs/architecture.md).
    files: ['packages/**/*.ts'],
    ignores: ['packages/controller/**', 'packages/core/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@mco/controller', '@mco/controller/*', '**/controller/src/**'],
              message: 'Only the mco app uses @mco/controller; shared Kubernetes machinery lives in @mco/kube-runtime.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/controller/**', 'packages/core/**', ...clientNodeExempt],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [clientNodeOnlyKubeConfig],
          patterns: [
            {
              group: ['@mco/controller', '@mco/controller/*', '**/controller/src/**'],
              message: 'Only the mco app uses @mco/controller; shared Kubernetes machinery lives in @mco/kube-runtime.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['apps/*/src/**/*.ts', 'templates/*/src/**/*.ts', 'packages/controller/src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [clientNodeOnlyKubeConfig] }] },
  },
  {
    files: ['packages/core/src/**/*.ts'],
    ignores: ['packages/core/src/testing/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: '@mco/core is pure: no Node APIs.' },
            {
              group: [
                'fs',
                'fs/*',
                'path',
                'os',
                'http',
                'https',
                'net',
                'child_process',
                'crypto',
                'url',
                'timers',
                'timers/*',
                'events',
                'stream',
                'worker_threads',
              ],
              message: '@mco/core is pure: no Node APIs.',
            },
            { group: ['@kubernetes/*', '@mco/*'], message: '@mco/core depends only on zod and re2js.' },
          ],
        },
      ],
      'no-restricted-globals': ['error', ...impure],
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: 'Time is an input of @mco/core; pass `now` instead.',
        },
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'Time is an input of @mco/core; pass `now` instead.',
        },
        {
          selector: "CallExpression[callee.name='Date']",
          message: 'Time is an input of @mco/core; pass `now` instead.',
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: '@mco/core is deterministic: no randomness.' },
        { object: 'performance', property: 'now', message: 'Time is an input of @mco/core.' },
      ],
    },
  },
);
