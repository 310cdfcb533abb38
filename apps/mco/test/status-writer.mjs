// A process of its own that writes placement statuses as the controller does
// (PUT .../status with the resourceVersion read last, one keep-alive agent),
// `concurrency` at a time, as fast as the API server takes them, while the
// parent says `run`; `pause` stops it after the writes in flight. Its own
// event loop, so that the parent's timing of another client is the server's.
// Driven by flow-control.integration.test.ts over IPC.
import { Buffer } from 'node:buffer';
import { Agent, request } from 'node:https';

const { server, token, ca, concurrency, paths, status } = JSON.parse(process.env.STATUS_WRITER);
const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: Buffer.from(ca, 'base64') });
const latest = new Map();
const counts = { requests: 0, writes: 0, errors: 0, codes: {} };
let running = false;
let sequence = 0;

function send(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      new URL(path, server),
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ code: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function write(path) {
  let object = latest.get(path);
  if (!object) {
    counts.requests++;
    object = JSON.parse((await send('GET', path)).body);
  }
  // A condition message that changes every write, so that each one reaches etcd.
  const conditions = [{ type: 'Valid', status: 'True', reason: 'Valid', message: `write ${sequence++}` }];
  counts.requests++;
  const answer = await send('PUT', `${path}/status`, { ...object, status: { ...status, conditions } });
  counts.codes[answer.code] = (counts.codes[answer.code] ?? 0) + 1;
  if (answer.code === 200) {
    counts.writes++;
    latest.set(path, JSON.parse(answer.body));
  } else {
    counts.errors++;
    latest.delete(path);
  }
}

let next = 0;
async function loop() {
  while (running) {
    try {
      await write(paths[next++ % paths.length]);
    } catch {
      counts.errors++; // a broken connection: counted, and the loop goes on
    }
  }
}

let loops = [];
process.on('message', async ({ id, command }) => {
  if (command === 'run' && !running) {
    running = true;
    loops = Array.from({ length: concurrency }, loop);
  } else if (command === 'pause') {
    running = false;
    await Promise.all(loops);
  } else if (command === 'stop') {
    running = false;
    await Promise.all(loops);
    agent.destroy();
  }
  process.send({ id, counts });
});
process.send({ id: 0, counts });
