import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { McoError } from '@mco/runtime';

/** Checks bearer tokens against the token in a mounted file. */
export interface TokenVerifier {
  /** True when `presented` equals the current token (constant time in the token's content). */
  verify(presented: string): Promise<boolean>;
  close(): void;
}

export interface FileTokenOptions {
  /** Re-read the file at most this often when a token does not match (default 1000 ms). */
  readonly minReloadIntervalMs?: number;
  /** Re-check the file in the background this often, so a rotated-out token stops working (default 10 s). */
  readonly recheckIntervalMs?: number;
  readonly now?: () => number;
  /** Called when the file cannot be read after startup; the last good token stays in force. */
  readonly onError?: (error: Error) => void;
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Secret files often end with a newline; a header value never can. */
const normalise = (text: string): string => text.replace(/[\r\n]+$/, '').trim();

interface Loaded {
  readonly digest: Buffer | null;
  readonly signature: string;
}

/**
 * A token read from a file (a mounted Secret key) and re-read when the file
 * changes: Kubernetes rotates a mounted Secret by swapping a symlink, so the
 * file's inode, size and mtime change. A presented token that does not match
 * triggers a (rate-limited) re-check, so a rotated token works at once; a
 * background re-check revokes the old one within `recheckIntervalMs`.
 *
 * There is no default token: a missing or empty file at startup is an error.
 */
export function createFileTokenVerifier(path: string, options: FileTokenOptions = {}): TokenVerifier {
  const minReloadIntervalMs = options.minReloadIntervalMs ?? 1000;
  const now = options.now ?? Date.now;
  let current = loadSync(path);
  let lastCheck = now();
  let reloading: Promise<void> | undefined;

  const reload = (): Promise<void> => {
    reloading ??= (async () => {
      try {
        const info = await stat(path);
        const signature = `${info.ino}:${info.size}:${info.mtimeMs}`;
        if (signature !== current.signature) current = fromText(await readFile(path, 'utf8'), signature);
      } catch (error) {
        options.onError?.(error as Error);
      } finally {
        lastCheck = now();
        reloading = undefined;
      }
    })();
    return reloading;
  };

  const timer = setInterval(() => void reload(), options.recheckIntervalMs ?? 10_000);
  timer.unref();

  const matches = (presented: Buffer): boolean => current.digest !== null && timingSafeEqual(presented, current.digest);

  return {
    async verify(token) {
      // Compare fixed-length digests: timingSafeEqual needs equal lengths, and
      // hashing first keeps the token's length from leaking through timing.
      const presented = digest(token);
      if (matches(presented)) return true;
      if (now() - lastCheck >= minReloadIntervalMs) await reload();
      else if (reloading) await reloading;
      return matches(presented);
    },
    close() {
      clearInterval(timer);
    },
  };
}

function loadSync(path: string): Loaded {
  let text: string;
  let signature: string;
  try {
    const info = statSync(path);
    signature = `${info.ino}:${info.size}:${info.mtimeMs}`;
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new McoError('Invalid', `cannot read the plugin token file ${path}: ${(error as Error).message}`, false, {
      cause: error,
    });
  }
  const loaded = fromText(text, signature);
  if (!loaded.digest) throw new McoError('Invalid', `the plugin token file ${path} is empty`, false);
  return loaded;
}

function fromText(text: string, signature: string): Loaded {
  const token = normalise(text);
  // An empty file after a rotation authenticates nobody (Argo CD then changes nothing).
  return { digest: token ? digest(token) : null, signature };
}
