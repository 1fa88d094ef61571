/**
 * `@durable-agents/engine-restate/testing`: a private `restate-server` for tests (from the
 * `@restatedev/restate-server` npm package), its admin API, a vitest global setup, and the harness
 * that runs core's session suite on Restate.
 */
export {
  startRestateServer,
  restateServerBinary,
  freePort,
  type RestateServer,
  type StartRestateServerOptions,
} from "./restate-server.js";
export { registerDeployment, queryRestate, killInvocations } from "./admin.js";
export {
  restateConformance,
  restatePinningReason,
  RestateTestEnv,
  quietLogger,
  type RestateConformanceOptions,
} from "./conformance.js";
export {
  restateGlobalSetup,
  RESTATE_INGRESS_VARIABLE,
  RESTATE_ADMIN_VARIABLE,
  restateFromEnv,
} from "./global-setup.js";
