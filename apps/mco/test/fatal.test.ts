import { describe, expect, it } from 'vitest';
import { fatalHandler } from '../src/main.js';

describe('the process-level handler of unhandled rejections and uncaught exceptions', () => {
  it('logs one error line naming what happened and exits with 1, so Kubernetes restarts the process', () => {
    const lines: string[] = [];
    const exits: number[] = [];
    const fatal = fatalHandler({ stderr: (text) => lines.push(text) }, (code) => exits.push(code));
    fatal('unhandledRejection', new TypeError('boom'));
    fatal('uncaughtException', 'not an error');
    const logged = lines.map((l) => JSON.parse(l) as { level: string; msg: string; error: string });
    expect({
      exits,
      logged: logged.map((l) => [l.level, l.msg, l.error.split('\n')[0]]),
      oneLineEach: lines.every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1),
    }).toEqual({
      exits: [1, 1],
      logged: [
        ['error', 'mco: unhandledRejection; exiting', 'TypeError: boom'],
        ['error', 'mco: uncaughtException; exiting', 'not an error'],
      ],
      oneLineEach: true,
    });
  });
});
