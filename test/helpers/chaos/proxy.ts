/**
 * A TCP proxy in front of PostgreSQL that can stop forwarding without closing
 * anything: the failure a firewall, a dead NAT entry or a half-open connection
 * causes, which neither side notices until it times out.
 *
 * Each connection is named by the `application_name` of its startup message
 * (jobvisor's pool says `jobvisor`, the listener `jobvisor-listener`, task pools
 * `jobvisor-task`), so a test can freeze one kind of connection only.
 *
 * States of a connection: forwarding ⇄ frozen → closed. A frozen connection
 * holds what it reads and stops reading (TCP back-pressure does the rest); a
 * thaw delivers what was held, in order: late writes arrive late, as they would
 * after a network partition heals.
 * `cut()` freezes every connection, including new ones (accepted, never
 * forwarded: connecting hangs as it does behind a black hole); `heal()` undoes it.
 * `retarget()` moves the endpoint to another server (a failover behind a
 * Service): new connections go there, open ones stay with the old one.
 */
import { createServer, Socket, type Server } from 'node:net';

export interface ProxiedConnection {
  readonly id: number;
  /** application_name from the startup message ('' until it arrived). */
  applicationName: string;
  frozen: boolean;
  closed: boolean;
  /** Bytes forwarded client → server and server → client. */
  bytesUp: number;
  bytesDown: number;
  /** Port of the server this connection was forwarded to. */
  targetPort: number;
}

interface Pipe extends ProxiedConnection {
  client: Socket;
  server: Socket;
  heldUp: Buffer[];
  heldDown: Buffer[];
  startup: Buffer;
  named: boolean;
}

export interface Proxy {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  connections(): ProxiedConnection[];
  /** Freezes open connections matching `which` (e.g. by applicationName). Returns how many. */
  freeze(which: (c: ProxiedConnection) => boolean): number;
  /** Freezes everything now and every connection opened until heal(). */
  cut(): void;
  /** Thaws every connection (delivering what was held) and forwards new ones again. */
  heal(): void;
  /** Closes every connection (both sides) matching `which`. */
  drop(which: (c: ProxiedConnection) => boolean): number;
  /**
   * Sends new connections to another server; open ones stay where they are (as
   * when a Kubernetes Service's endpoints change).
   */
  retarget(target: { host?: string; port: number }): void;
  close(): Promise<void>;
}

export async function startProxy(target: { host?: string; port: number }): Promise<Proxy> {
  let host = target.host ?? '127.0.0.1';
  let targetPort = target.port;
  const pipes = new Set<Pipe>();
  let nextId = 1;
  let cutAll = false;

  const thaw = (p: Pipe) => {
    if (!p.frozen || p.closed) return;
    p.frozen = false;
    for (const chunk of p.heldUp.splice(0)) write(p, 'up', chunk);
    for (const chunk of p.heldDown.splice(0)) write(p, 'down', chunk);
    p.client.resume();
    p.server.resume();
  };

  const write = (p: Pipe, direction: 'up' | 'down', chunk: Buffer) => {
    if (direction === 'up') {
      p.bytesUp += chunk.length;
      p.server.write(chunk);
    } else {
      p.bytesDown += chunk.length;
      p.client.write(chunk);
    }
  };

  const freezeOne = (p: Pipe) => {
    if (p.closed) return;
    p.frozen = true;
    p.client.pause();
    p.server.pause();
  };

  const closeOne = (p: Pipe) => {
    if (p.closed) return;
    p.closed = true;
    pipes.delete(p);
    p.client.destroy();
    p.server.destroy();
  };

  const server: Server = createServer((client) => {
    const upstream = new Socket();
    const p: Pipe = {
      id: nextId++,
      applicationName: '',
      frozen: false,
      closed: false,
      bytesUp: 0,
      bytesDown: 0,
      targetPort,
      client,
      server: upstream,
      heldUp: [],
      heldDown: [],
      startup: Buffer.alloc(0),
      named: false,
    };
    pipes.add(p);
    client.setNoDelay(true);
    client.on('data', (chunk: Buffer) => {
      if (!p.named) {
        p.startup = Buffer.concat([p.startup, chunk]);
        const name = applicationNameOf(p.startup);
        if (name !== undefined) {
          p.named = true;
          p.applicationName = name;
          p.startup = Buffer.alloc(0);
        }
      }
      if (p.frozen) p.heldUp.push(chunk);
      else write(p, 'up', chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (p.frozen) p.heldDown.push(chunk);
      else write(p, 'down', chunk);
    });
    client.on('error', () => closeOne(p));
    upstream.on('error', () => closeOne(p));
    client.on('close', () => closeOne(p));
    upstream.on('close', () => closeOne(p));
    if (cutAll) freezeOne(p);
    upstream.connect(targetPort, host);
    upstream.setNoDelay(true);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    port,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    connections: () =>
      [...pipes].map(({ id, applicationName, frozen, closed, bytesUp, bytesDown, targetPort: port }) => ({
        id,
        applicationName,
        frozen,
        closed,
        bytesUp,
        bytesDown,
        targetPort: port,
      })),
    freeze(which) {
      let n = 0;
      for (const p of pipes) {
        if (!p.frozen && which(p)) {
          freezeOne(p);
          n++;
        }
      }
      return n;
    },
    cut() {
      cutAll = true;
      for (const p of pipes) freezeOne(p);
    },
    heal() {
      cutAll = false;
      for (const p of pipes) thaw(p);
    },
    drop(which) {
      let n = 0;
      for (const p of [...pipes]) {
        if (which(p)) {
          closeOne(p);
          n++;
        }
      }
      return n;
    },
    retarget(next) {
      host = next.host ?? '127.0.0.1';
      targetPort = next.port;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const p of [...pipes]) closeOne(p);
        server.close(() => resolve());
      }),
  };
}

/**
 * application_name from a PostgreSQL StartupMessage (int32 length, int32
 * protocol 3.0, then name\0value\0 pairs), or undefined while incomplete.
 * An SSLRequest or a message without the parameter gives '?'.
 */
export function applicationNameOf(buffer: Buffer): string | undefined {
  if (buffer.length < 8) return undefined;
  const length = buffer.readInt32BE(0);
  if (buffer.length < length) return undefined;
  if (buffer.readInt32BE(4) !== 196608) return '?';
  const fields = buffer.subarray(8, length).toString('utf8').split('\u0000');
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'application_name') return fields[i + 1] ?? '?';
  return '?';
}
