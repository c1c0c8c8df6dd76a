/** Entry point: find the API, render the app, and install the service worker for offline reloads. */
import { render } from 'preact';
import { App } from './components/App.js';
import { loadConfig } from './config.js';
import './styles.css';

const root = document.getElementById('app');
if (!root) throw new Error('index.html has no #app element');

void loadConfig().then((config) => {
  root.textContent = ''; // the "Loading…" placeholder of index.html
  render(<App config={config} />, root);
});

// Only built apps: the dev server's modules change on every edit and must not come from a cache.
if (import.meta.env.PROD && 'serviceWorker' in navigator) {
  void navigator.serviceWorker
    .register('/service-worker.js')
    .catch((error: unknown) => console.warn('Offline start unavailable:', error));
}
