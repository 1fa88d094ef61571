/**
 * A vitest global setup: one private `restate-server` for the whole test run, its URLs in
 * `DURABLE_AGENTS_RESTATE_INGRESS` and `DURABLE_AGENTS_RESTATE_ADMIN`, stopped and removed at the
 * end. When both variables are already set, that server is used and nothing is started.
 */
import { startRestateServer } from "./restate-server.js";

export const RESTATE_INGRESS_VARIABLE = "DURABLE_AGENTS_RESTATE_INGRESS";
export const RESTATE_ADMIN_VARIABLE = "DURABLE_AGENTS_RESTATE_ADMIN";

/** The URLs the global setup published. */
export function restateFromEnv(): { ingressUrl: string; adminUrl: string } {
  const ingressUrl = process.env[RESTATE_INGRESS_VARIABLE];
  const adminUrl = process.env[RESTATE_ADMIN_VARIABLE];
  if (!ingressUrl || !adminUrl) {
    throw new Error(
      `${RESTATE_INGRESS_VARIABLE} and ${RESTATE_ADMIN_VARIABLE} are not set: add @durable-agents/engine-restate/testing/global-setup to vitest's globalSetup`,
    );
  }
  return { ingressUrl, adminUrl };
}

export async function restateGlobalSetup(): Promise<() => Promise<void>> {
  if (process.env[RESTATE_INGRESS_VARIABLE] && process.env[RESTATE_ADMIN_VARIABLE]) return async () => {};
  const server = await startRestateServer();
  process.env[RESTATE_INGRESS_VARIABLE] = server.ingressUrl;
  process.env[RESTATE_ADMIN_VARIABLE] = server.adminUrl;
  return async () => {
    delete process.env[RESTATE_INGRESS_VARIABLE];
    delete process.env[RESTATE_ADMIN_VARIABLE];
    await server.stop();
  };
}

export default restateGlobalSetup;
