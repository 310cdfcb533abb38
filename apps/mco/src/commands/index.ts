import type { Command } from '../cli.js';
import { argocdPluginCommand } from './argocd-plugin.js';
import { argocdSyncCommand } from './argocd-sync.js';
import { clustersCommand } from './clusters.js';
import { configsyncCommand } from './configsync.js';
import { controllerCommand } from './controller.js';
import { decideCommand } from './decide.js';
import { demoCommand } from './demo.js';
import { explainCommand } from './explain.js';
import { fluxCommand } from './flux.js';
import { inventoryCommand } from './inventory.js';
import { simulateCommand } from './simulate.js';

/** Every `mco` subcommand, in the order `mco --help` lists them. */
export const commands: readonly Command[] = [
  decideCommand,
  explainCommand,
  controllerCommand,
  clustersCommand,
  inventoryCommand,
  simulateCommand,
  demoCommand,
  argocdPluginCommand,
  argocdSyncCommand,
  fluxCommand,
  configsyncCommand,
];
