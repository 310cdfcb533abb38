// @mco/core/testing: builders and fast-check arbitraries for tests of mco and of
// packages built on it. Needs fast-check (a peer dependency).
export * from './builders.js';
export * from './arbitraries.js';
