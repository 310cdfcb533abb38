import { McoError, readBoundedJson, toMcoError } from '@mco/runtime';
import type { TokenSource } from './auth.js';
import { ListMembershipsResponseSchema, type Membership } from './membership.js';

export const DEFAULT_HUB_ENDPOINT = 'https://gkehub.googleapis.com';
const MAX_PAGE_BYTES = 16 * 1024 * 1024;
const MAX_PAGES = 1000;

export interface ListMembershipsOptions {
  /** `https://gkehub.googleapis.com` */
  readonly endpoint: string;
  readonly project: string;
  readonly tokens: TokenSource;
  /** Per request, body included. */
  readonly timeoutMs: number;
  readonly pageSize?: number;
  /** AIP-160 filter, passed through. */
  readonly filter?: string;
  readonly fetch?: typeof fetch;
}

/** Why a listing is not complete; these become the `reason` label of the error metric. */
export type ListFailureReason =
  'UnreachableLocations' | 'Unauthorized' | 'Timeout' | 'Unavailable' | 'Invalid' | 'NotFound' | 'Internal';

export type ListResult =
  | { readonly ok: true; readonly memberships: Membership[]; readonly pages: number }
  | { readonly ok: false; readonly reason: ListFailureReason; readonly error: McoError };

/**
 * Lists every membership of the project in all locations
 * (`GET {endpoint}/v1/projects/{project}/locations/-/memberships`, following
 * `nextPageToken`). The result is `ok` only for a complete listing: any page
 * that names `unreachable` locations, any HTTP or network error, timeout or
 * malformed page makes the whole listing a failure, so nothing gets pruned
 * from a partial view.
 */
export async function listMemberships(options: ListMembershipsOptions, abort?: AbortSignal): Promise<ListResult> {
  const base = `${options.endpoint.replace(/\/+$/, '')}/v1/projects/${encodeURIComponent(options.project)}/locations/-/memberships`;
  const memberships: Membership[] = [];
  const seenTokens = new Set<string>();
  let pageToken: string | undefined;
  let pages = 0;
  try {
    do {
      if (++pages > MAX_PAGES) throw new McoError('Invalid', `more than ${MAX_PAGES} pages of memberships`, false);
      const url = new URL(base);
      if (options.pageSize) url.searchParams.set('pageSize', String(options.pageSize));
      if (options.filter) url.searchParams.set('filter', options.filter);
      if (pageToken) url.searchParams.set('pageToken', pageToken);
      const page = ListMembershipsResponseSchema.safeParse(await getJson(url, options, abort));
      if (!page.success)
        throw new McoError(
          'Invalid',
          `page ${pages} of memberships does not have the documented shape: ${page.error.issues[0]?.path.join('.')}: ${page.error.issues[0]?.message}`,
          false,
        );
      if (page.data.unreachable?.length) {
        const error = new McoError(
          'Unavailable',
          `GKE Hub could not reach locations ${page.data.unreachable.join(', ')}: the listing is incomplete`,
          true,
        );
        return { ok: false, reason: 'UnreachableLocations', error };
      }
      memberships.push(...(page.data.resources ?? []));
      pageToken = page.data.nextPageToken || undefined;
      if (pageToken && seenTokens.has(pageToken))
        throw new McoError('Invalid', 'GKE Hub repeated a page token: the listing would never end', false);
      if (pageToken) seenTokens.add(pageToken);
    } while (pageToken);
  } catch (error) {
    if (abort?.aborted) throw error;
    const failure = toMcoError(error, 'list GKE Hub memberships');
    return { ok: false, reason: failure.code === 'Conflict' ? 'Unavailable' : failure.code, error: failure };
  }
  return { ok: true, memberships, pages };
}

/** One GET with a bearer token; a 401 gets one retry with a fresh token. */
async function getJson(url: URL, options: ListMembershipsOptions, abort?: AbortSignal): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    const signal = abort
      ? AbortSignal.any([abort, AbortSignal.timeout(options.timeoutMs)])
      : AbortSignal.timeout(options.timeoutMs);
    const token = await options.tokens.token(signal);
    const response = await (options.fetch ?? fetch)(url, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      signal,
    });
    if (response.status === 401 && attempt === 1) {
      await response.body?.cancel();
      options.tokens.invalidate();
      continue;
    }
    if (!response.ok) {
      const message = await googleErrorMessage(response);
      throw Object.assign(new Error(`GKE Hub answered ${response.status}${message ? `: ${message}` : ''}`), {
        status: response.status,
      });
    }
    return readBoundedJson(response, MAX_PAGE_BYTES);
  }
}

/** `error.message` of a Google API error body (`{"error": {"code", "message", "status"}}`), shortened. */
async function googleErrorMessage(response: Response): Promise<string> {
  try {
    const body = (await readBoundedJson(response, 64 * 1024)) as { error?: { message?: unknown } };
    return typeof body?.error?.message === 'string' ? body.error.message.slice(0, 300) : '';
  } catch {
    return '';
  }
}
