#!/usr/bin/env node
// Entry point of the `mco` command; the code is built into dist/ by `npm ci`
// (root `prepare` script) or `npm run build`.
import { installProcessHandlers, main } from '../dist/main.js';

installProcessHandlers();
process.exitCode = await main(process.argv.slice(2));
