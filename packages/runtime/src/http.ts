import type { IncomingMessage } from 'node:http';
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

/** Why a request body was refused: the HTTP status to answer with, and its reason. */
export class RequestBodyError extends Error {
  override readonly name = 'RequestBodyError';
  constructor(
    readonly status: 400 | 413 | 415,
    readonly reason: 'BadRequest' | 'PayloadTooLarge' | 'UnsupportedMediaType',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads a request's JSON body of at most `maxBytes`, or refuses it with a
 * {@link RequestBodyError}: 415 unless Content-Type is application/json, 413
 * when the declared length or the bytes that arrive exceed the bound, 400
 * when it is not JSON. After a 413 the rest of the body is left unread (the
 * request is paused): the caller answers, then discards it or closes.
 */
export function readJsonRequest(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const mediaType = req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    return Promise.reject(new RequestBodyError(415, 'UnsupportedMediaType', 'Content-Type must be application/json'));
  }
  const tooLarge = () => new RequestBodyError(413, 'PayloadTooLarge', `the request body exceeds ${maxBytes} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off('data', onData);
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks, size).toString('utf8')));
      } catch {
        // No excerpt: the body may hold a token.
        reject(new RequestBodyError(400, 'BadRequest', 'the request body is not valid JSON'));
      }
    });
    req.once('error', reject);
  });
}
