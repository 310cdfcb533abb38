import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { McoError, readBoundedJson, readJsonRequest, RequestBodyError } from '../src/index.js';

/** A response streamed in chunks without a Content-Length, as a chunked HTTP body arrives. */
function chunked(chunks: string[], headers: Record<string, string> = {}): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return new Response(body, { headers });
}

const failure = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return error instanceof McoError ? { code: error.code, message: error.message } : error;
};

describe('readBoundedJson', () => {
  it('parses a body that arrives in chunks within the bound', async () => {
    expect(await readBoundedJson(chunked(['{"clusters":', '[1,2', ']}']), 64)).toEqual({ clusters: [1, 2] });
  });

  it.each([
    [
      'a chunked body without a length that grows past the bound',
      chunked(['{"a":"', 'x'.repeat(40), '"}']),
      /exceeds 32 bytes/,
    ],
    ['a declared length past the bound', chunked(['{}'], { 'content-length': '999' }), /999 bytes exceeds 32/],
  ])('refuses %s as Invalid', async (_name, response, message) => {
    const error = (await failure(readBoundedJson(response, 32))) as { code: string; message: string };
    expect(error.code).toBe('Invalid');
    expect(error.message).toMatch(message);
  });

  it('names no excerpt of a body that is not JSON (it may hold a token)', async () => {
    expect(await failure(readBoundedJson(chunked(['access_token=secret-value']), 64))).toEqual({
      code: 'Invalid',
      message: 'response of 25 bytes is not JSON',
    });
  });
});

/** A request as node:http hands it over: headers, and a body that arrives in chunks. */
function request(chunks: string[], headers: Record<string, string> = { 'content-type': 'application/json' }) {
  let pulled = 0;
  const body = new Readable({
    highWaterMark: 1,
    read() {
      const chunk = chunks[pulled++];
      this.push(chunk === undefined ? null : Buffer.from(chunk));
    },
  });
  return { req: Object.assign(body, { headers }) as unknown as IncomingMessage, pulled: () => pulled };
}

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return error instanceof RequestBodyError
    ? { status: error.status, reason: error.reason, message: error.message }
    : error;
};

describe('readJsonRequest', () => {
  it('parses a JSON body that arrives in chunks within the bound, with or without a charset', async () => {
    expect(await readJsonRequest(request(['{"token":', '"t"}']).req, 64)).toEqual({ token: 't' });
    const withCharset = request(['[1]'], { 'content-type': 'Application/JSON; charset=utf-8' });
    expect(await readJsonRequest(withCharset.req, 64)).toEqual([1]);
  });

  it.each([
    ['no Content-Type', {}],
    ['text/plain (what a cross-site form may post)', { 'content-type': 'text/plain' }],
    ['a media type that only starts like JSON', { 'content-type': 'application/jsonx' }],
  ])('refuses %s as 415 without reading the body', async (_name, headers) => {
    const { req, pulled } = request(['{}'], headers);
    expect(await refusal(readJsonRequest(req, 64))).toEqual({
      status: 415,
      reason: 'UnsupportedMediaType',
      message: 'Content-Type must be application/json',
    });
    expect(pulled()).toBe(0);
  });

  it('refuses a declared length over the bound as 413 without reading the body', async () => {
    const { req, pulled } = request(['{}'], { 'content-type': 'application/json', 'content-length': '65' });
    expect(await refusal(readJsonRequest(req, 64))).toEqual({
      status: 413,
      reason: 'PayloadTooLarge',
      message: 'the request body exceeds 64 bytes',
    });
    expect(pulled()).toBe(0);
  });

  it('refuses a body without a length that grows past the bound as 413, and leaves the rest unread', async () => {
    const chunks = ['{"a":"', 'x'.repeat(40), '"', ...Array.from({ length: 50 }, () => ' ')];
    const { req, pulled } = request(chunks);
    expect(await refusal(readJsonRequest(req, 32))).toMatchObject({ status: 413, reason: 'PayloadTooLarge' });
    expect({ paused: req.isPaused(), listening: req.listenerCount('data'), unread: pulled() < chunks.length }).toEqual({
      paused: true,
      listening: 0,
      unread: true,
    });
  });

  it('refuses a body that is not JSON as 400, naming no excerpt of it (it may hold a token)', async () => {
    expect(await refusal(readJsonRequest(request(['token=secret-value']).req, 64))).toEqual({
      status: 400,
      reason: 'BadRequest',
      message: 'the request body is not valid JSON',
    });
  });
});
