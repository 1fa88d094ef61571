/** Restate's admin API, for tests and scripts: register an endpoint, query the system tables, kill invocations. */

async function admin(adminUrl: string, path: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(`${adminUrl.replace(/\/+$/, "")}${path}`, {
    ...init,
    headers: { "content-type": "application/json", accept: "application/json", ...init.headers },
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`Restate admin ${init.method ?? "GET"} ${path}: ${response.status} ${text}`);
  return text === "" ? null : JSON.parse(text);
}

export { registerDeployment } from "../register.js";

/** Runs a SQL query on Restate's system tables (`sys_invocation`, `sys_journal`, `state`, …). */
export async function queryRestate<T = Record<string, unknown>>(adminUrl: string, sql: string): Promise<T[]> {
  const answer = (await admin(adminUrl, "/query", { method: "POST", body: JSON.stringify({ query: sql }) })) as {
    rows: T[];
  };
  return answer.rows;
}

const quote = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** Kills every invocation of these services that has not completed; returns how many. */
export async function killInvocations(adminUrl: string, services: readonly string[]): Promise<number> {
  if (services.length === 0) return 0;
  const rows = await queryRestate<{ id: string }>(
    adminUrl,
    `SELECT id FROM sys_invocation WHERE target_service_name IN (${services.map(quote).join(", ")}) AND status != 'completed'`,
  );
  await Promise.all(
    rows.map((row) =>
      admin(adminUrl, `/invocations/${encodeURIComponent(row.id)}/kill`, { method: "PATCH" }).catch(() => {}),
    ),
  );
  return rows.length;
}
