import { decide, DecisionInputSchema } from '@mco/core';
import { UsageError, parseOrThrow, readDocument, type Command, parseFlags } from '../cli.js';

export const decideCommand: Command = {
  name: 'decide',
  usage: `Usage: mco decide -f <input.(json|yaml)>

Evaluates one placement with the @mco/core engine and prints one JSON document:
  {"status": {...}, "transitions": [...], "requeueAfterSeconds": N|null}

The input holds:
  now: "2026-01-01T00:00:00Z"         evaluation time (RFC 3339)
  placement: <MultiKubernetesClusterPlacement, status optional>
  clusterProfiles: [<ClusterProfile>, ...]
  signals: [{cluster: ns/name, observedAt: ..., hpa: {...}, ...}, ...]

Feed an output's status back as placement.status to continue the timeline.
An invalid spec is reported in status.conditions (Valid=False), not as an error.

Options:
  -f, --file <path>   input file, JSON or YAML ("-" reads stdin)
  -h, --help          show this help

Exit codes: 0 decided, 2 unreadable or schema-invalid input (the message names the field).`,
  async run(argv, io) {
    const { values } = parseFlags({
      args: argv,
      options: { file: { type: 'string', short: 'f' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help) {
      io.stdout(`${this.usage}\n`);
      return 0;
    }
    if (!values.file) throw new UsageError('missing -f <input file>');
    const input = parseOrThrow(DecisionInputSchema, await readDocument(values.file), `input ${values.file}`);
    const decision = decide({
      now: new Date(input.now),
      placement: input.placement,
      clusterProfiles: input.clusterProfiles,
      signals: input.signals,
    });
    io.stdout(`${JSON.stringify(decision, null, 2)}\n`);
    return 0;
  },
};
