import { describe, expect, it } from 'vitest';
import { McoError, readBoundedJson } from '../src/index.js';

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
