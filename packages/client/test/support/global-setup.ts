/** One real server (embedded store) shared by every client test file; each test uses its own bucket. */
import type { TestProject } from 'vitest/node';
import { startServer } from './server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    quireUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Some tests reach it through a TCP proxy of their own (support/faults.ts), as clients reach a
  // deployment through a proxy: Next-Page must then name the proxy's address, the Host they
  // sent, which the server only echoes behind a trusted proxy (or with http_host).
  const server = await startServer({ trust_proxy: true });
  project.provide('quireUrl', server.url);
  return () => server.close();
}
