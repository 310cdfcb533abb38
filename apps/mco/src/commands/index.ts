import type { Command } from '../cli.js';
import { decideCommand } from './decide.js';
import { demoCommand } from './demo.js';
import { simulateCommand } from './simulate.js';

/** Every `mco` subcommand, in the order `mco --help` lists them. */
export const commands: readonly Command[] = [decideCommand, simulateCommand, demoCommand];
