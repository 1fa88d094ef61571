/**
 * The order support chat page. The session (its ID and token) is in the URL's fragment, so a
 * reload, a second tab or a link opens the same conversation: `#session=<id>&token=<token>`.
 */
import { useCallback, useEffect, useState } from "react";
import { SessionPage } from "./SessionPage";

export interface SessionRef {
  readonly id: string;
  readonly token: string;
}

function readFragment(): SessionRef | null {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const id = params.get("session");
  const token = params.get("token");
  return id && token ? { id, token } : null;
}

export function App() {
  const [session, setSession] = useState<SessionRef | null>(readFragment);
  const [starting, setStarting] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const onHashChange = () => setSession(readFragment());
    window.addEventListener("hashchange", onHashChange);
    return () => window.removeEventListener("hashchange", onHashChange);
  }, []);

  const start = useCallback(async () => {
    setStarting(true);
    setError(null);
    try {
      const response = await fetch("/sessions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      const created = (await response.json()) as { session_id: string; session_token: string };
      window.location.hash = new URLSearchParams({
        session: created.session_id,
        token: created.session_token,
      }).toString();
    } catch (cause) {
      setError(`Could not start a session: ${cause instanceof Error ? cause.message : String(cause)}`);
    } finally {
      setStarting(false);
    }
  }, []);

  return (
    <div className="app">
      <header className="app-header">
        <h1>Order support</h1>
        <p className="tagline">A durable agent: reload, open a second tab or restart the server, the conversation goes on.</p>
        {session ? (
          <button type="button" className="secondary" onClick={() => void start()} disabled={starting}>
            New session
          </button>
        ) : null}
      </header>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      {session ? (
        <SessionPage key={session.id} session={session} />
      ) : (
        <main className="welcome">
          <p>
            Ask about the orders of the shop's desk: <q>look up order 1001</q>, <q>cancel order 1002</q>, or its
            warehouse (an MCP server): <q>where is the parcel of order 1001?</q>,{" "}
            <q>release the stock of order 1002</q>. A cancellation and a release wait for your approval.
          </p>
          <button type="button" onClick={() => void start()} disabled={starting}>
            Start a session
          </button>
        </main>
      )}
    </div>
  );
}
