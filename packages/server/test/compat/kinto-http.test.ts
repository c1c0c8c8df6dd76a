/** The published `kinto-http` client against one Quire server on a fresh embedded store (kinto-http-scenarios.ts). */
import { describeKintoHttp } from './kinto-http-scenarios.js';
import { startEmbeddedTarget } from './embedded-target.js';

describeKintoHttp('Quire (embedded store)', startEmbeddedTarget);
