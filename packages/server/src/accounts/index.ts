export { createAccountPolicy, type AccountPolicy } from './policy.js';
export { registerAccounts } from './routes.js';
