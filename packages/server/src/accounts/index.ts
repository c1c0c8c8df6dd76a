export { registerClientAddressHook } from './client-address.js';
export { createAccountPolicy, type AccountPolicy } from './policy.js';
export { registerAccounts } from './routes.js';
