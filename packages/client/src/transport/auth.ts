/** Authorization header values for the supported schemes. */

export type Auth =
  | { type: 'basic'; username: string; password: string }
  | { type: 'bearer'; token: string; scheme?: string }
  /** A ready-made header value, or a function returning one (e.g. a refreshed token). */
  | { type: 'header'; value: string | (() => string | Promise<string>) };

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export async function authorizationHeader(auth: Auth | undefined): Promise<string | null> {
  if (!auth) return null;
  switch (auth.type) {
    case 'basic':
      return `Basic ${base64(`${auth.username}:${auth.password}`)}`;
    case 'bearer':
      return `${auth.scheme ?? 'Bearer'} ${auth.token}`;
    case 'header':
      return typeof auth.value === 'function' ? await auth.value() : auth.value;
  }
}
