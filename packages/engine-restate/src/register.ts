/** Registering an endpoint with a Restate cluster (its admin API), as an application does at deploy time. */

/**
 * Registers (or, with `force`, the default, re-registers) the endpoint at `uri` through the admin
 * API's `POST /deployments`: Restate discovers the endpoint's services and routes their
 * invocations to it. Returns the deployment ID. Same as `restate deployments register <uri>`.
 */
export async function registerDeployment(
  adminUrl: string,
  uri: string,
  options: { force?: boolean; headers?: Readonly<Record<string, string>> } = {},
): Promise<string> {
  const response = await fetch(`${adminUrl.replace(/\/+$/, "")}/deployments`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...options.headers },
    body: JSON.stringify({ uri, force: options.force ?? true }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`Restate admin POST /deployments (${uri}): ${response.status} ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}
