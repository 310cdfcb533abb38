import type { Command } from '../cli.js';
import { decideCommand } from './decide.js';

/** Every `mco` subcommand, in the order `mco --help` lists them. */
export const commands: readonly Command[] = [decideCommand];
