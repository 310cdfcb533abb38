/// <reference lib="dom" />
// The dashboard page: Preact components over the View the server streams
// (server-sent events). Bundled with its stylesheet into page.generated.ts by
// scripts/build-dashboard-page.ts; nothing is fetched from elsewhere.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type {
  ClusterView,
  ControllerView,
  LaneSegment,
  PlacementDetail,
  PlacementSummary,
  SignalView,
  View,
} from '../view.js';

type Route = { page: 'fleet' } | { page: 'cluster'; key: string } | { page: 'placement'; key: string };

function parseRoute(hash: string): Route {
  const [page, ...rest] = hash.replace(/^#\/?/, '').split('/');
  const key = rest.map(decodeURIComponent).join('/');
  if (page === 'cluster' && key) return { page: 'cluster', key };
  if (page === 'placement' && key) return { page: 'placement', key };
  return { page: 'fleet' };
}

const href = (page: 'cluster' | 'placement', key: string) =>
  `#/${page}/${key.split('/').map(encodeURIComponent).join('/')}`;

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

type Session = { state: 'loading' } | { state: 'login'; error?: string } | { state: 'in'; user: string; auth: string };

function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session>({ state: 'loading' });
  const [view, setView] = useState<View | undefined>();
  const [live, setLive] = useState(false);
  const selected = route.page === 'placement' ? route.key : undefined;

  const checkSession = () =>
    void fetch('/api/session').then(async (r) => {
      const body = (await r.json()) as { user?: string; auth: string };
      setSession(
        r.ok && body.user !== undefined ? { state: 'in', user: body.user, auth: body.auth } : { state: 'login' },
      );
    });
  useEffect(checkSession, []);

  useEffect(() => {
    if (session.state !== 'in') return undefined;
    const source = new EventSource(`/api/stream${selected ? `?placement=${encodeURIComponent(selected)}` : ''}`);
    source.addEventListener('view', (e) => {
      setView(JSON.parse((e as MessageEvent<string>).data) as View);
      setLive(true);
    });
    source.onerror = () => {
      setLive(false);
      // The browser retries by itself unless the server refused the stream (a session that ended): ask again.
      if (source.readyState === EventSource.CLOSED) checkSession();
    };
    return () => source.close();
  }, [session.state, selected]);

  // After following a link, the focus moves to the new content (not on the first load: Tab starts at the top).
  const first = useRef(true);
  useEffect(() => {
    document.title = `${route.page === 'fleet' ? 'Fleet' : route.key} · mco dashboard`;
    if (first.current) first.current = false;
    else document.getElementById('main')?.focus();
  }, [route.page, route.page === 'fleet' ? '' : route.key]);

  return (
    <>
      <a class="skip" href="#main" onClick={skipToMain}>
        Skip to content
      </a>
      <header>
        <nav aria-label="Main">
          <a href="#/" class="brand" aria-current={route.page === 'fleet' ? 'page' : undefined}>
            mco dashboard
          </a>
        </nav>
        <p class="status" role="status">
          {session.state === 'in' ? (
            <>
              {live && view ? (
                <Controller controller={view.controller} />
              ) : (
                <span class={live ? 'live' : 'offline'}>{live ? 'Live' : 'Reconnecting'}</span>
              )}
              {view ? ` · updated ${new Date(view.now).toLocaleTimeString()}` : ''} · signed in as{' '}
              <strong>{session.user}</strong>
              {session.auth === 'token' ? (
                <button type="button" onClick={() => void logout(setSession)}>
                  Sign out
                </button>
              ) : null}
            </>
          ) : null}
        </p>
      </header>
      <main id="main" tabIndex={-1}>
        {session.state === 'loading' ? <p>Loading…</p> : null}
        {session.state === 'login' ? <Login error={session.error} onDone={setSession} /> : null}
        {session.state === 'in' && !view ? <p>Connecting to the hub…</p> : null}
        {session.state === 'in' && view ? <Page route={route} view={view} /> : null}
      </main>
    </>
  );
}

/** "Live" only while the controller renews its Lease; when it is stale, since when it was last seen. */
function Controller({ controller: c }: { controller: ControllerView }) {
  if (c.stale) {
    return (
      <span class="offline controller">
        Controller not seen since {clock(c.lastSeen!)} (its Lease {c.lease} is older than {c.staleAfter / 1000} s)
      </span>
    );
  }
  return (
    <>
      <span class="live">Live</span>
      <span class="controller">
        {c.lastSeen === undefined
          ? ` · no controller Lease ${c.lease} seen`
          : ` · controller seen ${clock(c.lastSeen)}`}
      </span>
    </>
  );
}

function skipToMain(e: Event) {
  e.preventDefault();
  document.getElementById('main')?.focus();
}

async function logout(setSession: (s: Session) => void) {
  await fetch('/api/logout', { method: 'POST' });
  setSession({ state: 'login' });
}

function Login(props: { error: string | undefined; onDone: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await fetch('/api/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    setToken('');
    const body = (await r.json()) as { user?: string; error?: string };
    props.onDone(r.ok ? { state: 'in', user: body.user ?? '', auth: 'token' } : { state: 'login', error: body.error });
  };
  return (
    <form class="login" onSubmit={(e) => void submit(e)}>
      <h1>Sign in</h1>
      <p>
        Paste a bearer token for the hub. It is checked once and not kept: the dashboard holds only who you are, in a
        session cookie, and shows what your identity may list.
      </p>
      <label for="token">Bearer token</label>
      <input
        id="token"
        type="password"
        autocomplete="off"
        value={token}
        onInput={(e) => setToken((e.target as HTMLInputElement).value)}
      />
      <button type="submit">Sign in</button>
      {props.error ? (
        <p class="error" role="alert">
          {props.error}
        </p>
      ) : null}
    </form>
  );
}

function Page({ route, view }: { route: Route; view: View }) {
  if (!view.synced) return <p>Reading the hub…</p>;
  if (route.page === 'cluster') {
    const cluster = view.clusters.find((c) => c.key === route.key);
    return cluster ? <ClusterPage cluster={cluster} /> : <NotFound what={`cluster ${route.key}`} />;
  }
  if (route.page === 'placement') {
    return view.placement ? (
      <PlacementPage placement={view.placement} now={view.now} />
    ) : (
      <NotFound what={`placement ${route.key}`} />
    );
  }
  return <Fleet view={view} />;
}

function NotFound({ what }: { what: string }) {
  return (
    <>
      <h1>Not found</h1>
      <p>
        There is no {what}, or your identity may not list it. <a href="#/">Back to the fleet</a>
      </p>
    </>
  );
}

/** Rows shown before "Show all": a fleet of thousands renders fast, and the filter finds the rest. */
const FIRST_ROWS = 100;

function Fleet({ view }: { view: View }) {
  const [filter, setFilter] = useState('');
  const [all, setAll] = useState(false);
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const matches = (text: string) => words.every((w) => text.toLowerCase().includes(w));
  const clusters = view.clusters.filter((c) =>
    matches(
      [
        c.key,
        c.health,
        ...c.taints,
        ...Object.entries(c.labels).map(([k, v]) => `${k}=${v}`),
        ...c.placements.map((p) => p.signal?.status ?? ''),
      ].join(' '),
    ),
  );
  const placements = view.placements.filter((p) =>
    matches([p.key, ...p.clusters.map((c) => `${c.key} ${c.signal?.status ?? ''}`)].join(' ')),
  );
  const limit = all ? Infinity : FIRST_ROWS;
  const more = !all && (clusters.length > limit || placements.length > limit);
  return (
    <>
      <h1>Fleet</h1>
      <p class="filter">
        <label for="filter">Filter</label>{' '}
        <input
          id="filter"
          type="search"
          value={filter}
          placeholder="name, label=value, taint, stale…"
          onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
        />
        {more ? (
          <button type="button" onClick={() => setAll(true)}>
            Show all rows
          </button>
        ) : null}
      </p>
      <section aria-labelledby="clusters-h">
        <h2 id="clusters-h">Clusters ({shown(clusters.length, limit, view.clusters.length)})</h2>
        <table class="clusters">
          <Head cols={['Cluster', 'Health', 'Taints', 'Labels', 'Properties', 'Placements']} />
          <tbody>
            {clusters.slice(0, limit).map((c) => (
              <ClusterRow key={c.key} cluster={c} />
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="placements-h">
        <h2 id="placements-h">Placements ({shown(placements.length, limit, view.placements.length)})</h2>
        <table class="placements">
          <Head cols={['Placement', 'Valid', 'Satisfied', 'Clusters']} />
          <tbody>
            {placements.slice(0, limit).map((p) => (
              <PlacementRow key={p.key} placement={p} />
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}

/** "12", "100 of 250 shown" or "3 of 12 match". */
function shown(matching: number, limit: number, total: number): string {
  if (matching > limit) return `${limit} of ${matching} shown`;
  return matching === total ? String(total) : `${matching} of ${total} match`;
}

function ClusterRow({ cluster: c }: { cluster: ClusterView }) {
  return (
    <tr data-cluster={c.key}>
      <th scope="row">
        <a href={href('cluster', c.key)}>{c.key}</a>
        {c.deleting ? <span class="badge warn"> deleting</span> : null}
      </th>
      <td>
        <span class={`badge ${c.health.toLowerCase()}`}>{c.health}</span>
      </td>
      <td class="taints">
        {c.draining ? <span class="badge bad">draining</span> : null}
        {c.cordoned ? <span class="badge warn">cordoned</span> : null}
        {c.taints.length === 0 ? '–' : null}
      </td>
      <td class="labels">
        <KeyValues values={c.labels} />
      </td>
      <td>
        <KeyValues values={c.properties} />
      </td>
      <td>
        {c.placements.length === 0
          ? '–'
          : c.placements.map((p, i) => (
              <span key={p.key}>
                {i > 0 ? ', ' : ''}
                <a href={href('placement', p.key)}>{p.key}</a> <State state={p.state} />
                <Signal signal={p.signal} />
              </span>
            ))}
      </td>
    </tr>
  );
}

function Head({ cols }: { cols: readonly string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

function KeyValues({ values }: { values: Readonly<Record<string, string>> }) {
  const entries = Object.entries(values);
  if (entries.length === 0) return <>–</>;
  return (
    <ul class="kv">
      {entries.map(([k, v]) => (
        <li key={k}>
          <code>
            {k}={v}
          </code>
        </li>
      ))}
    </ul>
  );
}

function State({ state }: { state: string }) {
  return <span class={`state s-${state.toLowerCase()}`}>{state === '-' ? 'not listed' : state}</span>;
}

/** A cluster's capacity signal in one placement; nothing when the placement reads no signals. */
function Signal({ signal, withWhy }: { signal: SignalView | undefined; withWhy?: boolean }) {
  if (!signal) return null;
  return (
    <>
      <span class={`badge signal-${signal.status.replace(' ', '-')}`}>
        {signal.status === 'at ceiling' ? 'at ceiling' : `signal ${signal.status}`}
      </span>
      {withWhy && signal.why ? <span class="why">{signal.why}</span> : null}
    </>
  );
}

function PlacementRow({ placement: p }: { placement: PlacementSummary }) {
  return (
    <tr data-placement={p.key}>
      <th scope="row">
        <a href={href('placement', p.key)}>{p.key}</a>
      </th>
      <td>{p.valid ?? '–'}</td>
      <td>{p.satisfied ?? '–'}</td>
      <td>
        {p.clusters.length === 0
          ? 'none'
          : p.clusters.map((c, i) => (
              <span key={c.key}>
                {i > 0 ? ', ' : ''}
                <a href={href('cluster', c.key)}>{c.key}</a> <State state={c.state} />
              </span>
            ))}
      </td>
    </tr>
  );
}

function ClusterPage({ cluster: c }: { cluster: ClusterView }) {
  return (
    <>
      <p>
        <a href="#/">Fleet</a> › cluster
      </p>
      <h1>Cluster {c.key}</h1>
      <dl class="facts">
        <dt>Health</dt>
        <dd>
          <span class={`badge ${c.health.toLowerCase()}`}>{c.health}</span> {c.healthMessage ?? ''}
        </dd>
        <dt>Taints</dt>
        <dd class="taints">
          {c.draining ? <span class="badge bad">draining</span> : null}
          {c.cordoned ? <span class="badge warn">cordoned</span> : null}
          {c.taints.length ? c.taints.map((t) => <code key={t}>{t}</code>) : 'none'}
        </dd>
        <dt>Labels</dt>
        <dd>
          <KeyValues values={c.labels} />
        </dd>
        <dt>Properties</dt>
        <dd>
          <KeyValues values={c.properties} />
        </dd>
      </dl>
      <h2>Placements on this cluster</h2>
      {c.placements.length === 0 ? (
        <p>None.</p>
      ) : (
        <ul>
          {c.placements.map((p) => (
            <li key={p.key}>
              <a href={href('placement', p.key)}>{p.key}</a> <State state={p.state} />
              <Signal signal={p.signal} withWhy />
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function PlacementPage({ placement: p, now }: { placement: PlacementDetail; now: number }) {
  return (
    <>
      <p>
        <a href="#/">Fleet</a> › placement
      </p>
      <h1>Placement {p.key}</h1>
      <section aria-labelledby="conditions-h">
        <h2 id="conditions-h">Conditions</h2>
        <table>
          <Head cols={['Type', 'Status', 'Reason', 'Message']} />
          <tbody>
            {p.conditions.map((c) => (
              <tr key={c.type}>
                <th scope="row">{c.type}</th>
                <td>{c.status}</td>
                <td>{c.reason ?? ''}</td>
                <td>{c.message ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="clusters-h">
        <h2 id="clusters-h">Clusters</h2>
        <table class="placed">
          <Head cols={['Cluster', 'State', 'Capacity signal', 'Draining to', 'Since', 'Why']} />
          <tbody>
            {p.clusters.map((c) => (
              <tr key={c.key} data-cluster={c.key}>
                <th scope="row">
                  <a href={href('cluster', c.key)}>{c.key}</a>
                </th>
                <td>
                  <State state={c.state} />
                </td>
                <td class="signal">{c.signal ? <Signal signal={c.signal} withWhy /> : 'not read'}</td>
                <td>{c.desiredMaxReplicas === undefined ? '–' : `maxReplicas ${c.desiredMaxReplicas}`}</td>
                <td>{c.since ?? ''}</td>
                <td>{c.message ?? c.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <Lanes placement={p} now={now} />
      <section aria-labelledby="explain-h">
        <h2 id="explain-h">Explain (live)</h2>
        {p.explain.notes.map((n) => (
          <p key={n} class="note">
            {n}
          </p>
        ))}
        <table class="explain">
          <Head cols={['Cluster', 'Eligible', 'Priority', 'Score', 'Signal', 'State', 'Why']} />
          <tbody>
            {p.explain.rows.map((r) => (
              <tr key={r.cluster}>
                <th scope="row">
                  <a href={href('cluster', r.cluster)}>{r.cluster}</a>
                </th>
                <td>{r.eligible}</td>
                <td>{r.priority}</td>
                <td>{r.score}</td>
                <td>{r.signal}</td>
                <td>{r.state}</td>
                <td>{r.why}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="delivery-h">
        <h2 id="delivery-h">Delivery</h2>
        {p.delivery.length === 0 ? (
          <p>No Argo CD Application or Flux object on the hub names this placement.</p>
        ) : (
          <ul>
            {p.delivery.map((d) => (
              <li key={`${d.kind}/${d.name}`}>
                {d.cluster}: {d.kind} {d.name}: {d.status}
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="events-h">
        <h2 id="events-h">Events</h2>
        {p.events.length === 0 ? (
          <p>None.</p>
        ) : (
          <table class="events">
            <Head cols={['Last seen', 'Type', 'Reason', 'Message', 'Count']} />
            <tbody>
              {p.events.map((e, i) => (
                <tr key={i}>
                  <td>{e.at}</td>
                  <td>{e.type}</td>
                  <td>{e.reason}</td>
                  <td>{e.message}</td>
                  <td>{e.count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

const clock = (ms: number) => new Date(ms).toLocaleTimeString();

/** The time windows the lanes can show, in minutes; the first is the default. */
const WINDOWS = [15, 60, 360, 1440] as const;

/**
 * Per cluster, its states over the chosen time window as a bar of segments,
 * each as wide as its share of the window but never narrower than its label
 * (the bar scrolls when they do not fit); each segment is also a list item for
 * screen readers.
 */
function Lanes({ placement: p, now }: { placement: PlacementDetail; now: number }) {
  const [minutes, setMinutes] = useState<number>(WINDOWS[0]);
  const since = Math.max(p.lanesSince, now - minutes * 60_000);
  const seconds = (from: number, to: number) => Math.max(0, (Math.min(to, now) - Math.max(from, since)) / 1000);
  const inWindow = (s: LaneSegment) => (s.to ?? now) > since;
  const earlier = p.lanes.reduce((n, lane) => n + lane.segments.filter((s) => !inWindow(s)).length, 0);
  return (
    <section aria-labelledby="lanes-h">
      <h2 id="lanes-h">States over time</h2>
      <p class="note">
        <label for="lanes-window">Window </label>
        <select
          id="lanes-window"
          value={minutes}
          onChange={(e) => setMinutes(Number((e.target as HTMLSelectElement).value))}
        >
          {WINDOWS.map((m) => (
            <option key={m} value={m}>
              last {m < 60 ? `${m} minutes` : `${m / 60} h`}
            </option>
          ))}
        </select>{' '}
        from {clock(since)} to {clock(now)}: remembered since the dashboard started, the first stretch from the status'
        lastTransitionTime{earlier > 0 ? `; ${earlier} earlier stretches are outside the window` : ''}.
      </p>
      {p.lanes.map((lane) => {
        const shown = lane.segments.filter(inWindow);
        const gap = shown[0] ? seconds(since, shown[0].from) : 0;
        return (
          <div class="lane" key={lane.cluster}>
            <div class="lane-name">
              <a href={href('cluster', lane.cluster)}>{lane.cluster}</a>
            </div>
            <ol class="lane-bar" aria-label={`states of ${lane.cluster}`}>
              {gap > 0 ? <li class="gap" aria-hidden="true" style={{ flexGrow: gap }} /> : null}
              {shown.map((s) => (
                <li
                  key={s.from}
                  class={`seg s-${s.state.toLowerCase()}`}
                  style={{ flexGrow: seconds(s.from, s.to ?? now) }}
                  title={`${s.state} from ${clock(s.from)}${s.to ? ` to ${clock(s.to)}` : ''}`}
                >
                  <span class="seg-label">
                    {s.state === '-' ? 'not listed' : s.state}
                    {s.desiredMaxReplicas !== undefined ? ` → ${s.desiredMaxReplicas}` : ''}
                  </span>
                  <span class="visually-hidden">
                    {' '}
                    from {clock(s.from)}
                    {s.to ? ` to ${clock(s.to)}` : ' until now'}
                  </span>
                </li>
              ))}
            </ol>
          </div>
        );
      })}
    </section>
  );
}

render(<App />, document.getElementById('app')!);
