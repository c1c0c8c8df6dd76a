/** Where the Quire API is: `/config.json` written by the demo launcher, else port 8888 of this host. */
export interface AppConfig {
  /** The server root with its version prefix, e.g. `http://127.0.0.1:8888/v1`. */
  remote: string;
}

export async function loadConfig(): Promise<AppConfig> {
  try {
    const response = await fetch('/config.json', { cache: 'no-store' });
    if (response.ok) {
      const body = (await response.json()) as { remote?: unknown };
      if (typeof body.remote === 'string' && body.remote !== '') return { remote: body.remote };
    }
  } catch {
    // No launcher (e.g. `vite` dev server) or offline without a cached copy: use the default.
  }
  return { remote: `${location.protocol}//${location.hostname}:8888/v1` };
}
