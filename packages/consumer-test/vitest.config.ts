import { mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared.js';

// One scratch project is installed per file, and the suites start real
// processes (npm, tsc, node, a kube-apiserver): one file at a time on two cores.
export default mergeConfig(shared, { test: { fileParallelism: false } });
