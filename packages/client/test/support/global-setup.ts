/** One real server (embedded store) shared by every client test file; each test uses its own bucket. */
import type { TestProject } from 'vitest/node';
import { startServer } from './server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    quireUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startServer();
  project.provide('quireUrl', server.url);
  return () => server.close();
}
