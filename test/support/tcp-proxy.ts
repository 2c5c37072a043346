import net from 'node:net';

// A TCP proxy in front of the shared PostgreSQL that a test can cut, for the outage tests:
// processes pointed at it lose their database the way they would if the server or the
// network went away, while the database itself (and the test's own direct connection to
// it) stays up.
//
// - `cut('refuse')`: every open connection is reset and new ones are refused, as when
//   PostgreSQL is down or restarting (ECONNRESET, then ECONNREFUSED).
// - `cut('blackhole')`: open connections are reset, new ones are accepted and never
//   answered, as when a network partition swallows packets: only the clients' own
//   timeouts can end a wait.
// - `restore()`: connections are forwarded again.
// - `hold()`: what the clients send is kept in the proxy, not forwarded, while the
//   server's answers still reach them; `release()` forwards it and resumes. A client held
//   is a client whose next statement is late (a slow or descheduled process), so a test
//   can make something happen between two statements of one session, deterministically.

export type CutMode = 'refuse' | 'blackhole';

export interface TcpProxy {
  port: number;
  /** A copy of `url` with its host and port replaced by the proxy's. */
  url(url: string): string;
  cut(mode?: CutMode): Promise<void>;
  restore(): Promise<void>;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: 'forward' | CutMode = 'forward';
  let held = false;
  const sockets = new Set<net.Socket>();
  /** Each forwarded connection's client side and its upstream, for hold() and release(). */
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let port = 0;

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const server = net.createServer((client) => {
    track(client);
    if (mode === 'blackhole') {
      // Accepted, read and never answered.
      client.on('data', () => {});
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    const pair = { client, upstream };
    pairs.add(pair);
    if (held) client.pause();
    else client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => {
      pairs.delete(pair);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  });

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        port = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const stopListening = () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  const resetAll = () => {
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
  };

  await listen();

  return {
    get port() {
      return port;
    },
    url(url: string) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    async cut(how: CutMode = 'refuse') {
      mode = how;
      if (how === 'refuse') await Promise.all([stopListening(), Promise.resolve(resetAll())]);
      else resetAll();
    },
    async restore() {
      // Whatever a blackhole accepted is dropped, as a partition's half-open connections are.
      resetAll();
      mode = 'forward';
      if (!server.listening) await listen();
    },
    hold() {
      held = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        client.pause();
      }
    },
    release() {
      if (!held) return;
      held = false;
      for (const { client, upstream } of pairs) client.pipe(upstream);
    },
    async close() {
      resetAll();
      await stopListening();
    },
  };
}
