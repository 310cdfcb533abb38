import { mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared.js';

// Integration suites each start a real kube-apiserver; on two cores they run
// one file at a time.
export default mergeConfig(shared, { test: { fileParallelism: false } });
