/** Entry point of Quire Console. */
import { render } from 'preact';
import { App } from './components/App.js';
import './styles.css';

const root = document.getElementById('app');
if (!root) throw new Error('index.html has no #app element');
root.textContent = '';
render(<App />, root);
