/**
 * Closing the connection of an upload answered before its body was read (a refusal: 403, 413,
 * 408…). Closing a socket with unread bytes makes the kernel send a reset, which a client still
 * sending its body sees as ECONNRESET — often instead of the answer it was sent. So, as web
 * servers' "lingering close" does: once the answer is written, the sending side is shut (FIN),
 * what the client still sends is read and dropped, and the socket is closed when the client
 * stops (its FIN) or after `lingerMs`, whichever comes first: bounded in time, no memory kept.
 */
import type { IncomingMessage } from 'node:http';

/** Arranges the lingering close of `raw`'s connection (its answer must say `Connection: close`). */
export function lingerAfterAnswer(raw: IncomingMessage, lingerMs: number): void {
  const socket = raw.socket;
  if (lingerMs <= 0 || !socket || socket.destroyed) return;
  // Node calls destroySoon() once an answer with `Connection: close` is written.
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    socket.once('end', () => socket.destroy());
    socket.once('close', () => clearTimeout(timer));
    raw.resume();
    socket.resume();
  };
}
