import type { SignalSourceModule } from '@mco/runtime';
import { kubernetesSignalsModule } from '@mco/signals-kubernetes';
import { prometheusSignalsModule } from '@mco/signals-prometheus';

// The capacity-signal sources built into the mco app.
// `unknown`: each module parses its own config with its configSchema before create().
export const signalSources: readonly SignalSourceModule<unknown>[] = [kubernetesSignalsModule, prometheusSignalsModule];
