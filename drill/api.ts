import superjson from 'superjson';

// The drill's clients meet the product where programs do: over HTTP with an API key,
// tRPC at /api/trpc (superjson) and the plain JSON /api/v1. Every answer is sorted into
// what the client was told: accepted (2xx), refused (a 4xx with the API's reason), or
// error (a 5xx, a dropped connection, a timeout: the client does not know what happened).

export type Told = 'accepted' | 'refused' | 'error';

export interface Answer<T = unknown> {
  told: Told;
  status: number | null;
  data?: T;
  /** tRPC error code (CONFLICT, BAD_REQUEST, ...) or the network error's name. */
  code?: string;
  message?: string;
  conflict?: unknown;
}

function classify(status: number): Told {
  if (status >= 200 && status < 300) return 'accepted';
  if (status >= 400 && status < 500 && status !== 408) return 'refused';
  return 'error';
}

export class Api {
  constructor(
    private readonly base: () => string,
    private readonly key: string,
    private readonly timeoutMs = 30_000,
  ) {}

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' };
  }

  private async send<T>(url: string, init: RequestInit, parse: (status: number, text: string) => Answer<T>): Promise<Answer<T>> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { ...init, headers: this.headers(), signal: AbortSignal.timeout(this.timeoutMs) });
      text = await res.text();
    } catch (error) {
      const e = error as Error & { cause?: { code?: string } };
      return { told: 'error', status: null, code: e.cause?.code ?? e.name, message: e.message };
    }
    try {
      return parse(res.status, text);
    } catch {
      return { told: classify(res.status) === 'accepted' ? 'error' : classify(res.status), status: res.status, message: text.slice(0, 300) };
    }
  }

  /** A tRPC mutation (POST) or query (GET). */
  trpc<T>(path: string, input: unknown, kind: 'mutation' | 'query' = 'mutation'): Promise<Answer<T>> {
    const encoded = JSON.stringify(superjson.serialize(input));
    const url = kind === 'mutation' ? `${this.base()}/api/trpc/${path}` : `${this.base()}/api/trpc/${path}?input=${encodeURIComponent(encoded)}`;
    const init: RequestInit = kind === 'mutation' ? { method: 'POST', body: encoded } : { method: 'GET' };
    return this.send<T>(url, init, (status, text) => {
      const body = JSON.parse(text) as { result?: { data: never }; error?: never };
      if (body.error) {
        const error = superjson.deserialize(body.error) as { message: string; data?: { code: string; conflict?: unknown } };
        return { told: classify(status), status, code: error.data?.code, message: error.message, conflict: error.data?.conflict };
      }
      return { told: classify(status), status, data: superjson.deserialize(body.result!.data) as T };
    });
  }

  /** POST /api/v1/<path> with a JSON body. */
  v1<T>(path: string, body: unknown): Promise<Answer<T>> {
    return this.send<T>(`${this.base()}/api/v1/${path}`, { method: 'POST', body: JSON.stringify(body) }, (status, text) => {
      const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      if (status >= 200 && status < 300) return { told: 'accepted', status, data: parsed as T };
      return { told: classify(status), status, code: String(parsed.code ?? status), message: String(parsed.message ?? text.slice(0, 300)) };
    });
  }
}

/** One line of the clients' log: what was asked, and what the client was told. */
export interface LogEntry {
  at: string;
  client: string;
  op: string;
  told: Told;
  status: number | null;
  code?: string;
  /** What the answer named: an execution, an event, a repair's target. */
  executionId?: string;
  eventId?: string;
  email?: string;
  detail?: unknown;
}

export class ClientLog {
  readonly entries: LogEntry[] = [];
  add(e: Omit<LogEntry, 'at'>): void {
    this.entries.push({ at: new Date().toISOString(), ...e });
  }
  count(filter: (e: LogEntry) => boolean): number {
    return this.entries.reduce((n, e) => n + (filter(e) ? 1 : 0), 0);
  }
}
