import { McoError } from './errors.js';

/** Reads a JSON body of at most `maxBytes`; a larger or malformed one is McoError(Invalid). */
export async function readBoundedJson(response: Response, maxBytes: number): Promise<unknown> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new McoError('Invalid', `response body of ${declared} bytes exceeds ${maxBytes}`, false);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw new McoError('Invalid', `response body exceeds ${maxBytes} bytes`, false);
      }
      chunks.push(value);
    }
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    // No excerpt: a truncated token response must not end up in a log.
    throw new McoError('Invalid', `response of ${size} bytes is not JSON`, false);
  }
}
