/**
 * Serves a Hono app on a port with `@hono/node-server` and resolves once it listens.
 */
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";

export interface Listening {
  /** For example "http://127.0.0.1:8080". */
  readonly url: string;
  readonly port: number;
  readonly server: ServerType;
  /** Stops accepting connections and closes open ones (including event streams). */
  close(): Promise<void>;
}

export function listen(
  app: { fetch: (request: Request) => Response | Promise<Response> },
  options: { port: number; hostname?: string },
): Promise<Listening> {
  const hostname = options.hostname ?? "127.0.0.1";
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: options.port, hostname }, (info: AddressInfo) => {
      server.off("error", reject);
      const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        server,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            if ("closeAllConnections" in server) server.closeAllConnections();
          }),
      });
    });
    server.once("error", reject);
  });
}
