/**
 * Cancelling the statement a connection is running, as libpq's PQcancel does:
 * a CancelRequest on a new connection to the same server, quoting the process
 * id and secret key the server gave the client at start-up. The server (or a
 * pooler, which maps its own keys to the server connection the client has at
 * that moment) interrupts the statement with SQLSTATE 57014; a backend that is
 * idle ignores it. Closing the client's socket does not do this: a backend
 * busy in a statement notices a gone client only when it next writes to it.
 *
 * It needs no privilege and no free connection slot (the server answers a
 * cancel before counting connections). Sent in the clear, as pg does.
 */
import net from 'node:net';
import type pg from 'pg';

/** Code of a CancelRequest (the protocol's 1234 << 16 | 5678). */
const CANCEL_REQUEST_CODE = 80877102;
/** A server that neither takes the request nor closes within this long is left alone. */
const CONNECT_TIMEOUT_MS = 5000;

interface Keyed {
  processID?: unknown;
  secretKey?: unknown;
  host?: unknown;
  port?: unknown;
}

/**
 * Asks the server to cancel the statement `client` is running. Never throws;
 * resolves true once the request was sent, false when it could not be (no key
 * from the server, or the server was not reached).
 */
export function cancelStatement(client: pg.ClientBase): Promise<boolean> {
  const { processID, secretKey, host, port } = client as unknown as Keyed;
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return Promise.resolve(false);
  const where = typeof host === 'string' ? host : 'localhost';
  const portNumber = typeof port === 'number' ? port : Number(port ?? 5432);
  return new Promise((resolve) => {
    // A host that is a folder is a Unix socket's, as libpq and pg read it.
    const socket = where.startsWith('/')
      ? net.connect(`${where}/.s.PGSQL.${portNumber}`)
      : net.connect(portNumber, where);
    let sent = false;
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => {});
    socket.on('close', () => resolve(sent));
    socket.on('connect', () => {
      const message = Buffer.alloc(16);
      message.writeInt32BE(16, 0);
      message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      message.writeInt32BE(processID, 8);
      message.writeInt32BE(secretKey, 12);
      sent = true;
      // The server closes the connection once it has acted on it; closing first drops the
      // request at a pooler (PgBouncer forgets a cancel whose client has gone), as libpq knows.
      socket.write(message);
    });
    socket.on('end', () => socket.end());
  });
}
