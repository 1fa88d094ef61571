/**
 * `@durable-agents/engine-restate`: Durable Agents sessions driven by Restate. `restateSessions`
 * builds the services to bind to a Restate endpoint; `RestateSessionStore` is core's `SessionStore`
 * over Restate's ingress, for core's `SessionClient`.
 */
export { restateSessions, type RestateSessions, type RestateSessionsOptions } from "./restate-sessions.js";
export { RestateSessionStore, type RestateSessionStoreOptions } from "./restate-store.js";
export { IngressClient, type IngressOptions, type RequestOptions } from "./ingress.js";
export { serviceNames, type ServiceNames } from "./names.js";
export type { EngineServiceOptions } from "./drive.js";
export { registerDeployment } from "./register.js";
