/**
 * The scheme and host of the absolute URLs the server writes: redirects' Location, Next-Page,
 * `url` of `GET /`, OpenAPI's host. Echoing any Host header let a client (or a cache in front)
 * get `Location: http://evil.example/…` (issue 19.9). In order:
 *
 * 1. `http_host` when set: the server's public name (behind a proxy);
 * 2. behind a proxy that sets it (`trust_proxy`), the forwarded host, else the Host header;
 * 3. the Host header when it names the address the request came in on (`127.0.0.1:8888`, or
 *    `localhost:8888` on loopback) or is listed in `http_allowed_hosts`: clients follow Next-Page
 *    through the address they used, and these are addresses they already reach this server by;
 * 4. otherwise the address the request came in on (`<local address>:<port>`).
 *
 * Requests injected by this process (batch sub-requests, `/buckets/default`) carry the host
 * their parent resolved (`inheritedHeaders`), so their Host is trusted as it is.
 * The scheme is `http_scheme`, else the request's (`X-Forwarded-Proto` only with `trust_proxy`).
 */
import type { FastifyRequest } from 'fastify';
import { isIP } from 'node:net';
import type { HttpSettings } from './settings.js';

/** A host name or address with an optional port; nothing else may reach a URL we write. */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';
const HOST = new RegExp(`^(?:${LABEL}(?:\\.${LABEL})*\\.?|\\[[0-9A-Fa-f:.]+\\])(?::\\d{1,5})?$`);

function isInjected(request: FastifyRequest): boolean {
  return (request.raw as { isLightMyRequest?: boolean }).isLightMyRequest === true;
}

/** `::ffff:127.0.0.1` → `127.0.0.1`; IPv6 in brackets, as in a Host header. */
function hostOfAddress(address: string): string {
  const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  return isIP(plain) === 6 ? `[${plain.toLowerCase()}]` : plain;
}

function isLoopback(address: string): boolean {
  return address === '[::1]' || /^127\./.test(address);
}

/** `name:port` of the socket the request came in on, or null (no socket: a test's inject). */
function localHost(request: FastifyRequest): { name: string; port: number } | null {
  const socket = request.raw.socket as { localAddress?: string; localPort?: number } | undefined;
  if (!socket?.localAddress || !socket.localPort) return null;
  return { name: hostOfAddress(socket.localAddress), port: socket.localPort };
}

/** Splits `name[:port]`; the port defaults to the scheme's. */
function splitHost(host: string, scheme: string): { name: string; port: number } {
  const match = /^(.*?)(?::(\d+))?$/.exec(host)!;
  return { name: (match[1] ?? '').toLowerCase(), port: match[2] ? Number(match[2]) : scheme === 'https' ? 443 : 80 };
}

export function requestScheme(settings: HttpSettings, request: FastifyRequest): string {
  return settings.http_scheme ?? request.protocol;
}

/** The host of the absolute URLs answered to `request` (see above). */
export function requestHost(settings: HttpSettings, request: FastifyRequest): string {
  if (settings.http_host) return settings.http_host;
  const given = typeof request.host === 'string' && HOST.test(request.host) ? request.host : null;
  if (given && (settings.trust_proxy || isInjected(request))) return given;
  const local = localHost(request);
  if (given) {
    if (settings.http_allowed_hosts.some((allowed) => allowed.toLowerCase() === given.toLowerCase())) return given;
    const { name, port } = splitHost(given, requestScheme(settings, request));
    if (local && port === local.port && (name === local.name || (name === 'localhost' && isLoopback(local.name))))
      return given;
  }
  if (local) return `${local.name}:${local.port}`;
  return given ?? 'localhost';
}

export function baseUrl(settings: HttpSettings, request: FastifyRequest): string {
  return `${requestScheme(settings, request)}://${requestHost(settings, request)}`;
}
