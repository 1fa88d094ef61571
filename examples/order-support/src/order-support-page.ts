/**
 * The chat page of the order support server: the built web app (`web/`, built by Vite into
 * `dist/web`) at `/`, and the chat routes of `@durable-agents/ui` under `/sessions/:id/ui/` (behind
 * the server's session token check, like every `/sessions/:id/` route).
 *
 *   GET  /                                   the page (index.html)
 *   GET  /assets/*                           its scripts and styles
 *   POST /sessions/:id/ui/chat               post a message and stream the answer (AI SDK UI message stream)
 *   GET  /sessions/:id/ui/stream?after=      resume the stream after a position (204: nothing to resume)
 *   GET  /sessions/:id/ui/messages           the conversation as UIMessage[] and the position it ends at
 *   GET  /sessions/:id/ui/watch?after=       waits (up to 25 s) for an event after a position
 *   POST /sessions/:id/ui/approvals/:interruptId/approve | reject   { message? }
 *   POST /sessions/:id/ui/cancel             { reason?, request_id? }
 */
import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { createSessionUIHandlers, type UISessionClient } from "@durable-agents/ui/server";
import type { Env, Hono } from "hono";
import { orderSupportPolicies } from "./order-support-session.js";

export interface OrderSupportPageOptions {
  /** The built web app. Default: `web/` next to this module (`dist/web` once built). */
  readonly webDir?: string;
  /** Interval of SSE keep-alive comments. Default 15 s. */
  readonly keepAliveMs?: number;
}

/** The built page's folder next to the running module. */
export const defaultWebDir = fileURLToPath(new URL("./web/", import.meta.url));

const contentTypes: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".woff2": "font/woff2",
};

export function mountOrderSupportPage<E extends Env>(
  app: Hono<E>,
  client: UISessionClient,
  options: OrderSupportPageOptions = {},
): void {
  const webDir = normalize(options.webDir ?? defaultWebDir);
  const ui = createSessionUIHandlers({
    client,
    policies: orderSupportPolicies,
    ...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
  });
  app.all("/sessions/:id/ui/*", (c) => ui.fetch(c.req.raw));

  const file = async (relative: string, cache: string): Promise<Response | null> => {
    const path = normalize(join(webDir, relative));
    if (!path.startsWith(webDir.endsWith(sep) ? webDir : `${webDir}${sep}`)) return null;
    try {
      const body = await readFile(path);
      return new Response(body, {
        headers: {
          "content-type": contentTypes[extname(path)] ?? "application/octet-stream",
          "cache-control": cache,
        },
      });
    } catch {
      return null;
    }
  };

  app.get("/", async (c) => {
    const page = await file("index.html", "no-cache");
    if (page) return page;
    return c.text("The chat page is not built: run the example's build (pnpm build) first.", 503);
  });
  app.get("/assets/*", async (c) => {
    const asset = await file(c.req.path.slice(1), "public, max-age=31536000, immutable");
    return asset ?? c.json({ error: { code: "not_found", message: `no asset ${c.req.path}` } }, 404);
  });
}
